package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
)

// TestContactsCardDAV mirrors a Radicale address book configured in
// config.toml and finds its people through hestia contacts.
func TestContactsCardDAV(t *testing.T) {
	t.Parallel()
	base := davtest.Start(t, "erin", davtest.Collection{Name: "friends", Display: "Friends", AddressBook: true})
	card := "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:m1\r\nFN:Marco Rossi\r\nORG:Acme\r\nEMAIL:marco@acme.example\r\nEND:VCARD\r\n"
	req, _ := http.NewRequest(http.MethodPut, base+"erin/friends/m1.vcf", strings.NewReader(card))
	req.SetBasicAuth("erin", "x")
	req.Header.Set("Content-Type", "text/vcard")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("seeding radicale: %v %v", err, resp)
	}
	resp.Body.Close()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[[contacts.carddav]]\nname = \"dav\"\nurl = \""+base+"\"\nusername = \"erin\"\npassword_env = \"ERIN_PW\"\n"), 0o644)
	env := map[string]string{"ERIN_PW": "x"}
	r := run(t, home, env, "contacts", "sync")
	if r.code != 0 || !strings.Contains(r.stdout, "dav/friends: 1 files, 1 added") || !strings.Contains(r.stdout, "(server: full: 1 fetched, 0 removed)") {
		t.Fatalf("sync: %+v", r)
	}
	r = run(t, home, env, "contacts", "search", "acme")
	if r.code != 0 || !strings.Contains(r.stdout, "Marco Rossi (Acme)  marco@acme.example") || !strings.Contains(r.stdout, "[dav/friends]") {
		t.Fatalf("search: %+v", r)
	}
	r = run(t, home, env, "contacts", "sync")
	if r.code != 0 || !strings.Contains(r.stdout, "dav/friends: 1 files, 0 added, 0 updated, 0 removed, 1 unchanged, 0 cards, 0 skipped (server: unchanged)") {
		t.Fatalf("second sync: %+v", r)
	}
	// Without the password the account fails with its name, and what was
	// mirrored before stays searchable.
	r = run(t, home, nil, "contacts", "sync")
	if r.code == 0 || !strings.Contains(r.stderr, "carddav: account dav") || !strings.Contains(r.stderr, "ERIN_PW") {
		t.Fatalf("sync without password: %+v", r)
	}
	if r = run(t, home, nil, "contacts", "search", "marco"); r.code != 0 || !strings.Contains(r.stdout, "Marco Rossi") {
		t.Fatalf("search after failed sync: %+v", r)
	}
}
