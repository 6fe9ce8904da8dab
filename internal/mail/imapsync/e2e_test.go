package imapsync

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/journal"
	"github.com/hestia-dev/hestia/internal/mail/journal/smtpsend"
)

// maildirMTA is an in-process go-smtp server that delivers every accepted
// message into the Dovecot user's INBOX Maildir, standing in for a local
// MTA (see the issue note for why not a Debian MTA).
type maildirMTA struct {
	d *dovecot
	t *testing.T
	n atomic.Int64
}

func (m *maildirMTA) NewSession(*smtp.Conn) (smtp.Session, error) { return &mtaSession{m: m}, nil }

type mtaSession struct{ m *maildirMTA }

func (s *mtaSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mtaSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *mtaSession) Reset()                               {}
func (s *mtaSession) Logout() error                        { return nil }
func (s *mtaSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.m.d.deliver(s.m.t, "", fmt.Sprintf("smtp.%d", s.m.n.Add(1)), string(b))
	return nil
}

// startMTA starts Debian's OpenSMTPD on loopback delivering every
// @example.org recipient into the Dovecot user's INBOX Maildir. OpenSMTPD
// must run as root (its queue and control socket are system paths); when
// it cannot, an in-process go-smtp server delivers instead, unless
// HESTIA_REQUIRE_SERVICES=1 on a root machine.
func startMTA(t *testing.T, d *dovecot) int {
	if port, ok := startOpenSMTPD(t, d); ok {
		return port
	}
	return startGoSMTP(t, d)
}

func startOpenSMTPD(t *testing.T, d *dovecot) (int, bool) {
	bin, err := exec.LookPath("smtpd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/smtpd"); serr == nil {
			bin, err = "/usr/sbin/smtpd", nil
		}
	}
	if err != nil || os.Getuid() != 0 {
		if os.Getuid() == 0 && os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" {
			t.Fatal("opensmtpd not installed (apt-get install opensmtpd)")
		}
		t.Log("OpenSMTPD unavailable (needs the binary and root): using go-smtp's server")
		return 0, false
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	user := "nobody"
	dir := t.TempDir()
	conf := fmt.Sprintf(`table vusers { "@example.org" = "%s" }
listen on 127.0.0.1 port %d
action "deliver" maildir "%s" virtual <vusers>
match from any for any action "deliver"
`, user, port, d.Maildir)
	confPath := filepath.Join(dir, "smtpd.conf")
	os.WriteFile(confPath, []byte(conf), 0o644)
	cmd := exec.Command(bin, "-d", "-f", confPath)
	logf, _ := os.Create(filepath.Join(dir, "smtpd.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting smtpd: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "smtpd.log"))
			t.Logf("smtpd log:\n%s", b)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			t.Log("using Debian OpenSMTPD as the MTA")
			return port, true
		}
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "smtpd.log"))
			t.Fatalf("smtpd exited: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("smtpd did not listen")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// delivered reports whether a message containing text sits in the INBOX Maildir.
func delivered(maildir, text string) bool {
	for _, sub := range []string{"new", "cur"} {
		entries, _ := os.ReadDir(filepath.Join(maildir, sub))
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(maildir, sub, e.Name())); err == nil && strings.Contains(string(b), text) {
				return true
			}
		}
	}
	return false
}

func startGoSMTP(t *testing.T, d *dovecot) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := smtp.NewServer(&maildirMTA{d: d, t: t})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestReplyConfirmedAgainstSent syncs a mailbox over IMAP, replies over
// SMTP through the journal, files the copy in Sent over IMAP, syncs again
// and confirms the operation from the mirror.
func TestReplyConfirmedAgainstSent(t *testing.T) {
	ctx := context.Background()
	d := startDovecot(t)
	smtpPort := startMTA(t, d)
	d.deliver(t, "", "1.a", rawMsg("question@x", "bob@example.org", "Dinner on Friday?", "Are you free on Friday?"))
	s := openStore(t)
	acct := d.account()
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
	deadline := time.Now().Add(10 * time.Second)
	for !delivered(d.Maildir, "Friday works") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
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
