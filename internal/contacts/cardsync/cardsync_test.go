package cardsync

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
	"github.com/hestia-dev/hestia/internal/contacts"
	"github.com/hestia-dev/hestia/internal/davmirror"
)

type getCounter struct {
	mu   sync.Mutex // guards gets
	gets int
}

func (g *getCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		g.mu.Lock()
		g.gets++
		g.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (g *getCounter) take() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.gets
	g.gets = 0
	return n
}

func putCard(t *testing.T, base, p, card string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, base+p, strings.NewReader(strings.ReplaceAll(card, "\n", "\r\n")))
	req.SetBasicAuth("dana", "x")
	req.Header.Set("Content-Type", "text/vcard")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("PUT %s: %v %v", p, err, resp)
	}
	resp.Body.Close()
}

// TestRadicaleAddressBook discovers a Radicale address book next to a
// calendar, mirrors it, indexes the mirror, and follows a change and a
// deletion made by another client; a pass with no change fetches nothing.
func TestRadicaleAddressBook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := davtest.Start(t, "dana",
		davtest.Collection{Name: "friends", Display: "Friends", AddressBook: true},
		davtest.Collection{Name: "cal", Display: "Cal"})
	putCard(t, base, "dana/friends/marco.vcf", "BEGIN:VCARD\nVERSION:3.0\nUID:marco\nFN:Marco Rossi\nN:Rossi;Marco;;;\nEMAIL:marco@acme.example\nEND:VCARD\n")
	putCard(t, base, "dana/friends/anna.vcf", "BEGIN:VCARD\nVERSION:4.0\nUID:anna\nFN:Anna Bianchi\nORG:Polimi\nEMAIL:anna@polimi.example\nEND:VCARD\n")
	cnt := &getCounter{}
	acc := davmirror.Account{Name: "r", URL: base, Username: "dana", Password: "x", HTTP: &http.Client{Transport: cnt}}
	books, err := Discover(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	if len(books) != 1 || books[0].Name != "Friends" || books[0].Path != "/dana/friends/" || FolderName(books[0]) != "friends" {
		t.Fatalf("discover %+v", books)
	}
	dir := filepath.Join(t.TempDir(), "r", FolderName(books[0]))
	idx, err := contacts.Open(ctx, filepath.Join(t.TempDir(), "contacts.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	src := contacts.Source{Name: "r/friends", Path: dir, ReadOnly: true}
	pass := func(wantMode string, wantGets int) contacts.SyncStats {
		t.Helper()
		st, err := Mirror(ctx, acc, books[0], dir)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode != wantMode {
			t.Fatalf("mode %+v, want %s", st, wantMode)
		}
		if n := cnt.take(); n != wantGets {
			t.Fatalf("%s pass made %d GETs, want %d", wantMode, n, wantGets)
		}
		ist, err := idx.Sync(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		return ist
	}
	if st := pass(davmirror.ModeFull, 2); st.Cards != 2 || st.Added != 2 {
		t.Fatalf("index %+v", st)
	}
	ps, err := idx.Search(ctx, "polimi", 5)
	if err != nil || len(ps) != 1 || ps[0].Name != "Anna Bianchi" || ps[0].Books[0] != "r/friends" {
		t.Fatalf("search %+v %v", ps, err)
	}
	if st := pass(davmirror.ModeUnchanged, 0); st.Unchanged != 2 {
		t.Fatalf("unchanged index %+v", st)
	}
	putCard(t, base, "dana/friends/marco.vcf", "BEGIN:VCARD\nVERSION:3.0\nUID:marco\nFN:Marco Rossi-Verdi\nEMAIL:marco@acme.example\nEND:VCARD\n")
	pass(davmirror.ModeIncremental, 1)
	if ps, _ := idx.Search(ctx, "verdi", 5); len(ps) != 1 || ps[0].Name != "Marco Rossi-Verdi" {
		t.Fatalf("after update %+v", ps)
	}
	req, _ := http.NewRequest(http.MethodDelete, base+"dana/friends/anna.vcf", nil)
	req.SetBasicAuth("dana", "x")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("delete: %v %v", err, resp)
	}
	if st := pass(davmirror.ModeIncremental, 0); st.Removed != 1 {
		t.Fatalf("after delete %+v", st)
	}
	if ps, _ := idx.Search(ctx, "anna", 5); len(ps) != 0 {
		t.Fatalf("deleted card still found %+v", ps)
	}
}
