package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
)

// TestCalCalDAV mirrors a Radicale calendar configured in config.toml and
// shows it through hestia cal.
func TestCalCalDAV(t *testing.T) {
	t.Parallel()
	base := davtest.StartRadicale(t, "bob", "home", "Home")
	ev := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:gym\r\nDTSTAMP:20260101T000000Z\r\n" +
		"DTSTART;TZID=Europe/Rome:20260303T180000\r\nDTEND;TZID=Europe/Rome:20260303T190000\r\nSUMMARY:Gym\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	req, _ := http.NewRequest(http.MethodPut, base+"bob/home/gym.ics", strings.NewReader(ev))
	req.SetBasicAuth("bob", "x")
	req.Header.Set("Content-Type", "text/calendar")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("seeding radicale: %v %v", err, resp)
	}
	resp.Body.Close()
	home := t.TempDir()
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("x\n"), 0o600)
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[calendar]\ntimezone = \"Europe/Rome\"\n[[calendar.caldav]]\nname = \"dav\"\nurl = \""+base+"\"\nusername = \"bob\"\npassword_file = \""+pw+"\"\n"), 0o644)
	r := run(t, home, nil, "cal", "sync")
	if r.code != 0 || !strings.Contains(r.stdout, "dav/home: 1 files, 1 added") || !strings.Contains(r.stdout, "server: full, 1 downloaded, 0 removed") {
		t.Fatalf("sync: %+v", r)
	}
	r = run(t, home, nil, "cal", "agenda", "--from", "2026-03-03", "--to", "2026-03-04")
	if r.code != 0 || !strings.Contains(r.stdout, "18:00-19:00  Gym  [dav/home]") {
		t.Fatalf("agenda: %+v", r)
	}
	// The password from the environment the command runs with; nothing
	// changed on the server, so nothing changes in the index.
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[calendar]\ntimezone = \"Europe/Rome\"\n[[calendar.caldav]]\nname = \"dav\"\nurl = \""+base+"\"\nusername = \"bob\"\npassword_env = \"BOB_PW\"\n"), 0o644)
	r = run(t, home, map[string]string{"BOB_PW": "x"}, "cal", "sync")
	if r.code != 0 || !strings.Contains(r.stdout, "dav/home: 1 files, 0 added") || !strings.Contains(r.stdout, "server: unchanged, 0 downloaded") {
		t.Fatalf("sync with password_env: %+v", r)
	}
	if r = run(t, home, nil, "cal", "sync"); r.code == 0 || !strings.Contains(r.stderr, "BOB_PW") {
		t.Fatalf("sync without the password: %+v", r)
	}
}
