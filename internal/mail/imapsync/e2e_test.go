package imapsync

import (
	"context"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels/email/emailtest"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/journal"
	"github.com/hestia-dev/hestia/internal/mail/journal/smtpsend"
)

// account is the Dovecot user's account as the syncer reads it.
func account(d *emailtest.Dovecot) Account {
	return Account{Name: "dove", Host: "127.0.0.1", Port: d.Port, Security: "none", Username: d.User, Password: d.Password}
}

// TestReplyConfirmedAgainstSent syncs a mailbox over IMAP, replies over
// SMTP through the journal, files the copy in Sent over IMAP, syncs again
// and confirms the operation from the mirror.
func TestReplyConfirmedAgainstSent(t *testing.T) {
	ctx := context.Background()
	d := emailtest.StartDovecot(t)
	// OpenSMTPD where it can run, each instance isolated from the
	// others a parallel run starts; else an in-process server.
	smtpPort, _ := emailtest.StartMTA(t, d)
	d.Deliver(t, "", rawMsg("question@x", "bob@example.org", "Dinner on Friday?", "Are you free on Friday?"))
	s := openStore(t)
	acct := account(d)
	sy := &Syncer{Store: s}
	if _, err := sy.Sync(ctx, acct); err != nil {
		t.Fatal(err)
	}
	r, _ := s.Search(ctx, mail.Query{Text: "friday", Account: "dove"})
	if len(r.Messages) != 1 {
		t.Fatalf("search = %+v", r.Messages)
	}
	orig, _ := s.Read(ctx, r.Messages[0].ID, 0, 0)

	j, err := journal.Open(ctx, t.TempDir()+"/mailops.db", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	sender := &smtpsend.Sender{
		Account: func(string) (smtpsend.Account, error) {
			return smtpsend.Account{Host: "127.0.0.1", Port: smtpPort, Security: "none"}, nil
		},
		AfterSend: func(ctx context.Context, _ string, raw []byte) error { return AppendSent(ctx, acct, raw) },
	}
	draft := journal.Draft{From: "alice@example.org", To: []string{"bob@example.org"}, Subject: "Re: " + orig.Subject,
		Body: "Yes, Friday works.\nSee you at eight.", InReplyTo: orig.MessageID}
	op, err := j.Send(ctx, journal.KindReply, "dove", draft, sender)
	if err != nil || op.State != journal.StateSent {
		t.Fatalf("send = %+v %v", op, err)
	}
	// Before the mirror sees Sent, confirmation finds nothing.
	if c, _, _ := j.Confirm(ctx, s, journal.ConfirmOptions{}); c != 0 {
		t.Fatal("confirmed without evidence")
	}
	// The MTA queues and delivers asynchronously: wait for the INBOX copy.
	d.WaitMessage(t, "", "Friday works")
	res, err := sy.Sync(ctx, acct)
	if err != nil || res.Fetched != 2 { // the Sent copy and the delivered reply
		t.Fatalf("sync after send = %+v %v", res, err)
	}
	c, _, err := j.Confirm(ctx, s, journal.ConfirmOptions{})
	if err != nil || c != 1 {
		got, _ := j.Get(ctx, op.ID)
		t.Fatalf("confirmed %d (%v): %+v", c, err, got)
	}
	got, _ := j.Get(ctx, op.ID)
	if got.State != journal.StateConfirmed {
		t.Errorf("state = %s", got.State)
	}
	// The reply joined the original's thread in the mirror.
	tp, err := s.Thread(ctx, orig.ID, 0, 10, 0)
	if err != nil || tp.Count != 2 {
		t.Errorf("thread = %+v %v", tp, err)
	}
}
