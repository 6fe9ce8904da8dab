package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMailCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp", ".Sent/cur", ".Sent/new"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: Ann <ann@x.org>\nTo: me@x.org\nSubject: Solar panels\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nThe installer comes on Tuesday.\n"), 0o644)
	os.WriteFile(filepath.Join(md, ".Sent", "cur", "2:2,S"), []byte("Message-ID: <b@x>\nFrom: me@x.org\nTo: ann@x.org\nSubject: Re: Solar panels\nIn-Reply-To: <a@x>\nDate: Mon, 5 Jan 2026 11:00:00 +0000\n\nGreat, thanks.\n"), 0o644)

	// A Maildir file starting with an mbox envelope line (SpamAssassin corpus shape).
	os.WriteFile(filepath.Join(md, "cur", "3:2,S"), []byte("From bounce@list.example  Fri Aug 31 13:39:16 2001\nMessage-ID: <c@x>\nFrom: Renter <Renter989@Example.COM>\nTo: me@x.org\nSubject: offer\nDate: Wed, 29 Aug 2001 04:20:43 -0800\n\nCheap solar offer.\n"), 0o644)

	r := run(t, home, nil, "mail", "import", "--quiet", md)
	if r.code != 0 || !strings.Contains(r.stdout, "3 new messages") {
		t.Fatalf("import: %+v", r)
	}
	r = run(t, home, nil, "mail", "import", "--quiet", "--json", md)
	var p struct{ Added, Skipped int }
	if json.Unmarshal([]byte(r.stdout), &p); p.Added != 0 || p.Skipped != 3 {
		t.Errorf("re-import: %s", r.stdout)
	}
	r = run(t, home, nil, "mail", "search", "installer", "--json")
	var sr struct {
		Messages []struct {
			ID       int64
			Subject  string
			ThreadID int64 `json:"thread_id"`
		}
		Mode string
	}
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || len(sr.Messages) != 1 || sr.Messages[0].Subject != "Solar panels" {
		t.Fatalf("search: %+v %v", r, err)
	}
	id := sr.Messages[0].ID
	r = run(t, home, nil, "mail", "search", "--count", "--from", "renter")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "1" {
		t.Errorf("count from renter: %+v", r)
	}
	r = run(t, home, nil, "mail", "search", "solar", "--count")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "3" {
		t.Errorf("count solar: %+v", r)
	}
	r = run(t, home, nil, "mail", "search", "--from", "Renter989")
	if r.code != 0 || !strings.Contains(r.stdout, "offer") || !strings.Contains(r.stdout, "2001-08-29") {
		t.Errorf("envelope-line message: %+v", r)
	}
	r = run(t, home, nil, "mail", "search", "--role", "sent", "--per-message")
	if r.code != 0 || !strings.Contains(r.stdout, "Re: Solar panels") || strings.Contains(r.stdout, "  Solar panels") {
		t.Errorf("browse sent: %+v", r)
	}
	r = run(t, home, nil, "mail", "read", jsonInt(id))
	if r.code != 0 || !strings.Contains(r.stdout, "installer comes on Tuesday") || !strings.Contains(r.stdout, "body full") {
		t.Errorf("read: %+v", r)
	}
	r = run(t, home, nil, "mail", "thread", jsonInt(id), "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"count": 2`) {
		t.Errorf("thread: %+v", r)
	}
	r = run(t, home, nil, "mail", "ops", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"operations": []`) {
		t.Errorf("ops: %+v", r)
	}
	for _, bad := range [][]string{{"mail"}, {"mail", "read", "abc"}, {"mail", "frob"}, {"mail", "search", "--after", "soon"}} {
		if r := run(t, home, nil, bad...); r.code == 0 || r.stderr == "" {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	if r := run(t, home, nil, "mail", "read", "999"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("missing: %+v", r)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestMailSearchAsksTheRunningDaemon: with the daemon up, a free-text CLI
// search is answered by it (hybrid, its vectors loaded); without one the
// CLI ranks lexically on its own and loads no vectors.
func TestMailSearchAsksTheRunningDaemon(t *testing.T) {
	t.Parallel()
	md := filepath.Join(t.TempDir(), "Maildir")
	os.MkdirAll(filepath.Join(md, "cur"), 0o755)
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: Ann <ann@x.org>\nTo: me@x.org\nSubject: Solar panels\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nThe installer comes on Tuesday.\n"), 0o644)

	alone := t.TempDir()
	if r := run(t, alone, nil, "mail", "import", "--quiet", md); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	if r := run(t, alone, nil, "mail", "embed"); r.code != 0 {
		t.Fatalf("embed: %+v", r)
	}
	r := run(t, alone, nil, "mail", "search", "installer", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"mode": "lexical"`) || !strings.Contains(r.stdout, "Solar panels") {
		t.Errorf("without a daemon: %+v", r)
	}

	home, env, _ := daemonEnv(t)
	if r := run(t, home, env, "mail", "import", "--quiet", md); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	if r := run(t, home, env, "mail", "embed"); r.code != 0 {
		t.Fatalf("embed: %+v", r)
	}
	r = run(t, home, env, "mail", "search", "installer", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"mode": "hybrid"`) || !strings.Contains(r.stdout, "Solar panels") {
		t.Errorf("with the daemon: %+v", r)
	}
	// Date filters too: the CLI sends the instant its local day begins.
	r = run(t, home, env, "mail", "search", "installer", "--after", "2026-01-01", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"mode": "hybrid"`) {
		t.Errorf("dated search: %+v", r)
	}
}
