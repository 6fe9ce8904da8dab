package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// daemonEnv starts `hestia serve` in-process on a free port against a
// scripted model server and returns the env shared by client commands.
func daemonEnv(t *testing.T, turns ...llmtest.Turn) (home string, env map[string]string, srv *llmtest.Server) {
	t.Helper()
	return daemonEnvWith(t, true, turns...)
}

// daemonEnvWith starts a daemon; without withModel no model is configured.
func daemonEnvWith(t *testing.T, withModel bool, turns ...llmtest.Turn) (home string, env map[string]string, srv *llmtest.Server) {
	t.Helper()
	home = t.TempDir()
	srv = llmtest.New(t, turns...)
	files := filepath.Join(t.TempDir(), "files")
	if err := os.MkdirAll(files, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "[agent]\nfile_roots = [" + strconv.Quote(files) + "]\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env = map[string]string{
		// The daemon takes a free port itself (a port picked by the test
		// and freed again can be taken by any connection meanwhile); its
		// address is read back from the record it writes.
		"HESTIA_SERVER_ADDR":  "127.0.0.1:0",
		"HESTIA_LLM_BASE_URL": srv.URL, "HESTIA_LLM_API_KEY": "k", "HESTIA_LLM_MODEL": "llmtest-model",
		"HOME": files,
	}
	if !withModel {
		delete(env, "HESTIA_LLM_BASE_URL")
		delete(env, "HESTIA_LLM_MODEL")
		delete(env, "HESTIA_LLM_API_KEY")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	serveEnv := maps.Clone(env)
	go func() {
		var out, errb bytes.Buffer
		e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Version: "test", Getenv: func(k string) string {
			if k == "HESTIA_HOME" {
				return home
			}
			return serveEnv[k]
		}}
		code := Main(ctx, []string{"--log-level", "warn", "serve"}, e)
		done <- result{code, out.String(), errb.String()}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case r := <-done:
			if r.code != 0 {
				t.Errorf("serve exited %d: %s", r.code, r.stderr)
			}
		case <-time.After(15 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The record is written once the listener is up.
		rec, rerr := daemonaddr.Read(filepath.Join(home, daemonaddr.FileName))
		_, terr := os.Stat(filepath.Join(home, "auth-token"))
		if rerr == nil && terr == nil {
			if conn, err := net.Dial("tcp", rec.Addr); err == nil {
				conn.Close()
				env["HESTIA_SERVER_ADDR"] = rec.Addr
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return home, env, srv
}

func TestChatOnceAndPolicyAndAudit(t *testing.T) {
	home, env, srv := daemonEnv(t,
		llmtest.ToolCalls(llmtest.Call("w", "write_file", `{"path":"x.txt","content":"hi"}`)),
		llmtest.Text("I could not write it."),
		llmtest.Fail(401, `{"error":{"message":"bad key"}}`),
	)
	// A refused write makes --once fail and say so (issue 33 item 7), even
	// though the model's reply is fine.
	r := run(t, home, env, "chat", "--once", "write x.txt", "--json")
	if r.code != 1 || !strings.Contains(r.stderr, "write_file was refused (no_approver)") {
		t.Fatalf("chat --once with a refused write: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	var res turnResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || !res.OK || res.Text != "I could not write it." {
		t.Fatalf("result %q (%v)", r.stdout, err)
	}
	if _, err := os.Stat(filepath.Join(env["HOME"], "x.txt")); err == nil {
		t.Fatal("--once ran a gated write without approval")
	}
	if sent := srv.Requests()[1].Messages; !strings.Contains(sent[len(sent)-1].Content, "nobody is attached") {
		t.Errorf("model was not told the write was denied: %+v", sent[len(sent)-1])
	}
	// A failed turn exits non-zero.
	if r := run(t, home, env, "chat", "--once", "again", "--chat", res.ChatID); r.code != 1 || !strings.Contains(r.stderr, "turn failed") {
		t.Errorf("failed turn: exit %d, stderr %q", r.code, r.stderr)
	}
	// Policy dry run.
	r = run(t, home, env, "policy", "test", "write_file", `{"path":"notes.md","content":"x"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "decision: gate") || !strings.Contains(r.stdout, "threshold") {
		t.Errorf("policy test: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, home, env, "policy", "test", "read_file", `{"path":"/etc/shadow"}`, "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"decision":"deny"`) || !strings.Contains(r.stdout, "path_policy") {
		t.Errorf("policy test sensitive: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := run(t, home, env, "policy", "add", "--tool", "write_file", "--decision", "deny", "--note", "never"); r.code != 0 {
		t.Errorf("policy add: %d %q", r.code, r.stderr)
	}
	if r := run(t, home, env, "policy", "test", "write_file", `{"path":"notes.md","content":"x"}`); !strings.Contains(r.stdout, "decision: deny") || !strings.Contains(r.stdout, "rule:") {
		t.Errorf("rule not applied: %q", r.stdout)
	}
	// Audit lists the turn and verifies.
	r = run(t, home, env, "audit", "--limit", "100")
	for _, want := range []string{"message.user", "approval.resolved", "policy.decision"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("audit output lacks %s:\n%s", want, r.stdout)
		}
	}
	if r := run(t, home, env, "audit", "verify"); r.code != 0 || !strings.Contains(r.stdout, "hash chain intact") {
		t.Errorf("audit verify: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestChatInteractiveApproval(t *testing.T) {
	home, env, _ := daemonEnv(t,
		llmtest.ToolCalls(llmtest.Call("w", "write_file", `{"path":"y.txt","content":"from chat"}`)),
		llmtest.Text("Written."),
	)
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader("please write y.txt\ny\n"), Stdout: &out, Stderr: &errb, Version: "test", Getenv: func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return env[k]
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if code := Main(ctx, []string{"chat"}, e); code != 0 {
		t.Fatalf("chat exit %d: %s %s", code, out.String(), errb.String())
	}
	b, err := os.ReadFile(filepath.Join(env["HOME"], "y.txt"))
	if err != nil || string(b) != "from chat" {
		t.Fatalf("approved write did not happen (%v); output:\n%s", err, out.String())
	}
	for _, want := range []string{"approval needed", "Written."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestChatInteractiveQuestionAndDeny(t *testing.T) {
	home, env, srv := daemonEnv(t,
		llmtest.ToolCalls(llmtest.Call("q", "ask_user", `{"question":"Which folder?","choices":["a","b"]}`)),
		llmtest.ToolCalls(llmtest.Call("w", "write_file", `{"path":"z.txt","content":"x"}`)),
		llmtest.Text("Understood."),
	)
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader("go\nb\nn\nnot today\n"), Stdout: &out, Stderr: &errb, Version: "test", Getenv: func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return env[k]
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if code := Main(ctx, []string{"chat"}, e); code != 0 {
		t.Fatalf("chat exit %d: %s %s", code, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(env["HOME"], "z.txt")); err == nil {
		t.Fatal("denied write happened")
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests; output:\n%s", len(reqs), out.String())
	}
	last := reqs[2].Messages
	if !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "The user answered: b") || !strings.Contains(last[len(last)-1].Content, "not today") {
		t.Errorf("answers did not reach the model:\n%+v\n%+v", reqs[1].Messages, last)
	}
}
