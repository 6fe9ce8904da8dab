package graphcards

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/contacts"
	"github.com/hestia-dev/hestia/internal/msgraph"
	"github.com/hestia-dev/hestia/internal/msgraph/graphtest"
)

func load(t testing.TB, name string) *Contact {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "contacts", name))
	if err != nil {
		t.Fatal(err)
	}
	var c Contact
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestCard(t *testing.T) {
	t.Parallel()
	data, err := Card(load(t, "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{
		"VERSION:4.0", "UID:AAMkContact1=", "FN:Ana María Pérez-Díaz", `N:Pérez-Díaz;Ana María;;Dr.;`,
		"NICKNAME:Anita", `ORG:Acme\, Inc.;R&D`, "TITLE:Head of Research; EU", "ROLE:Chemist",
		"EMAIL;PREF=1:Ana.Perez@Example.com", "EMAIL:ana@home.example",
		"TEL;TYPE=work,voice:+34 91 123 45 67", "TEL;TYPE=cell:+34 600 11 22 33",
		`ADR;TYPE=home:;;Calle Mayor 1\n3º B;Madrid;;28013;Spain`,
		"BDAY:19800504", "CATEGORIES:Work,VIP", "URL:https://acme.example/ana", "REV:20260301T100000Z",
	} {
		if !strings.Contains(s, want+"\r\n") {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "not an address") || strings.Contains(s, "ADR;TYPE=work") {
		t.Errorf("bad address or empty ADR written:\n%s", s)
	}
	for _, l := range strings.Split(s, "\r\n") {
		if len(l) > 75 {
			t.Errorf("line of %d octets: %q", len(l), l)
		}
	}
	cards, err := contacts.ParseVCF(bytes.NewReader(data))
	if err != nil || len(cards) != 1 {
		t.Fatal(cards, err)
	}
	c := cards[0]
	if c.Name != "Ana María Pérez-Díaz" || c.Org != "Acme, Inc., R&D" || c.Title != "Head of Research; EU" || len(c.Emails) != 2 || c.Emails[0] != "ana.perez@example.com" ||
		len(c.Phones) != 2 || !strings.Contains(c.Note, "email first. A long note") || c.Nicknames[0] != "Anita" {
		t.Errorf("index reads %+v", c)
	}
	// A phone is enough; nothing is not.
	if data, err := Card(load(t, "phone-only.json")); err != nil || !strings.Contains(string(data), "TEL;TYPE=cell:555-0100\r\n") {
		t.Errorf("phone only: %v\n%s", err, data)
	}
	if _, err := Card(load(t, "empty.json")); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
}

func FuzzCard(f *testing.F) {
	ents, _ := os.ReadDir(filepath.Join("testdata", "contacts"))
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join("testdata", "contacts", e.Name())); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Contact
		if json.Unmarshal(b, &c) != nil {
			return
		}
		data, err := Card(&c)
		if err != nil {
			if !errors.Is(err, ErrEmpty) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		cards, err := contacts.ParseVCF(bytes.NewReader(data))
		if err != nil || len(cards) != 1 {
			t.Fatalf("output not readable (%v, %d cards):\n%s", err, len(cards), data)
		}
	})
}

type env struct {
	fake   *graphtest.Server
	fld    string
	col    *Collection
	idx    *contacts.Store
	src    contacts.Source
	mu     sync.Mutex
	sleeps []time.Duration
}

func newEnv(t *testing.T) *env {
	t.Helper()
	fake := graphtest.New("tok")
	t.Cleanup(fake.Close)
	e := &env{fake: fake}
	e.fld = fake.AddContactFolder("Contacts")
	client := &msgraph.Client{BaseURL: fake.URL, Tokens: msgraph.StaticToken("tok"), Sleep: func(_ context.Context, d time.Duration) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.sleeps = append(e.sleeps, d)
		return nil
	}}
	dir := filepath.Join(t.TempDir(), "Contacts")
	e.col = &Collection{Client: client, Folder: Folder{ID: e.fld, Name: "Contacts"}, Dir: dir, PageSize: 2}
	idx, err := contacts.Open(context.Background(), filepath.Join(t.TempDir(), "contacts.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	e.idx, e.src = idx, contacts.Source{Name: "work/Contacts", Path: dir, ReadOnly: true}
	return e
}

func (e *env) sync(t *testing.T) Stats {
	t.Helper()
	st, err := e.col.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.idx.Sync(context.Background(), e.src); err != nil {
		t.Fatal(err)
	}
	return st
}

func (e *env) names(t *testing.T, q string) []string {
	t.Helper()
	people, err := e.idx.Search(context.Background(), q, 20)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range people {
		out = append(out, p.Name)
	}
	return out
}

func person(name, email string) graphtest.Contact {
	return graphtest.Contact{DisplayName: name, EmailAddresses: []graphtest.EmailAddress{{Address: email}}}
}

func TestSyncDeltaResyncThrottle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.fake.AddContactFolder("Suppliers")
	ids := []string{
		e.fake.AddContact(e.fld, person("Ada Lovelace", "ada@example.com")),
		e.fake.AddContact(e.fld, person("Bob Byte", "bob@example.com")),
		e.fake.AddContact(e.fld, person("Carol Cache", "carol@example.com")),
	}
	e.fake.AddContact(other, person("Dan Supplier", "dan@supplier.example"))
	folders, err := Folders(context.Background(), e.col.Client)
	if err != nil || len(folders) != 2 || folders[0].ID != e.fld || FolderName(folders[1], folders) != "Suppliers" {
		t.Fatalf("folders %+v %v", folders, err)
	}
	st := e.sync(t)
	if st.Mode != ModeFull || st.Changed != 3 || st.Files != 3 || st.Written != 3 {
		t.Fatalf("first pass %+v", st)
	}
	if got := e.names(t, "ada"); len(got) != 1 || got[0] != "Ada Lovelace" {
		t.Fatalf("search %v", got)
	}
	e.fake.UpdateContact(ids[0], func(c *graphtest.Contact) { c.DisplayName = "Ada King" })
	e.fake.DeleteContact(ids[1])
	e.fake.AddContact(e.fld, person("Eve Edge", "eve@example.com"))
	st = e.sync(t)
	if st.Mode != ModeIncremental || st.Changed != 2 || st.Removed != 1 || st.Deleted != 1 || st.Files != 3 {
		t.Fatalf("incremental %+v", st)
	}
	if got := e.names(t, "bob"); len(got) != 0 {
		t.Errorf("deleted contact found: %v", got)
	}
	if got := e.names(t, "king"); len(got) != 1 {
		t.Errorf("renamed contact: %v", got)
	}
	// 410: a full round, and what went meanwhile goes.
	e.fake.ExpireTokens()
	e.fake.DeleteContact(ids[2])
	e.fake.Throttle(1, "3")
	st = e.sync(t)
	if !st.Resynced || st.Mode != ModeFull || st.Files != 2 || st.Deleted != 1 {
		t.Fatalf("resync %+v", st)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.sleeps) != 1 || e.sleeps[0] != 3*time.Second {
		t.Errorf("waits %v", e.sleeps)
	}
}

func TestMalformedContactSkipped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.AddContact(e.fld, person("Ada Lovelace", "ada@example.com"))
	e.fake.AddRawEvent(e.fld, "bad", `{"id":"bad","displayName":["not","a","string"]}`)
	e.fake.AddRawEvent(e.fld, "nothing", `{"id":"nothing","displayName":""}`)
	st := e.sync(t)
	if st.Skipped != 2 || st.Files != 1 || len(st.Warnings) != 2 || !strings.Contains(st.Warnings[0]+st.Warnings[1], "malformed JSON") {
		t.Fatalf("pass %+v", st)
	}
	if got := e.names(t, "ada"); len(got) != 1 {
		t.Errorf("search %v", got)
	}
}
