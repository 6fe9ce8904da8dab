package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// TestHelperServe is not a test: TestApprovalOrphanedByKill re-executes the
// test binary with HESTIA_HELPER_SERVE=1 to run a real daemon process it
// can kill -9.
func TestHelperServe(t *testing.T) {
	if os.Getenv("HESTIA_HELPER_SERVE") != "1" {
		t.Skip("helper process only")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	env := &Env{Stdin: strings.NewReader(""), Stdout: os.Stdout, Stderr: os.Stderr, Version: "test", Getenv: os.Getenv}
	os.Exit(Main(ctx, []string{"--log-level", "warn", "serve"}, env))
}

// An approval pending when the daemon is killed is closed at the next
// start: the audit trail gets approval.resolved (reason daemon_restart)
// and the transcript the NOT-done result, shown as expired.
func TestApprovalOrphanedByKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemon processes")
	}
	home := t.TempDir()
	files := filepath.Join(t.TempDir(), "files")
	os.MkdirAll(files, 0o700)
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[agent]\nfile_roots = ["+strconv.Quote(files)+"]\napproval_timeout = \"10m\"\n"), 0o600)
	srv := llmtest.New(t, llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":"x.txt","content":"hi"}`)))
	start := func() (*exec.Cmd, string, authtoken.Token) {
		t.Helper()
		os.Remove(filepath.Join(home, daemonaddr.FileName))
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$")
		cmd.Env = append(os.Environ(), "HESTIA_HELPER_SERVE=1", "HESTIA_HOME="+home, "HOME="+files, "HESTIA_SERVER_ADDR=127.0.0.1:0",
			"HESTIA_LLM_BASE_URL="+srv.URL, "HESTIA_LLM_API_KEY=k", "HESTIA_LLM_MODEL=llmtest-model")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
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
	call := func(base string, tok authtoken.Token, method, path, body string, out any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %s", method, path, resp.Status)
		}
		if out != nil {
			json.NewDecoder(resp.Body).Decode(out)
		}
	}

	cmd, base, tok := start()
	// An attached approver (an open event stream) keeps the request pending.
	req, _ := http.NewRequest("GET", base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Value())
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
		}
	}()
	var c struct{ ID string }
	call(base, tok, "POST", "/api/chats", `{}`, &c)
	call(base, tok, "POST", "/api/chats/"+c.ID+"/messages", `{"text":"write x.txt"}`, nil)
	var pending []map[string]any
	for deadline := time.Now().Add(20 * time.Second); len(pending) == 0; time.Sleep(20 * time.Millisecond) {
		var body struct {
			Approvals []map[string]any `json:"approvals"`
		}
		call(base, tok, "GET", "/api/approvals", "", &body)
		pending = body.Approvals
		if time.Now().After(deadline) {
			t.Fatal("no approval became pending")
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	stream.Body.Close()

	cmd, base, tok = start()
	var audit struct {
		Events []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	call(base, tok, "GET", "/api/audit?type=approval.resolved", "", &audit)
	found := false
	for _, e := range audit.Events {
		if strings.Contains(string(e.Data), `"daemon_restart"`) && strings.Contains(string(e.Data), pending[0]["id"].(string)) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no approval.resolved with reason daemon_restart for %v: %+v", pending[0]["id"], audit.Events)
	}
	var chat struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
			Tool       *struct {
				Decision string `json:"decision"`
			} `json:"tool"`
		} `json:"messages"`
	}
	call(base, tok, "GET", "/api/chats/"+c.ID, "", &chat)
	last := chat.Messages[len(chat.Messages)-1]
	if last.Role != "tool" || last.ToolCallID != "w1" || last.Tool == nil || last.Tool.Decision != "expired" || !strings.HasPrefix(last.Content, "NOT done") {
		t.Fatalf("transcript does not end with the expired result: %+v", chat.Messages)
	}
	if _, err := os.Stat(filepath.Join(files, "x.txt")); err == nil {
		t.Fatal("the write ran")
	}
	// A second start closes nothing twice.
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	cmd, base, tok = start()
	call(base, tok, "GET", "/api/audit?type=approval.resolved", "", &audit)
	n := 0
	for _, e := range audit.Events {
		if strings.Contains(string(e.Data), "daemon_restart") {
			n++
		}
	}
	call(base, tok, "GET", "/api/chats/"+c.ID, "", &chat)
	if n != 1 || len(chat.Messages) != 3 {
		t.Errorf("after a clean restart: %d daemon_restart resolutions, %d messages; want 1 and 3", n, len(chat.Messages))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}
