package smtpsend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/hestia-dev/hestia/internal/mail/journal"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// OpenSMTPD, the SMTP server the other mail tests run, cannot check OAuth
// tokens, so the SASL exchange is tested against an in-process go-smtp
// server that checks each token the way a provider's submission server
// does: at the authorization server's RFC 7662 introspection endpoint.

// introspector asks the fake provider whether a token is active and whose.
type introspector struct{ url string }

func (in introspector) check(token, user string) bool {
	resp, err := http.PostForm(in.url, url.Values{"token": {token}})
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var r struct {
		Active   bool   `json:"active"`
		Username string `json:"username"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil {
		return false
	}
	return r.Active && r.Username == user
}

// oauthBackend is a submission server offering mechs, checking tokens.
type oauthBackend struct {
	smtpBackend
	mechs []string
	in    introspector
	mu    sync.Mutex
	used  []string // mechanisms of the successful logins
}

func (b *oauthBackend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &oauthSession{smtpSession: smtpSession{b: &b.smtpBackend}, b: b}, nil
}

type oauthSession struct {
	smtpSession
	b    *oauthBackend
	auth bool
}

func (s *oauthSession) AuthMechanisms() []string { return s.b.mechs }

func (s *oauthSession) Auth(mech string) (sasl.Server, error) {
	ok := func() {
		s.auth = true
		s.b.mu.Lock()
		s.b.used = append(s.b.used, mech)
		s.b.mu.Unlock()
	}
	switch mech {
	case "OAUTHBEARER":
		return refusal535{sasl.NewOAuthBearerServer(func(o sasl.OAuthBearerOptions) *sasl.OAuthBearerError {
			if !s.b.in.check(o.Token, o.Username) {
				return &sasl.OAuthBearerError{Status: "invalid_token", Schemes: "bearer"}
			}
			ok()
			return nil
		})}, nil
	case "XOAUTH2":
		return &xoauth2Server{check: s.b.in.check, ok: ok}, nil
	}
	return nil, errors.New("unsupported mechanism")
}

func (s *oauthSession) Mail(from string, opts *smtp.MailOptions) error {
	if !s.auth {
		return &smtp.SMTPError{Code: 530, Message: "authentication required"}
	}
	return nil
}

// refusal535 answers a refused exchange with 535 5.7.8, as Gmail and
// Microsoft 365 do; go-smtp would otherwise answer 454 (temporary).
type refusal535 struct{ sasl.Server }

func (r refusal535) Next(resp []byte) ([]byte, bool, error) {
	ch, done, err := r.Server.Next(resp)
	if err != nil {
		err = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: err.Error()}
	}
	return ch, done, err
}

// xoauth2Server is the server side of XOAUTH2 as Google documents it: an
// initial "user=U^Aauth=Bearer T^A^A"; a refused token gets a JSON error
// challenge, and the client's (empty) answer ends the exchange with 535.
type xoauth2Server struct {
	check  func(token, user string) bool
	ok     func()
	failed bool
}

func (x *xoauth2Server) Next(resp []byte) ([]byte, bool, error) {
	if x.failed {
		return nil, true, &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "invalid credentials"}
	}
	if resp == nil {
		return []byte{}, false, nil
	}
	var user, token string
	for _, kv := range bytes.Split(resp, []byte{0x01}) {
		if v, ok := bytes.CutPrefix(kv, []byte("user=")); ok {
			user = string(v)
		}
		if v, ok := bytes.CutPrefix(kv, []byte("auth=Bearer ")); ok {
			token = string(v)
		}
	}
	if user != "" && token != "" && x.check(token, user) {
		x.ok()
		return nil, true, nil
	}
	x.failed = true
	return []byte(`{"status":"401","schemes":"Bearer","scope":"https://mail.google.com/"}`), false, nil
}

func connectedSource(t *testing.T, srv *oauthtest.Server) *oauth.Source {
	t.Helper()
	p := oauth.Custom(srv.AuthURL(), srv.TokenURL(), srv.DeviceAuthURL(), srv.RevokeURL(), []string{"mail"})
	m, err := oauth.NewManager([]oauth.Account{{Name: "work", Provider: p, ClientID: srv.ClientID()}}, oauth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectDevice(context.Background(), "work", oauth.DeviceOptions{
		Show:  func(oauth.DeviceCode) error { srv.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}
	src, err := m.Source("work", oauth.Mail)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestSenderOAuth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		offered []string
		want    string
	}{
		{[]string{"PLAIN", "XOAUTH2", "OAUTHBEARER"}, "OAUTHBEARER"},
		{[]string{"XOAUTH2"}, "XOAUTH2"}, // Microsoft 365 offers only this
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			prov := oauthtest.New(oauthtest.Options{User: "me@home.org"})
			t.Cleanup(prov.Close)
			src := connectedSource(t, prov)
			be := &oauthBackend{mechs: tc.offered, in: introspector{prov.IntrospectURL()}}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := smtp.NewServer(be)
			srv.Domain, srv.AllowInsecureAuth = "localhost", true
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			acct := Account{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, Security: "none", Username: "me@home.org", Tokens: src}
			s := &Sender{Account: func(string) (Account, error) { return acct, nil }}
			ctx := context.Background()
			j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "mailops.db"), nil, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { j.Close() })
			d := journal.Draft{From: "me@home.org", To: []string{"ann@x.org"}, Subject: "Hello", Body: "Hi Ann"}

			op, err := j.Send(ctx, journal.KindSend, "work", d, s)
			if err != nil || op.State != journal.StateSent {
				t.Fatalf("valid token: op = %+v, %v", op, err)
			}
			// Expired early at the provider: refused, refreshed once, sent.
			prov.ExpireAccessTokens()
			before := prov.Stats().Refreshes
			op, err = j.Send(ctx, journal.KindSend, "work", d, s)
			if err != nil || op.State != journal.StateSent {
				t.Fatalf("after expiry: op = %+v, %v", op, err)
			}
			if n := prov.Stats().Refreshes - before; n != 1 {
				t.Errorf("%d refreshes after expiry, want 1", n)
			}
			be.mu.Lock()
			used := strings.Join(be.used, ",")
			be.mu.Unlock()
			if used != tc.want+","+tc.want {
				t.Errorf("mechanisms used = %s", used)
			}
			if len(be.received) != 2 {
				t.Errorf("server received %d messages", len(be.received))
			}
			// Revoked: nothing is sent, and the failure names the fix.
			prov.RevokeAll()
			op, _ = j.Send(ctx, journal.KindSend, "work", d, s)
			if op.State != journal.StateFailed || !strings.Contains(op.Error, "hestia accounts connect work") {
				t.Errorf("after revocation: %+v", op)
			}
			if len(be.received) != 2 {
				t.Errorf("a message went out after revocation")
			}
		})
	}
}

// A server without an OAuth mechanism is refused before any token is sent.
func TestSenderOAuthNoMechanism(t *testing.T) {
	t.Parallel()
	prov := oauthtest.New(oauthtest.Options{})
	t.Cleanup(prov.Close)
	src := connectedSource(t, prov)
	be := &oauthBackend{mechs: []string{"PLAIN"}, in: introspector{prov.IntrospectURL()}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := smtp.NewServer(be)
	srv.Domain, srv.AllowInsecureAuth = "localhost", true
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	acct := Account{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, Security: "none", Username: "u", Tokens: src}
	err = (&Sender{Account: func(string) (Account, error) { return acct, nil }}).Send(context.Background(), "work", journal.Draft{From: "a@b", To: []string{"c@d"}}, []byte("x"))
	var se *journal.SendError
	if !errors.As(err, &se) || se.Delivered != "no" || !strings.Contains(err.Error(), "neither OAUTHBEARER nor XOAUTH2") {
		t.Fatalf("err = %v", err)
	}
}
