package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/heldcall"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/scheduler"
	"github.com/hestia-dev/hestia/internal/store"
)

// TestDaemonKilledMidJob kills a real daemon process (kill -9) while a user
// job's run waits for the approval of a gated write, and while the machine
// is "asleep" the job misses many ticks. The next start journals the
// killed run as interrupted, runs the missed job once (not once per missed
// tick), and asks about the held write again; approved, it runs once, and
// a further restart neither asks nor runs anything again.
func TestDaemonKilledMidJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemon processes")
	}
	home := t.TempDir()
	files := filepath.Join(t.TempDir(), "files")
	os.MkdirAll(files, 0o700)
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[agent]\nfile_roots = ["+strconv.Quote(files)+"]\n"), 0o600)
	srv := llmtest.New(t,
		// The manual run proposes a gated write; the daemon dies while it waits.
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":"brief.md","content":"today"}`)),
		// The run missed during the downtime.
		llmtest.Text("Here is the briefing I missed."),
	)
	env := map[string]string{"HOME": files, "HESTIA_LLM_BASE_URL": srv.URL, "HESTIA_LLM_API_KEY": "k", "HESTIA_LLM_MODEL": "llmtest-model"}
	start := func() (*exec.Cmd, string, authtoken.Token) { return startDaemonProc(t, home, env) }
	get := func(base string, tok authtoken.Token, path string, out any) {
		apiCall(t, base, tok, "GET", path, "", out)
	}
	type card struct {
		ID       string `json:"id"`
		Tool     string `json:"tool"`
		CallID   string `json:"call_id"`
		NoExpiry bool   `json:"no_expiry"`
	}
	waitCard := func(base string, tok authtoken.Token) card {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(25 * time.Millisecond) {
			var body struct{ Approvals []card }
			get(base, tok, "/api/approvals", &body)
			if len(body.Approvals) == 1 {
				return body.Approvals[0]
			}
			if len(body.Approvals) > 1 || time.Now().After(deadline) {
				t.Fatalf("want one waiting card, have %+v", body.Approvals)
			}
		}
	}
	history := func() []scheduler.Run {
		t.Helper()
		r := run(t, home, env, "jobs", "history", "briefing", "--json")
		var h struct{ Runs []scheduler.Run }
		if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
			t.Fatalf("history: %+v", r)
		}
		return h.Runs
	}
	heldCalls := func() []heldcall.Call {
		t.Helper()
		q, err := heldcall.Open(context.Background(), filepath.Join(home, "db", "heldcalls.db"), heldcall.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		list, err := q.List(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		return list
	}

	cmd, base, tok := start()
	if r := run(t, home, env, "jobs", "add", "briefing", "--every", "10m", "--prompt", "Write today's briefing to brief.md"); r.code != 0 {
		t.Fatalf("add: %+v", r)
	}
	if r := run(t, home, env, "jobs", "run", "briefing"); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	first := waitCard(base, tok)
	if first.Tool != "write_file" || !first.NoExpiry {
		t.Fatalf("card %+v", first)
	}
	if h := heldCalls(); len(h) != 1 || h[0].State != heldcall.StateWaiting || h[0].Origin != "job:briefing" {
		t.Fatalf("held before the kill: %+v", h)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// Two hours "asleep": twelve ticks of the 10-minute job pass unseen.
	db, err := store.Open(context.Background(), filepath.Join(home, "db", "scheduler.db"), scheduler.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE jobs SET next_run = ? WHERE name = 'briefing'`, time.Now().Add(-2*time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	cmd, base, tok = start()
	var runs []scheduler.Run
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		runs = history()
		if len(runs) >= 2 && runs[0].Status == scheduler.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the missed run did not finish: %+v", runs)
		}
	}
	if len(runs) != 2 || runs[0].Trigger != scheduler.TriggerMissed || runs[1].Trigger != scheduler.TriggerManual || runs[1].Status != scheduler.StatusInterrupted {
		t.Fatalf("journal after the kill: %+v", runs)
	}
	// The held write is asked again; approved, it runs once.
	again := waitCard(base, tok)
	if again.Tool != "write_file" || !again.NoExpiry || again.ID == first.ID {
		t.Fatalf("re-asked card %+v (first %+v)", again, first)
	}
	if _, err := os.Stat(filepath.Join(files, "brief.md")); err == nil {
		t.Fatal("the write ran before it was approved")
	}
	req, _ := http.NewRequest("POST", base+"/api/approvals/"+again.ID, strings.NewReader(`{"decision":"approve"}`))
	req.Header.Set("Authorization", "Bearer "+tok.Value())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("approve: %v %v", resp, err)
	}
	resp.Body.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(25 * time.Millisecond) {
		if h := heldCalls(); len(h) == 1 && h[0].State == heldcall.StateDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("held call: %+v", heldCalls())
		}
	}
	if b, err := os.ReadFile(filepath.Join(files, "brief.md")); err != nil || string(b) != "today" {
		t.Fatalf("approved write: %q %v", b, err)
	}
	// The note lands in the chat the held call came from, which is the
	// job's chat: the killed run had recorded it, so the missed run used it too.
	chatID := heldCalls()[0].ChatID
	r := run(t, home, env, "jobs", "list", "--json")
	var jobs struct{ Jobs []scheduler.Job }
	json.Unmarshal([]byte(r.stdout), &jobs)
	for _, j := range jobs.Jobs {
		if j.Name == "briefing" && j.ChatID != chatID {
			t.Fatalf("job chat %q, held call chat %q", j.ChatID, chatID)
		}
	}
	// The note is appended just after the call is marked done: poll.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(25 * time.Millisecond) {
		var ch struct {
			Messages []struct{ Role, Content string }
		}
		get(base, tok, "/api/chats/"+chatID, &ch)
		if last := ch.Messages[len(ch.Messages)-1]; strings.Contains(last.Content, "write_file call that waited for your approval (job:briefing) is now done") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's chat does not say the held call ran: %+v", ch.Messages)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	// A clean restart: nothing is asked, run or written again.
	os.Remove(filepath.Join(files, "brief.md"))
	cmd, base, tok = start()
	if h := heldCalls(); len(h) != 1 || h[0].State != heldcall.StateDone {
		t.Fatalf("held calls after the restart: %+v", h)
	}
	var body struct{ Approvals []card }
	get(base, tok, "/api/approvals", &body)
	if len(body.Approvals) != 0 || len(history()) != 2 || len(srv.Requests()) != 2 {
		t.Fatalf("after a clean restart: cards %+v, %d runs, %d model calls", body.Approvals, len(history()), len(srv.Requests()))
	}
	if _, err := os.Stat(filepath.Join(files, "brief.md")); err == nil {
		t.Fatal("the approved write ran twice")
	}
	var listed struct{ Calls []heldcall.Call }
	get(base, tok, "/api/held-calls?state=done", &listed)
	if len(listed.Calls) != 1 || listed.Calls[0].Tool != "write_file" || listed.Calls[0].Origin != "job:briefing" {
		t.Fatalf("GET /api/held-calls: %+v", listed)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

// startDaemonProc starts a real daemon process (the test binary re-run as
// TestHelperServe) on home and waits until it listens.
func startDaemonProc(t *testing.T, home string, env map[string]string) (*exec.Cmd, string, authtoken.Token) {
	t.Helper()
	os.Remove(filepath.Join(home, daemonaddr.FileName))
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$")
	cmd.Env = append(os.Environ(), "HESTIA_HELPER_SERVE=1", "HESTIA_HOME="+home, "HESTIA_SERVER_ADDR=127.0.0.1:0")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rec, err := daemonaddr.Read(filepath.Join(home, daemonaddr.FileName))
		if err == nil {
			tok, err := authtoken.Load(filepath.Join(home, "auth-token"))
			if err != nil {
				t.Fatal(err)
			}
			return cmd, rec.BaseURL(), tok
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start")
		}
	}
}

// apiCall sends one authenticated request and decodes a 2xx answer.
func apiCall(t *testing.T, base string, tok authtoken.Token, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok.Value())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// TestDaemonKilledMidWatchDelivery kills a real daemon (kill -9) while a
// fired watch event is being delivered: its granted call has run (claimed
// first) and the model is composing the message. After the restart the
// event is delivered exactly once, the model's repeat of the granted call
// is refused as claimed before, and a further restart changes nothing.
func TestDaemonKilledMidWatchDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemon processes")
	}
	home := t.TempDir()
	files := filepath.Join(t.TempDir(), "files")
	os.MkdirAll(files, 0o700)
	watched, out := filepath.Join(files, "watched.txt"), filepath.Join(files, "out.txt")
	os.WriteFile(watched, []byte("v1"), 0o600)
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[agent]\nfile_roots = ["+strconv.Quote(files)+"]\n[watch]\ninterval = \"1s\"\n"), 0o600)
	write := llmtest.Call("g1", "write_file", `{"path":`+strconv.Quote(out)+`,"content":"seen"}`)
	srv := llmtest.New(t,
		llmtest.ToolCalls(write),
		// The composed message never comes: the daemon is killed first.
		llmtest.Turn{Text: []string{"too late"}, FirstByteDelay: time.Minute},
		// After the restart the model tries the granted call again.
		llmtest.ToolCalls(write),
		llmtest.Text("The file changed; I noted it."),
	)
	env := map[string]string{"HOME": files, "HESTIA_LLM_BASE_URL": srv.URL, "HESTIA_LLM_API_KEY": "k", "HESTIA_LLM_MODEL": "llmtest-model"}
	cmd, base, tok := startDaemonProc(t, home, env)
	var w struct{ ID string }
	apiCall(t, base, tok, "POST", "/api/watches", `{"source":"file","ref":`+strconv.Quote(watched)+`,"instruction":"when it changes, write seen to out.txt","expires_at":"`+time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339)+`",
		"rules":[{"id":"chg","event":"file.changed","grants":[{"tool":"write_file","args":{"path":{"exact":`+strconv.Quote(out)+`},"content":{"exact":"seen"}}}]}]}`, &w)
	// Replaced whole (write and rename), as editors save: os.WriteFile
	// truncates first, and a poll between the truncate and the write sees
	// an empty file, a second change with its own event and model turns.
	os.WriteFile(watched+".new", []byte("v2, longer"), 0o600)
	os.Rename(watched+".new", watched)
	// Wait until the granted write ran and the model is composing.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(out)
		if err == nil && len(srv.Requests()) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the granted call did not run (%d model requests)", len(srv.Requests()))
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	os.Remove(out) // a repeated call would write it again

	type detail struct {
		Events       int
		Claims       []struct{ Tool, State string }
		RecentEvents []struct{ Type, State, Message string } `json:"recent_events"`
	}
	cmd, base, tok = startDaemonProc(t, home, env)
	var d detail
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(25 * time.Millisecond) {
		apiCall(t, base, tok, "GET", "/api/watches/"+w.ID, "", &d)
		if len(d.RecentEvents) == 1 && d.RecentEvents[0].Message != "" && d.RecentEvents[0].State == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event was not delivered after the restart: %+v", d)
		}
	}
	if d.RecentEvents[0].Message != "The file changed; I noted it." || len(d.Claims) != 1 || d.Claims[0].Tool != "write_file" {
		t.Fatalf("after the restart: %+v", d)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the granted call ran twice")
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model requests %d, want 4", len(reqs))
	}
	last := reqs[3].Messages[len(reqs[3].Messages)-1]
	if !strings.Contains(last.Content, "NOT run again") {
		t.Fatalf("the repeated granted call was not refused: %+v", last)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	// A clean restart delivers and runs nothing more.
	cmd, base, tok = startDaemonProc(t, home, env)
	apiCall(t, base, tok, "GET", "/api/watches/"+w.ID, "", &d)
	if len(d.RecentEvents) != 1 || len(d.Claims) != 1 || len(srv.Requests()) != 4 {
		t.Fatalf("after a clean restart: %+v, %d model requests", d, len(srv.Requests()))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}
