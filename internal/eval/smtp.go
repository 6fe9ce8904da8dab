package eval

import (
	"errors"
	"io"
	"net"
	"sync"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Sent is one message the SMTP sink accepted.
type Sent struct {
	From string   `json:"from"`
	To   []string `json:"to"`
	Data string   `json:"-"`
}

// sink is a loopback SMTP server standing in for the user's provider: it
// requires AUTH PLAIN with the eval account's password and keeps every
// message, so checkers see exactly what left the machine.
type sink struct {
	mu   sync.Mutex // guards sent
	sent []Sent
	srv  *smtp.Server
	port int
}

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{port: ln.Addr().(*net.TCPAddr).Port}
	s.srv = smtp.NewServer(s)
	s.srv.Domain = "localhost"
	s.srv.AllowInsecureAuth = true
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sink) Close() error { return s.srv.Close() }

// since returns the messages accepted after the first n.
func (s *sink) since(n int) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > len(s.sent) {
		return nil
	}
	return append([]Sent(nil), s.sent[n:]...)
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

func (s *sink) NewSession(*smtp.Conn) (smtp.Session, error) { return &sinkSession{s: s}, nil }

type sinkSession struct {
	s     *sink
	authd bool
	from  string
	rcpt  []string
}

func (x *sinkSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (x *sinkSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != meAddr || pass != smtpPassword {
			return errors.New("bad credentials")
		}
		x.authd = true
		return nil
	}), nil
}
func (x *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	if !x.authd {
		return errors.New("authenticate first")
	}
	x.from = from
	return nil
}
func (x *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.rcpt = append(x.rcpt, to)
	return nil
}
func (x *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	x.s.mu.Lock()
	x.s.sent = append(x.s.sent, Sent{From: x.from, To: x.rcpt, Data: string(b)})
	x.s.mu.Unlock()
	return err
}
func (x *sinkSession) Reset()        { x.rcpt, x.from = nil, "" }
func (x *sinkSession) Logout() error { return nil }
