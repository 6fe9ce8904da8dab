package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/scheduler"
)

// TestBuiltinJobs: the daemon's periodic work is on the scheduler, so
// `hestia jobs list` shows it and a manual run (what `hestia jobs run NAME`
// sends) does the work: reconcile picks up a new maildir message, the
// promoter writes its wiki note, a failing IMAP sync is journaled with its
// error, the Action Center scans.
func TestBuiltinJobs(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("d", "record_mail_knowledge", `{"durable":true,"categories":["commitment"],"summary":"The roofer starts on 1 March; pay 40% upfront.","facts":["Roof work starts 1 March"],"commitments":["Pay 40% upfront"],"people":["Lena Park"],"organisations":["Roofs Ltd"],"attachments":[]}`)),
	)
	home := t.TempDir()
	maildir := filepath.Join(t.TempDir(), "Mail")
	for _, d := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(maildir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("x"), 0o600)
	a := testApp(t, home)
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Mail.Sources = []string{maildir}
	a.Config.Mail.Watch = false // reconcile, not the watcher, must find the new file
	// Port 1 on loopback refuses connections: the sync job fails, visibly.
	a.Config.Mail.Accounts = []config.MailAccount{{Name: "Work Mail", Address: "me@example.org", IMAPHost: "127.0.0.1", IMAPPort: 1, IMAPSecurity: "none", PasswordFile: pw}}
	base, stop := start(t, a)
	defer stop()
	call := func(method, path string, out any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if out != nil {
			json.Unmarshal(b, out)
		}
	}
	var list struct{ Jobs []scheduler.Job }
	call("GET", "/api/jobs", &list)
	builtin := map[string]bool{}
	for _, j := range list.Jobs {
		builtin[j.Name] = j.Builtin
	}
	for _, name := range []string{"mail.reconcile", "mail.imap.work-mail", "mail.embed", "mail.ops", "actions.scan", "wiki.promote"} {
		if !builtin[name] {
			t.Errorf("built-in job %s missing from %v", name, builtin)
		}
	}
	// runJob starts a run the way the CLI does and waits for its journal row.
	runJob := func(name string) scheduler.Run {
		t.Helper()
		var started struct {
			Run int64 `json:"run_id"`
		}
		call("POST", "/api/jobs/"+name+"/run", &started)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var h struct{ Runs []scheduler.Run }
			call("GET", "/api/jobs/"+name+"/runs", &h)
			if len(h.Runs) > 0 && h.Runs[0].Status != scheduler.StatusRunning && h.Runs[0].Trigger == scheduler.TriggerManual {
				return h.Runs[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s did not finish: %+v", name, h.Runs)
			}
		}
	}

	raw := "Message-ID: <roof@roofs.example>\nFrom: Lena Park <lena@roofs.example>\nTo: me@example.org\nSubject: Roof contract signed\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nHi, the contract is signed. We start on 1 March; please pay 40% upfront.\nLena\n"
	if err := os.WriteFile(filepath.Join(maildir, "new", "1767607200.1.host"), []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runJob("mail.reconcile"); r.Status != scheduler.StatusOK {
		t.Fatalf("reconcile run %+v", r)
	}
	ms, err := a.OpenMailStore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := ms.DB().QueryRow(`SELECT count(*) FROM messages WHERE subject = 'Roof contract signed'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("reconcile did not mirror the new message: %d %v", n, err)
	}
	if r := runJob("wiki.promote"); r.Status != scheduler.StatusOK {
		t.Fatalf("promote run %+v", r)
	}
	notes, _ := filepath.Glob(filepath.Join(home, "wiki", "sources", "mail", "thread-*.md"))
	if len(notes) != 1 {
		t.Fatalf("promotion notes %v", notes)
	}
	if b, _ := os.ReadFile(notes[0]); !strings.Contains(string(b), "pay 40% upfront") {
		t.Fatalf("note: %s", b)
	}
	if r := runJob("mail.imap.work-mail"); r.Status != scheduler.StatusError || !strings.Contains(r.Error, "Work Mail") {
		t.Fatalf("a failing sync must be journaled as an error naming the account: %+v", r)
	}
	if r := runJob("actions.scan"); r.Status != scheduler.StatusOK {
		t.Fatalf("scan run %+v", r)
	}
	if r := runJob("mail.embed"); r.Status != scheduler.StatusOK {
		t.Fatalf("embed run %+v", r)
	}
	if len(up.ChatRequests()) != 1 {
		t.Fatalf("model calls %d, want the one promotion decision", len(up.ChatRequests()))
	}
	// A folder `hestia mail import` registered is rescanned by the same
	// job: its new file is mirrored, its deleted one leaves the mirror.
	imported := filepath.Join(t.TempDir(), "Imported")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(imported, d), 0o700)
	}
	gone := filepath.Join(imported, "cur", "1:2,S")
	os.WriteFile(gone, []byte("Message-ID: <old@x>\nFrom: a@x.org\nSubject: Old imported\nDate: Mon, 5 Jan 2026 09:00:00 +0000\n\nold\n"), 0o600)
	if _, err := ms.Import(context.Background(), imported, mail.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.AddSource(context.Background(), imported, ""); err != nil {
		t.Fatal(err)
	}
	os.Remove(gone)
	os.WriteFile(filepath.Join(imported, "new", "2"), []byte("Message-ID: <new@x>\nFrom: a@x.org\nSubject: New imported\nDate: Mon, 5 Jan 2026 09:00:00 +0000\n\nnew\n"), 0o600)
	if r := runJob("mail.reconcile"); r.Status != scheduler.StatusOK {
		t.Fatalf("reconcile run %+v", r)
	}
	var live string
	ms.DB().QueryRow(`SELECT group_concat(subject) FROM messages WHERE subject LIKE '% imported' AND deleted_at IS NULL`).Scan(&live)
	if live != "New imported" {
		t.Errorf("registered source after rescan: live %q, want only the new file", live)
	}
}
