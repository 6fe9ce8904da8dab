package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionFlagAndCommand(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		r := run(t, home, nil, args...)
		if r.code != 0 || r.stdout != "hestia test\n" {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

// Every command answers -h with its summary and usage on stdout, exit 0,
// without touching a daemon or the stores.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "never-created")
	for _, c := range commands() {
		for _, h := range []string{"-h", "--help"} {
			r := run(t, home, nil, c.name, h)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "hestia "+c.name+": "+c.summary+"\n") {
				t.Errorf("%s %s: code %d stdout %q stderr %q", c.name, h, r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout, `"-h"`) || strings.Contains(r.stdout, "daemon has not been started") {
				t.Errorf("%s %s treated -h as an argument: %q", c.name, h, r.stdout)
			}
		}
	}
	if r := run(t, home, nil, "mail", "-h"); !strings.Contains(r.stdout, "import PATH") || !strings.Contains(r.stdout, "mailboxes") {
		t.Errorf("mail -h lacks the subcommands: %q", r.stdout)
	}
	if r := run(t, home, nil, "backup", "-h"); !strings.Contains(r.stdout, "-output") {
		t.Errorf("backup -h lacks its flags: %q", r.stdout)
	}
	if _, err := os.Stat(home); err == nil {
		t.Error("help created the home directory")
	}
}

// Into a pipe or log, the import's progress is one final line, not a
// stream of carriage-return redraws.
func TestImportProgressOnceWhenNotATerminal(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	for i, s := range []string{"one", "two", "three"} {
		os.WriteFile(filepath.Join(md, "cur", s+":2,S"), []byte("Message-ID: <"+s+"@x>\nFrom: a@x.org\nSubject: "+s+"\nDate: Mon, 5 Jan 2026 1"+string(rune('0'+i))+":00:00 +0000\n\nbody\n"), 0o644)
	}
	r := run(t, home, nil, "mail", "import", md)
	if r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	if strings.Contains(r.stderr, "\r") || strings.Count(r.stderr, "files,") != 1 || !strings.Contains(r.stderr, "3/3 files, 3 new") {
		t.Errorf("progress into a non-terminal: %q", r.stderr)
	}
}

// Without a model, `hestia chat` says how to configure one and creates no
// chat it could not run; `serve` says where to open the UI and warns.
func TestChatWithoutAModel(t *testing.T) {
	t.Parallel()
	home, env, _ := daemonEnvWith(t, false)
	r := run(t, home, env, "chat", "--once", "hello")
	if r.code != 1 || !strings.Contains(r.stderr, "no model is configured") || !strings.Contains(r.stderr, "HESTIA_LLM_BASE_URL") {
		t.Fatalf("chat without a model: %+v", r)
	}
	r = run(t, home, env, "chat", "--once", "hello")
	var chats struct {
		Chats []any `json:"chats"`
	}
	c, err := (&Env{Getenv: func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return env[k]
	}}).daemon()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Do(context.Background(), "GET", "/api/chats", nil, &chats); err != nil || len(chats.Chats) != 0 {
		t.Errorf("chats created without a model: %v %v", chats.Chats, err)
	}
}
