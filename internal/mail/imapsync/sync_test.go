package imapsync

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/hestia-dev/hestia/internal/channels/email/emailtest"
	"github.com/hestia-dev/hestia/internal/mail"
)

func openStore(t *testing.T) *mail.Store {
	t.Helper()
	dir := t.TempDir()
	s, err := mail.Open(context.Background(), mail.Options{DBPath: filepath.Join(dir, "mail.db"), BlobDir: filepath.Join(dir, "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rawMsg(id, from, subject, body string) string {
	return fmt.Sprintf("Message-ID: <%s>\nFrom: %s\nTo: alice@example.org\nSubject: %s\nDate: %s\n\n%s\n",
		id, from, subject, time.Now().UTC().Format(time.RFC1123Z), body)
}

func TestSyncAgainstDovecot(t *testing.T) {
	ctx := context.Background()
	d := emailtest.StartDovecot(t)
	d.Deliver(t, "", rawMsg("one@x", "bob@example.org", "Invoice March", "Please pay the invoice."))
	d.Deliver(t, "", rawMsg("two@x", "carol@example.org", "Lunch", "Noon?"))
	d.Deliver(t, "Archive", rawMsg("three@x", "dan@example.org", "Old stuff", "archived text"))
	s := openStore(t)
	big := rawMsg("big@x", "zoe@example.org", "Large report", "summary first. "+strings.Repeat("filler line of a very large message\n", 2000))
	d.Deliver(t, "", big)
	sy := &Syncer{Store: s, FetchBatch: 2, MaxMessageBytes: 4096}
	acct := account(d)

	res, err := sy.Sync(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fetched != 4 || res.Mailboxes < 4 {
		t.Fatalf("first sync = %+v", res)
	}
	rb, _ := s.Search(ctx, mail.Query{Text: "summary", Account: "dove"})
	if len(rb.Messages) != 1 {
		t.Fatalf("large message not mirrored: %+v", rb.Messages)
	}
	if m, _ := s.Read(ctx, rb.Messages[0].ID, 0, 0); m.BodyState != mail.BodyPartial || m.BodyLength > 4096 {
		t.Errorf("large message: state %s, %d chars", m.BodyState, m.BodyLength)
	}
	boxes, _ := s.Mailboxes(ctx, "dove")
	roles := map[string]string{}
	for _, b := range boxes {
		roles[b.Name] = b.Role
	}
	if roles["Sent"] != "sent" || roles["INBOX"] != "inbox" || roles["Archive"] != "archive" || roles["Trash"] != "trash" {
		t.Errorf("roles = %v", roles)
	}
	r, _ := s.Search(ctx, mail.Query{Text: "invoice", Account: "dove"})
	if len(r.Messages) != 1 || r.Messages[0].Mailbox != "INBOX" || !r.Messages[0].Unread {
		t.Fatalf("search = %+v", r.Messages)
	}

	// Nothing changed: nothing fetched.
	res, err = sy.Sync(ctx, acct)
	if err != nil || res.Fetched != 0 || res.Flags != 0 || res.Removed != 0 {
		t.Fatalf("idle sync = %+v %v", res, err)
	}

	// Flag change and expunge through another client, plus a new message.
	c, err := Dial(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	uids, _ := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: "one@x"}}}, nil).Wait()
	one := uids.AllUIDs()
	if len(one) != 1 {
		t.Fatalf("search on server = %v", one)
	}
	if err := c.Store(imap.UIDSetNum(one...), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagSeen, imap.FlagFlagged}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	uids, _ = c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: "two@x"}}}, nil).Wait()
	c.Store(imap.UIDSetNum(uids.AllUIDs()...), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close()
	if err := c.Expunge().Close(); err != nil {
		t.Fatal(err)
	}
	c.Logout().Wait()
	c.Close()
	d.Deliver(t, "", rawMsg("four@x", "erin@example.org", "New one", "fresh"))

	res, err = sy.Sync(ctx, acct)
	if err != nil || res.Fetched != 1 || res.Flags != 1 || res.Removed != 1 {
		t.Fatalf("incremental sync = %+v %v", res, err)
	}
	if res.Incremental == 0 {
		t.Errorf("dovecot offers CONDSTORE but no mailbox synced incrementally: %+v", res)
	}
	r, _ = s.Search(ctx, mail.Query{Account: "dove", Flagged: ptr(true)})
	if len(r.Messages) != 1 || r.Messages[0].Subject != "Invoice March" || r.Messages[0].Unread {
		t.Errorf("flags not mirrored: %+v", r.Messages)
	}
	r, _ = s.Search(ctx, mail.Query{Text: "noon", Account: "dove"})
	if len(r.Messages) != 0 {
		t.Errorf("expunged message still found: %+v", r.Messages)
	}

	// UIDVALIDITY change: delete and recreate the mailbox.
	c, _ = Dial(ctx, acct)
	if err := c.Delete("Archive").Wait(); err != nil {
		t.Fatal(err)
	}
	c.Create("Archive", nil).Wait()
	c.Logout().Wait()
	c.Close()
	d.Deliver(t, "Archive", rawMsg("five@x", "dan@example.org", "Recreated", "after reset"))
	res, err = sy.Sync(ctx, acct)
	if err != nil || res.Reset != 1 || res.Fetched != 1 {
		t.Fatalf("after UIDVALIDITY change = %+v %v", res, err)
	}
	if r, _ := s.Search(ctx, mail.Query{Text: "archived", Account: "dove"}); len(r.Messages) != 0 {
		t.Errorf("message from the old Archive survived: %+v", r.Messages)
	}
}

func ptr[T any](v T) *T { return &v }

func TestFetchRawLive(t *testing.T) {
	ctx := context.Background()
	d := emailtest.StartDovecot(t)
	d.Deliver(t, "", rawMsg("live@x", "bob@example.org", "Live", "the full live body"))
	s := openStore(t)
	acct := account(d)
	if _, err := (&Syncer{Store: s}).Sync(ctx, acct); err != nil {
		t.Fatal(err)
	}
	r, _ := s.Search(ctx, mail.Query{Text: "live", Account: "dove"})
	paths, _ := s.Paths(ctx, r.Messages[0].ID)
	if len(paths) != 1 {
		t.Fatalf("paths = %v", paths)
	}
	raw, err := FetchRaw(ctx, acct, paths[0], 0)
	if err != nil || !strings.Contains(string(raw), "the full live body") {
		t.Fatalf("live fetch = %q %v", raw, err)
	}
	acc, box, _, uid, _ := ParsePath(paths[0])
	if _, err := FetchRaw(ctx, acct, PathOf(acc, box, 999, uid), 0); !errors.Is(err, ErrGone) {
		t.Errorf("stale UIDVALIDITY: %v", err)
	}
	if _, _, _, _, err := ParsePath("/home/x/Maildir/cur/1"); err == nil {
		t.Error("file path parsed as IMAP")
	}
}
