package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMailImportRegistersSource: importing a folder registers it (and
// says so); --once copies without registering.
func TestMailImportRegistersSource(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	md := filepath.Join(t.TempDir(), "Maildir")
	once := filepath.Join(t.TempDir(), "Once")
	for _, root := range []string{md, once} {
		for _, d := range []string{"cur", "new", "tmp"} {
			os.MkdirAll(filepath.Join(root, d), 0o755)
		}
	}
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: ann@x.org\nTo: me@x.org\nSubject: hi\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nbody\n"), 0o644)
	os.WriteFile(filepath.Join(once, "cur", "2:2,S"), []byte("Message-ID: <b@x>\nFrom: bo@x.org\nTo: me@x.org\nSubject: yo\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nbody\n"), 0o644)
	r := run(t, home, nil, "mail", "import", "--quiet", md)
	if r.code != 0 || !strings.Contains(r.stdout, "is now a mail source") {
		t.Fatalf("import: %+v", r)
	}
	r = run(t, home, nil, "mail", "import", "--quiet", "--once", once)
	if r.code != 0 || strings.Contains(r.stdout, "mail source") {
		t.Fatalf("import --once: %+v", r)
	}
	r = run(t, home, nil, "mail", "sources")
	if r.code != 0 || !strings.Contains(r.stdout, md) || strings.Contains(r.stdout, once) {
		t.Fatalf("sources: %+v", r)
	}
	if r = run(t, home, nil, "mail", "sources", "remove", md); r.code != 0 {
		t.Fatalf("sources remove: %+v", r)
	}
	if r = run(t, home, nil, "mail", "sources"); strings.Contains(r.stdout, md) {
		t.Errorf("removed source still listed: %+v", r)
	}
	if r = run(t, home, nil, "mail", "sources", "remove", md); r.code == 0 {
		t.Errorf("removing an unknown source succeeded: %+v", r)
	}
}

// TestMailSearchOperators: `hestia mail search from:X` filters by sender
// with the parser mail watches share; a bad operator value is refused.
func TestMailSearchOperators(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: anna@x.org\nTo: me@x.org\nSubject: roof\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nquote\n"), 0o644)
	os.WriteFile(filepath.Join(md, "cur", "2:2,S"), []byte("Message-ID: <b@x>\nFrom: bo@x.org\nTo: me@x.org\nSubject: roof from anna\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nquote\n"), 0o644)
	if r := run(t, home, nil, "mail", "import", "--quiet", "--once", md); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	if r := run(t, home, nil, "mail", "search", "--count", "from:anna@x.org", "roof"); r.code != 0 || strings.TrimSpace(r.stdout) != "1" {
		t.Errorf("from:anna roof: %+v", r)
	}
	if r := run(t, home, nil, "mail", "search", "--count", "roof", "after:2026-02-01"); r.code != 0 || strings.TrimSpace(r.stdout) != "0" {
		t.Errorf("after:2026-02-01: %+v", r)
	}
	if r := run(t, home, nil, "mail", "search", "before:someday"); r.code == 0 {
		t.Errorf("bad date accepted: %+v", r)
	}
}
