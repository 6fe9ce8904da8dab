package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestContactsCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	book := filepath.Join(t.TempDir(), "friends")
	os.MkdirAll(book, 0o755)
	os.WriteFile(filepath.Join(book, "a.vcf"), []byte("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Marco Rossi\r\nEMAIL:marco@acme.example\r\nEND:VCARD\r\n"), 0o644)
	os.WriteFile(filepath.Join(book, "b.vcf"), []byte("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Marco Verdi\r\nEMAIL:mv@example.net\r\nORG:Polimi\r\nEND:VCARD\r\n"), 0o644)
	os.WriteFile(filepath.Join(book, "c.vcf"), []byte("garbage"), 0o644)
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{".Sent/cur", ".Sent/new", ".Sent/tmp", "cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	os.WriteFile(filepath.Join(md, ".Sent", "cur", "1:2,S"), []byte("Message-ID: <1@x>\nFrom: me@x.org\nTo: Marco Rossi <marco@acme.example>\nSubject: hi\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nhello\n"), 0o644)
	os.WriteFile(filepath.Join(md, ".Sent", "cur", "2:2,S"), []byte("Message-ID: <2@x>\nFrom: me@x.org\nTo: Giulia Neri <giulia@x.example>\nSubject: hi\nDate: Tue, 6 Jan 2026 10:00:00 +0000\n\nhello\n"), 0o644)
	os.WriteFile(filepath.Join(md, "cur", "3:2,S"), []byte("Message-ID: <3@x>\nFrom: Giulia Shop <noreply@giulia-shop.example>\nTo: me@x.org\nSubject: sale\nDate: Wed, 7 Jan 2026 10:00:00 +0000\n\nbuy\n"), 0o644)
	if r := run(t, home, nil, "mail", "import", "--quiet", md); r.code != 0 {
		t.Fatalf("mail import: %+v", r)
	}
	r := run(t, home, nil, "contacts", "import", book)
	if r.code != 0 || !strings.Contains(r.stdout, "friends: 3 files, 3 added") || !strings.Contains(r.stdout, "skipped c.vcf") {
		t.Fatalf("import: %+v", r)
	}
	r = run(t, home, nil, "contacts", "search", "marco")
	if r.code != 0 || !strings.Contains(r.stdout, "Marco Rossi") || !strings.Contains(r.stdout, "Marco Verdi (Polimi)") {
		t.Fatalf("search: %+v", r)
	}
	r = run(t, home, nil, "contacts", "resolve", "Marco")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ambiguous") || !strings.Contains(r.stdout, "1. Marco Rossi <marco@acme.example>") || !strings.Contains(r.stdout, "mailed 1") {
		t.Fatalf("resolve: %+v", r)
	}
	r = run(t, home, nil, "contacts", "resolve", "Marco", "from", "polimi", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"status": "unique"`) || !strings.Contains(r.stdout, "mv@example.net") {
		t.Fatalf("resolve with hint: %+v", r)
	}
	// People seen in mail: stored by sync, found after the cards, never
	// added to a book; machine senders left out.
	r = run(t, home, nil, "contacts", "sync")
	if r.code != 0 || !strings.Contains(r.stdout, "seen in mail: 3 addresses") {
		t.Fatalf("sync: %+v", r)
	}
	r = run(t, home, nil, "contacts", "search", "giulia")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "Giulia Neri  giulia@x.example    [seen in mail] mailed 1, received 0, last 2026-01-06" {
		t.Fatalf("search seen in mail: %+v", r)
	}
	r = run(t, home, nil, "contacts", "search", "marco", "rossi")
	if r.code != 0 || !strings.Contains(r.stdout, "[friends] mailed 1, received 0, last 2026-01-05") {
		t.Fatalf("search card with mail stats: %+v", r)
	}
	if b, _ := os.ReadDir(book); len(b) != 3 {
		t.Fatalf("the address book changed: %v", b)
	}
	for _, bad := range [][]string{{"contacts"}, {"contacts", "frob"}, {"contacts", "search"}, {"contacts", "resolve"}} {
		if r := run(t, home, nil, bad...); r.code != 2 || r.stderr == "" {
			t.Errorf("%v: %+v", bad, r)
		}
	}
}
