package email

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

// A message the server cannot read (here a file Dovecot's user may not
// open) ends the IMAP session whenever it is fetched. It is skipped after
// repeated failures, with a warning, and the messages after it are still
// delivered; it stays unseen on the server.
func TestUnreadableMessageIsSkipped(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to make a message Dovecot cannot read")
	}
	r := startRig(t, nil)
	// Unreadable: mode 0 (Dovecot does not run as root).
	name := "1.unreadable.localhost"
	raw := strings.ReplaceAll(msg(ownerAddr, taggedAddr, "bad@owner.example.org", "First", "this one cannot be read"), "\n", "\r\n")
	if err := os.WriteFile(filepath.Join(r.d.Maildir, "new", name), []byte(raw), 0); err != nil {
		t.Fatal(err)
	}
	r.d.Deliver(t, "", msg("Owner <"+ownerAddr+">", taggedAddr, "good@owner.example.org", "Second", "Is the car booked?"))
	u := r.col.next(t)
	if u.ID != "<good@owner.example.org>" {
		t.Fatalf("update %+v, want the readable message", u)
	}
	r.col.none(t, 500*time.Millisecond)
	// Left for the user to see, unseen; the readable one is handled.
	r.stop()
	r.stop = nil
	var bad, good bool
	for _, m := range r.d.Messages(t, "") {
		switch {
		case strings.Contains(m.Raw, "bad@owner.example.org"):
			bad = true
			if strings.Contains(m.Flags, "S") {
				t.Errorf("the unreadable message was marked seen: %q", m.Flags)
			}
		case strings.Contains(m.Raw, "good@owner.example.org"):
			good = true
			if !strings.Contains(m.Flags, "S") {
				t.Errorf("the handled message is not seen: %q", m.Flags)
			}
		}
	}
	if !bad || !good {
		t.Errorf("messages on the server: unreadable %v, readable %v", bad, good)
	}
}

// A failed batch makes its messages suspects, fetched alone; a suspect
// that fails alone three times is skipped, one that is read is cleared;
// a new UIDVALIDITY forgets everything.
func TestUnreadableBookkeeping(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	var u unreadable
	u.failed(log, 7, []imap.UID{1, 2, 3})
	for _, id := range []imap.UID{1, 2, 3} {
		if !u.suspect(7, id) {
			t.Fatalf("%d is no suspect after its batch failed", id)
		}
	}
	u.read(7, []imap.UID{1})
	if u.suspect(7, 1) {
		t.Error("a message read is still a suspect")
	}
	u.failed(log, 7, []imap.UID{2})
	u.failed(log, 7, []imap.UID{2, 3}) // a batch does not count against one
	u.failed(log, 7, []imap.UID{2})
	if got := u.without(7, []imap.UID{1, 2, 3}); len(got) != 3 {
		t.Fatalf("skipped after two failures alone: %v", got)
	}
	u.failed(log, 7, []imap.UID{2})
	if got := u.without(7, []imap.UID{1, 2, 3}); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("after three failures alone: %v, want [1 3]", got)
	}
	if got := u.without(8, []imap.UID{1, 2, 3}); len(got) != 3 || u.suspect(8, 3) {
		t.Fatalf("a new UIDVALIDITY kept the old marks: %v", got)
	}
}
