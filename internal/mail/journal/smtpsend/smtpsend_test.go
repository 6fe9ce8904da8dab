package smtpsend

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/hestia-dev/hestia/internal/mail/journal"
)

// smtpBackend is an in-process go-smtp server that can refuse recipients.
type smtpBackend struct {
	mu       sync.Mutex
	received [][]byte
	rcpts    []string
}

func (b *smtpBackend) NewSession(c *smtp.Conn) (smtp.Session, error) { return &smtpSession{b: b}, nil }

type smtpSession struct{ b *smtpBackend }

func (s *smtpSession) Mail(from string, opts *smtp.MailOptions) error { return nil }
func (s *smtpSession) Rcpt(to string, opts *smtp.RcptOptions) error {
	if strings.HasPrefix(to, "nobody@") {
		return &smtp.SMTPError{Code: 550, Message: "no such user"}
	}
	s.b.mu.Lock()
	s.b.rcpts = append(s.b.rcpts, to)
	s.b.mu.Unlock()
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.b.mu.Lock()
	s.b.received = append(s.b.received, b)
	s.b.mu.Unlock()
	return err
}
func (s *smtpSession) Reset()        {}
func (s *smtpSession) Logout() error { return nil }

func TestSender(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	be := &smtpBackend{}
	srv := smtp.NewServer(be)
	srv.Domain = "localhost"
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	var appended int
	s := &Sender{
		Account: func(name string) (Account, error) {
			if name != "work" {
				return Account{}, fmt.Errorf("no account %q", name)
			}
			return Account{Host: "127.0.0.1", Port: port, Security: "none"}, nil
		},
		AfterSend: func(ctx context.Context, account string, raw []byte) error { appended++; return nil },
	}
	ctx := context.Background()
	j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "mailops.db"), nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	draft := journal.Draft{From: "me@home.org", To: []string{"ann@x.org"}, Subject: "Hello", Body: "Hi Ann"}
	d := draft
	d.Bcc = []string{"hidden@x.org"}
	op, err := j.Send(ctx, journal.KindSend, "work", d, s)
	if err != nil || op.State != journal.StateSent {
		t.Fatalf("op = %+v, %v", op, err)
	}
	if len(be.received) != 1 || !strings.Contains(string(be.received[0]), "Hi Ann") || len(be.rcpts) != 2 || appended != 1 {
		t.Errorf("server got %d messages, rcpts %v, appended %d", len(be.received), be.rcpts, appended)
	}
	d.To = []string{"nobody@x.org"}
	op, _ = j.Send(ctx, journal.KindSend, "work", d, s)
	if op.State != journal.StateFailed || !strings.Contains(op.Error, "550") {
		t.Errorf("refused rcpt: %+v", op)
	}
	op, _ = j.Send(ctx, journal.KindSend, "other", draft, s)
	if op.State != journal.StateFailed {
		t.Errorf("unknown account: %+v", op)
	}
}
