package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/tools"
)

// TestContactsCheck runs the contacts worker once with a good vdir book
// and a CardDAV account nobody answers: the book is indexed, and the
// doctor check names the failing account.
func TestContactsCheck(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := testApp(t, t.TempDir())
	defer a.Close()
	dir := filepath.Join(t.TempDir(), "friends")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.vcf"), []byte("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ada\r\nEMAIL:ada@example.org\r\nEND:VCARD\r\n"), 0o644)
	a.Config.Contacts.Sources = []config.VdirSource{{Name: "friends", Path: dir}}
	a.Config.Contacts.CardDAV = []config.DAVAccount{{Name: "gone", URL: "http://127.0.0.1:1/"}}
	if err := a.registerContacts(ctx, tools.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	var check doctor.Check
	for _, c := range a.checks {
		if c.Name == "contacts.sources" {
			check = c
		}
	}
	if check.Run == nil {
		t.Fatal("no contacts.sources check")
	}
	if st, msg := check.Run(ctx); st != doctor.OK || msg != "first sync pending" {
		t.Fatalf("before the first sync: %v %q", st, msg)
	}
	done := make(chan struct{})
	for _, w := range a.workers {
		if w.name == "contacts.reconcile" {
			go func() { defer close(done); w.run(ctx) }()
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, msg := check.Run(ctx)
		if msg != "first sync pending" {
			if st != doctor.Warn || !strings.Contains(msg, "carddav gone") {
				t.Fatalf("after the sync: %v %q", st, msg)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the contacts worker never finished a sync")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	c, err := a.OpenContacts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := c.Store.Search(context.Background(), "ada", 5); err != nil || len(ps) != 1 {
		t.Fatalf("the vdir book was not indexed despite the failing account: %+v %v", ps, err)
	}
}
