package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/store"
)

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, home string, extraEnv map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Version: "test",
		Getenv: func(k string) string {
			if k == "HESTIA_HOME" {
				return home
			}
			return extraEnv[k]
		},
	}
	code := Main(context.Background(), args, env)
	return result{code, out.String(), errb.String()}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"backup"}, "--output DIR is required"},
		{[]string{"backup", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"config"}, "usage: hestia config show"},
		{[]string{"config", "show", "extra"}, `unexpected argument "extra"`},
		{[]string{"restore"}, "--from DIR is required"},
		{[]string{"--log-level", "loud", "config", "show"}, "log.level"},
	}
	for _, tc := range cases {
		r := run(t, home, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: code %d stderr %q, want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if r := run(t, home, nil, "help"); r.code != 0 || !strings.Contains(r.stdout, "serve") {
		t.Errorf("help: %+v", r)
	}
}

func TestConfigShowMasksSecrets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[log]\nlevel = \"debug\"\n"), 0o600)
	r := run(t, home, map[string]string{"HESTIA_LLM_API_KEY": "sk-live-abcdef123456"}, "config", "show")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if strings.Contains(r.stdout, "sk-live") || !strings.Contains(r.stdout, `api_key = "********"`) || !strings.Contains(r.stdout, `level = "debug"`) {
		t.Fatalf("output:\n%s", r.stdout)
	}
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[log]\nlevle = \"debug\"\n"), 0o600)
	r = run(t, home, nil, "config", "show")
	if r.code != 1 || !strings.Contains(r.stderr, "log.levle") {
		t.Fatalf("unknown key: %+v", r)
	}
}

func TestDoctorFailsOnBrokenStore(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(home, "db", "chats.db"), store.Schema{Name: "chats", Migrations: []string{"CREATE TABLE t(x)"}})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := run(t, home, nil, "doctor", "--json")
	if r.code != 0 {
		t.Fatalf("healthy home: %+v", r)
	}
	var rep struct {
		OK     bool
		Checks []struct{ Name, Status string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.OK {
		t.Fatalf("json: %v %s", err, r.stdout)
	}
	os.WriteFile(filepath.Join(home, "db", "mail.db"), bytes.Repeat([]byte("not sqlite"), 500), 0o600)
	r = run(t, home, nil, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL  store.mail") || !strings.Contains(r.stdout, "OK    store.chats") {
		t.Fatalf("broken store: %+v", r)
	}
}

func TestBackupAndRestoreCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(home, "db", "chats.db"), store.Schema{Name: "chats", Migrations: []string{"CREATE TABLE t(x)"}})
	if err != nil {
		t.Fatal(err)
	}
	db.ExecContext(ctx, "INSERT INTO t VALUES ('kept')")
	defer db.Close()
	out := filepath.Join(t.TempDir(), "bk")
	r := run(t, home, nil, "backup", "--output", out)
	if r.code != 0 || !strings.Contains(r.stdout, "backed up 1 stores") {
		t.Fatalf("backup: %+v", r)
	}
	if r := run(t, home, nil, "backup", "--output", out); r.code != 1 || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("second backup into same dir: %+v", r)
	}
	if r := run(t, home, nil, "restore", "--from", out); r.code != 1 || !strings.Contains(r.stderr, "already holds") {
		t.Fatalf("restore over live home: %+v", r)
	}
	fresh := t.TempDir()
	if r := run(t, fresh, nil, "restore", "--from", out); r.code != 0 {
		t.Fatalf("restore: %+v", r)
	}
	cp, err := store.OpenExisting(ctx, filepath.Join(fresh, "db", "chats.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	var v string
	if err := cp.QueryRow("SELECT x FROM t").Scan(&v); err != nil || v != "kept" {
		t.Fatalf("restored row: %q %v", v, err)
	}
}

func TestPairNeedsDaemon(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), nil, "pair")
	if r.code != 1 || !strings.Contains(r.stderr, "hestia serve") {
		t.Fatalf("%+v", r)
	}
}

// Flags after positional arguments are flags (issue 34 item 4); after "--"
// everything is an argument.
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	os.WriteFile(filepath.Join(md, "cur", "one:2,S"), []byte("Message-ID: <one@x>\nFrom: a@x.org\nSubject: one\n\nbody\n"), 0o644)
	r := run(t, home, nil, "mail", "import", md, "--json", "--once")
	if r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), "{") {
		t.Fatalf("mail import PATH --json: %+v", r)
	}
	r = run(t, home, nil, "mail", "import", "--once", "--", md, "--json")
	if r.code != 2 || !strings.Contains(r.stderr, `unexpected argument "--json"`) {
		t.Errorf("after --, --json must be an argument: %+v", r)
	}
	r = run(t, home, nil, "mail", "import", md, "--nope")
	if r.code != 2 || !strings.Contains(r.stderr, "flag provided but not defined: -nope") {
		t.Errorf("an unknown trailing flag must be named: %+v", r)
	}
}
