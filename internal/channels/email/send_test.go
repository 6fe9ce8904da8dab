package email

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/email/emailtest"
)

// smtpAdapter is an adapter whose SMTP server is the scriptable fake.
func smtpAdapter(t *testing.T, mod func(*Config)) (*Adapter, *emailtest.SMTP) {
	t.Helper()
	s := emailtest.StartSMTP(t, emailtest.SMTPOptions{Username: "hestia", Password: "pw"})
	a := testAdapter(t, func(c *Config) {
		c.SMTP.Port = s.Port
		c.Timeout = 5 * time.Second
		if mod != nil {
			mod(c)
		}
	})
	return a, s
}

const replyTo = `{"id":"CAF=m2+owner@mail.example.org","refs":["CAF=m1+owner@mail.example.org","hestia.4f1c2a0e9b7d3e55@example.org","CAF=m2+owner@mail.example.org"],"subj":"Re: Dinner on Friday?"}`

func TestSendThreadsTheReply(t *testing.T) {
	t.Parallel()
	a, s := smtpAdapter(t, nil)
	conv := ownerAddr + " <CAF=m1+owner@mail.example.org>"
	ref, err := a.Send(context.Background(), conv, channels.Outgoing{Key: "email:re:<CAF=m2+owner@mail.example.org>", Text: "Done: **booked** for 20:00.\n\nCiao 👋", ReplyTo: replyTo})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Received()
	if len(got) != 1 || s.Logins() != 1 {
		t.Fatalf("received %d messages after %d logins", len(got), s.Logins())
	}
	if got[0].From != hestiaAddr || len(got[0].To) != 1 || got[0].To[0] != ownerAddr {
		t.Errorf("envelope %s → %v", got[0].From, got[0].To)
	}
	m, err := mail.ReadMessage(strings.NewReader(string(got[0].Raw)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Message-Id":               ref,
		"In-Reply-To":              "<CAF=m2+owner@mail.example.org>",
		"References":               "<CAF=m1+owner@mail.example.org> <hestia.4f1c2a0e9b7d3e55@example.org> <CAF=m2+owner@mail.example.org>",
		"Subject":                  "Re: Dinner on Friday?",
		"Auto-Submitted":           "auto-replied",
		"X-Auto-Response-Suppress": "All",
		"Mime-Version":             "1.0",
	}
	for k, v := range want {
		if got := m.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !strings.HasPrefix(ref, "<hestia.") || !strings.HasSuffix(ref, "@example.org>") {
		t.Errorf("Message-ID %q", ref)
	}
	if ct, params, _ := mime.ParseMediaType(m.Header.Get("Content-Type")); ct != "text/plain" || params["charset"] != "utf-8" {
		t.Errorf("Content-Type %q", m.Header.Get("Content-Type"))
	}
	if d, err := m.Header.Date(); err != nil || !d.Equal(testNow) {
		t.Errorf("Date %v %v", d, err)
	}
	if rt, _ := m.Header.AddressList("Reply-To"); len(rt) != 1 || rt[0].Address != taggedAddr {
		t.Errorf("Reply-To = %v", rt)
	}
	raw := string(got[0].Raw)
	if !strings.Contains(raw, "Content-Transfer-Encoding: quoted-printable") || !strings.Contains(raw, "=F0=9F=91=8B") {
		t.Errorf("body not quoted-printable UTF-8:\n%s", raw)
	}
	// The same key gives the same Message-ID: a resend is the same message.
	ref2, err := a.Send(context.Background(), conv, channels.Outgoing{Key: "email:re:<CAF=m2+owner@mail.example.org>", Text: "Done", ReplyTo: replyTo})
	if err != nil || ref2 != ref {
		t.Errorf("resend ref = %q %v, want %q", ref2, err, ref)
	}
	if ref3, _ := a.Send(context.Background(), conv, channels.Outgoing{Key: "other", Text: "x", ReplyTo: replyTo}); ref3 == ref {
		t.Error("another key gave the same Message-ID")
	}
}

func TestComposeShapes(t *testing.T) {
	t.Parallel()
	a := testAdapter(t, func(c *Config) { c.SecretTag = ""; c.FromName = "Hestia Ünïcode" })
	conv := ownerAddr + " <root@x.org>"
	read := func(t *testing.T, m channels.Outgoing) *mail.Message {
		t.Helper()
		raw, _, err := a.compose(conv, ownerAddr, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\r\n") {
			if len(line) > 998 {
				t.Fatalf("line of %d bytes", len(line))
			}
		}
		msg, err := mail.ReadMessage(strings.NewReader(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	t.Run("no reply data: the thread root", func(t *testing.T) {
		m := read(t, channels.Outgoing{Key: "k1", Text: "hi"})
		if m.Header.Get("In-Reply-To") != "<root@x.org>" || m.Header.Get("References") != "<root@x.org>" || m.Header.Get("Subject") != "Re: Hestia" {
			t.Errorf("headers %v", m.Header)
		}
		if m.Header.Get("Reply-To") != "" {
			t.Error("Reply-To without a secret tag")
		}
		dec := new(mime.WordDecoder)
		if from, _ := dec.DecodeHeader(m.Header.Get("From")); !strings.Contains(from, "Hestia Ünïcode") || !strings.Contains(from, hestiaAddr) {
			t.Errorf("From %q", from)
		}
	})
	t.Run("damaged reply data", func(t *testing.T) {
		m := read(t, channels.Outgoing{Key: "k2", Text: "hi", ReplyTo: "{not json"})
		if m.Header.Get("In-Reply-To") != "<root@x.org>" {
			t.Errorf("In-Reply-To %q", m.Header.Get("In-Reply-To"))
		}
	})
	t.Run("hostile ids are dropped", func(t *testing.T) {
		m := read(t, channels.Outgoing{Key: "k3", Text: "hi", ReplyTo: `{"id":"a@b>\r\nBcc: victim@x","refs":["ok@x.org","bad id@x","noat"],"subj":"Hi\r\nBcc: victim@example.net"}`})
		if m.Header.Get("Bcc") != "" || m.Header.Get("In-Reply-To") != "" || m.Header.Get("References") != "<ok@x.org>" {
			t.Errorf("headers %v", m.Header)
		}
		if s := m.Header.Get("Subject"); strings.ContainsAny(s, "\r\n") || !strings.HasPrefix(s, "Re: Hi") {
			t.Errorf("Subject %q", s)
		}
	})
	t.Run("subject prefixes", func(t *testing.T) {
		for in, want := range map[string]string{"RE: x": "Re: x", "re:x": "Re:x", "Fwd: y": "Re: Fwd: y", "": "Re: Hestia", "  a \t b ": "Re: a b"} {
			if got := replySubject(in); got != want {
				t.Errorf("replySubject(%q) = %q, want %q", in, got, want)
			}
		}
		enc := read(t, channels.Outgoing{Key: "k4", Text: "x", ReplyTo: `{"id":"a@b","subj":"Cena venerdì? 🍝"}`})
		dec := new(mime.WordDecoder)
		if s, _ := dec.DecodeHeader(enc.Header.Get("Subject")); s != "Re: Cena venerdì? 🍝" {
			t.Errorf("Subject %q", s)
		}
	})
	t.Run("long text is truncated", func(t *testing.T) {
		m := read(t, channels.Outgoing{Key: "k5", Text: strings.Repeat("ä", MaxText+500) + strings.Repeat("x", 5000)})
		body, _ := io.ReadAll(m.Body)
		// quoted-printable of "ä" is "=C3=A4"; decode by re-reading with
		// go-message would be fuller, counting runes of the decoded form
		// is what matters: at most MaxText.
		dec := decodeQP(t, string(body))
		if n := utf8.RuneCountInString(dec); n > MaxText || !strings.HasSuffix(dec, "…") {
			t.Errorf("body of %d runes", n)
		}
	})
}

func decodeQP(t *testing.T, s string) string {
	t.Helper()
	r := strings.NewReplacer("=\r\n", "")
	s = r.Replace(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '=' && i+2 < len(s) {
			var v byte
			for _, c := range []byte(s[i+1 : i+3]) {
				v <<= 4
				switch {
				case c >= '0' && c <= '9':
					v |= c - '0'
				case c >= 'A' && c <= 'F':
					v |= c - 'A' + 10
				}
			}
			b.WriteByte(v)
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conv := ownerAddr + " <root@x.org>"
	out := channels.Outgoing{Key: "k", Text: "hi", ReplyTo: replyTo}
	t.Run("recipient refused is permanent", func(t *testing.T) {
		t.Parallel()
		a, s := smtpAdapter(t, nil)
		s.FailNext("RCPT", 550, [3]int{5, 1, 1}, "No such user")
		_, err := a.Send(ctx, conv, out)
		if !isPermanent(err) || !strings.Contains(err.Error(), "RCPT TO owner@example.org") || !strings.Contains(err.Error(), "No such user") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("message refused is permanent", func(t *testing.T) {
		t.Parallel()
		a, s := smtpAdapter(t, nil)
		s.FailNext("DATA", 554, [3]int{5, 7, 1}, "Message rejected as spam")
		if _, err := a.Send(ctx, conv, out); !isPermanent(err) || !strings.Contains(err.Error(), "end of DATA") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("rate limit waits", func(t *testing.T) {
		t.Parallel()
		a, s := smtpAdapter(t, nil)
		s.FailNext("MAIL", 450, [3]int{4, 7, 1}, "Too many messages, slow down")
		_, err := a.Send(ctx, conv, out)
		var ra *channels.RetryAfterError
		if !errors.As(err, &ra) || ra.After != time.Minute || isPermanent(err) {
			t.Errorf("err = %v", err)
		}
		// The next attempt goes through.
		if _, err := a.Send(ctx, conv, out); err != nil || len(s.Received()) != 1 {
			t.Errorf("retry: %v, %d received", err, len(s.Received()))
		}
	})
	t.Run("service unavailable waits", func(t *testing.T) {
		t.Parallel()
		a, s := smtpAdapter(t, nil)
		s.FailNext("RCPT", 421, [3]int{4, 3, 2}, "Service shutting down")
		var ra *channels.RetryAfterError
		if _, err := a.Send(ctx, conv, out); !errors.As(err, &ra) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("other temporary failure retries", func(t *testing.T) {
		t.Parallel()
		a, s := smtpAdapter(t, nil)
		s.FailNext("DATA", 432, [3]int{4, 3, 0}, "Try later")
		_, err := a.Send(ctx, conv, out)
		var ra *channels.RetryAfterError
		if err == nil || isPermanent(err) || errors.As(err, &ra) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("wrong password retries and says so", func(t *testing.T) {
		t.Parallel()
		a, s := smtpAdapter(t, func(c *Config) { c.Password = "wrong" })
		_, err := a.Send(ctx, conv, out)
		if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "SMTP login as hestia") || strings.Contains(err.Error(), "wrong") {
			t.Errorf("err = %v", err)
		}
		if len(s.Received()) != 0 {
			t.Error("sent without a login")
		}
	})
	t.Run("server down", func(t *testing.T) {
		t.Parallel()
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		a := testAdapter(t, func(c *Config) { c.SMTP.Port = port; c.Timeout = time.Second })
		_, err := a.Send(ctx, conv, out)
		if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "connecting to SMTP") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		// A server that accepts and never greets: ctx ends the wait.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		a := testAdapter(t, func(c *Config) { c.SMTP.Port = ln.Addr().(*net.TCPAddr).Port })
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := a.Send(cctx, conv, out); err == nil || time.Since(start) > 5*time.Second {
			t.Errorf("err = %v after %s", err, time.Since(start))
		}
	})
	t.Run("unverified sender is never mailed", func(t *testing.T) {
		t.Parallel()
		a, s := smtpAdapter(t, nil)
		_, err := a.Send(ctx, "unverified:"+ownerAddr+" <root@x.org>", out)
		if !isPermanent(err) || !strings.Contains(err.Error(), "not proven") || len(s.Received()) != 0 {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("bad conversation", func(t *testing.T) {
		t.Parallel()
		a, _ := smtpAdapter(t, nil)
		for _, c := range []string{"", "owner@example.org", "a\r\nb@x <r@x>", "nobody <r@x>"} {
			if _, err := a.Send(ctx, c, out); !isPermanent(err) {
				t.Errorf("Send(%q) = %v", c, err)
			}
		}
	})
}

func TestPlatformBasics(t *testing.T) {
	t.Parallel()
	a := testAdapter(t, nil)
	if a.Name() != "email" || a.Kind() != "email" {
		t.Errorf("name %q kind %q", a.Name(), a.Kind())
	}
	l := a.Limits()
	if l.MaxText != MaxText || l.Edit || l.Buttons || l.Reactions || l.Idempotent {
		t.Errorf("limits %+v", l)
	}
	if err := a.Edit(context.Background(), "c", "r", channels.Outgoing{}); !errors.Is(err, channels.ErrUnsupported) {
		t.Errorf("Edit = %v", err)
	}
	if a.ownMessageID("hestia.abc@example.org") != true || a.ownMessageID("hestia.abc@other.org") || a.ownMessageID("abc@example.org") {
		t.Error("ownMessageID")
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	base := func() Config {
		return Config{Address: hestiaAddr, Password: "pw", SecretTag: testTag,
			IMAP: Server{Host: "127.0.0.1", Port: 143, Security: "none"}, SMTP: Server{Host: "127.0.0.1", Port: 25, Security: "none"}}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for name, mod := range map[string]func(*Config){
		"no proof":         func(c *Config) { c.SecretTag = "" },
		"short tag":        func(c *Config) { c.SecretTag = "abc" },
		"tag with plus":    func(c *Config) { c.SecretTag = "abcdefghijklmnop+" },
		"bad address":      func(c *Config) { c.Address = "hestia" },
		"plain remote":     func(c *Config) { c.SMTP.Host = "mail.example.org" },
		"unknown security": func(c *Config) { c.IMAP.Security = "ssl" },
		"no imap port":     func(c *Config) { c.IMAP.Port = 0 },
	} {
		c := base()
		mod(&c)
		if _, err := New(c, log); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), testTag) {
			t.Errorf("%s: error shows the tag: %v", name, err)
		}
	}
	a, err := New(base(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.Username != hestiaAddr || a.cfg.Mailbox != "INBOX" || a.cfg.MessageIDDomain != "example.org" {
		t.Errorf("defaults %+v", a.cfg)
	}
}
