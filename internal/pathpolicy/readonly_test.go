package pathpolicy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// inboxSetup is a home whose file roots are ~/docs, Hestia's data folder
// protected, and its inbox read-only.
func inboxSetup(t *testing.T, data string) (*Policy, string, string) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if data == "" {
		data = filepath.Join(root, "hestia-data")
	}
	inbox := filepath.Join(data, "inbox")
	day := filepath.Join(inbox, "slack", "2025-03-14")
	for _, d := range []string{filepath.Join(home, "docs"), filepath.Join(home, "other"), filepath.Join(home, ".ssh"), day} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(data, "auth-token"), filepath.Join(day, "001-report.pdf"), filepath.Join(day, "002-server.key"),
		filepath.Join(home, "other", "x.txt"), filepath.Join(home, ".ssh", "id_ed25519")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(Options{Home: home, Roots: []string{filepath.Join(home, "docs")}, Protected: []string{data}, ReadOnly: []string{inbox}})
	if err != nil {
		t.Fatal(err)
	}
	return p, home, day
}

func TestReadOnlyInboxIsReadableAndNeverWritten(t *testing.T) {
	t.Parallel()
	p, home, day := inboxSetup(t, "")
	data := filepath.Dir(filepath.Dir(filepath.Dir(day)))
	inbox := filepath.Join(data, "inbox")
	link := func(target, name string) string {
		l := filepath.Join(day, name)
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	link(filepath.Join(data, "auth-token"), "003-token.txt")
	link(filepath.Join(home, ".ssh", "id_ed25519"), "004-key.txt")
	link(filepath.Join(home, "other", "x.txt"), "005-other.txt")
	if err := os.Symlink(inbox, filepath.Join(home, "docs", "inbox-link")); err != nil {
		t.Fatal(err)
	}

	// Reads: the inbox's files, though it lies in the protected data
	// folder and outside the roots; nothing that leaves it by a symlink
	// or "..", and no file a name rule refuses anywhere.
	if got, err := p.Resolve(filepath.Join(day, "001-report.pdf")); err != nil || got != filepath.Join(day, "001-report.pdf") {
		t.Errorf("reading a received file: %q %v", got, err)
	}
	if _, err := p.Resolve(day); err != nil {
		t.Errorf("listing a day's folder: %v", err)
	}
	if _, err := p.Resolve(filepath.Join(home, "docs", "inbox-link", "slack", "2025-03-14", "001-report.pdf")); err != nil {
		t.Errorf("reading through a link to the inbox from a root: %v", err)
	}
	for path, want := range map[string]error{
		filepath.Join(data, "auth-token"):              ErrSensitive,
		filepath.Join(inbox, "..", "auth-token"):       ErrSensitive,
		filepath.Join(day, "003-token.txt"):            ErrSensitive,
		filepath.Join(day, "004-key.txt"):              ErrSensitive,
		filepath.Join(day, "005-other.txt"):            ErrOutsideRoots,
		filepath.Join(day, "002-server.key"):           ErrSensitive,
		filepath.Join(data, "INBOX", "slack"):          ErrSensitive, // another folder on a case-sensitive disk
		filepath.Join(data, "inbox-not", "a.pdf"):      ErrSensitive,
		filepath.Join(home, "other", "x.txt"):          ErrOutsideRoots,
		filepath.Join(filepath.Dir(data), "x", "a.md"): ErrOutsideRoots,
	} {
		if _, err := p.Resolve(path); !errors.Is(err, want) {
			t.Errorf("reading %s: %v, want %v", path, err, want)
		}
	}

	// Writes: refused everywhere in the inbox, however the path is
	// written, with the error class the policy engine treats as
	// "refused for writing, readable".
	for _, path := range []string{
		inbox,
		filepath.Join(day, "001-report.pdf"),
		filepath.Join(day, "new.sh"),
		filepath.Join(inbox, "slack", "new-day", "x.txt"),
		filepath.Join(home, "docs", "inbox-link", "x.txt"),
		filepath.Join(data, "Inbox", "x.txt"),
	} {
		_, err := p.ResolveForWrite(path)
		if !errors.Is(err, ErrSensitive) || !errors.Is(err, ErrExecutes) {
			t.Errorf("writing %s: %v, want a refusal", path, err)
		}
		if path != filepath.Join(data, "Inbox", "x.txt") && !errors.Is(err, ErrReadOnly) {
			t.Errorf("writing %s: %v, want ErrReadOnly", path, err)
		}
	}
	if _, err := p.ResolveForWrite(filepath.Join(home, "docs", "summary.md")); err != nil {
		t.Errorf("writing in a root: %v", err)
	}
	if !slices.Contains(p.ReadOnly(), inbox) {
		t.Errorf("ReadOnly() = %q", p.ReadOnly())
	}
}

// Hestia's default data folder is under the home (~/.local/share/hestia),
// refused by the home rules too; the inbox inside it is still readable,
// and the folder may be made after the policy, behind a symlink.
func TestReadOnlyInboxInTheDefaultDataFolder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	real := filepath.Join(root, "disk", "hestia")
	if err := os.MkdirAll(filepath.Join(home, ".local", "share"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(real, 0o700); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(home, ".local", "share", "hestia")
	if err := os.Symlink(real, data); err != nil {
		t.Fatal(err)
	}
	inbox := filepath.Join(data, "inbox")
	p, err := New(Options{Home: home, Roots: []string{home}, Protected: []string{data}, ReadOnly: []string{inbox}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(inbox, "email", "2025-03-14", "001-a.txt")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "auth-token"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Resolve(file); err != nil || got != filepath.Join(real, "inbox", "email", "2025-03-14", "001-a.txt") {
		t.Errorf("reading the inbox behind a symlink: %q %v", got, err)
	}
	if _, err := p.Resolve("~/.local/share/hestia/auth-token"); !errors.Is(err, ErrSensitive) {
		t.Errorf("the rest of the data folder: %v", err)
	}
	if _, err := p.ResolveForWrite(filepath.Join(real, "inbox", "x")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("writing the inbox by its real path: %v", err)
	}
	if !slices.Contains(p.Hidden(), filepath.Join(home, ".local/share/hestia")) {
		t.Errorf("Hidden() lost Hestia's default folder: %q", p.Hidden())
	}
}

func TestReadOnlyRefusesTheWholeHome(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, d := range []string{"~", home, "/"} {
		if _, err := New(Options{Home: home, ReadOnly: []string{d}}); err == nil {
			t.Errorf("read-only %q accepted", d)
		}
	}
}
