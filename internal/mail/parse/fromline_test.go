package parse

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A Maildir file that starts with an mbox "From " envelope line, as most
// files of the SpamAssassin public corpus do.
const fromLineMessage = "From pertand@email.example.com  Fri Aug 31 13:39:16 2001\n" +
	"Return-Path: <pertand@email.example.com>\n" +
	"Message-Id: <78w08.t365th3y6x7h@example.com>\n" +
	"From: Renter <Renter989@Example.COM>\n" +
	"To: jenny@example.net\n" +
	"Subject: foo bar\n" +
	"Date: Wed, 29 Aug 2001 04:20:43 -0800\n" +
	"\n" +
	"subscription cancelable at anytime\n"

func TestLeadingFromLineIsSkipped(t *testing.T) {
	t.Parallel()
	for _, nl := range []string{"\n", "\r\n"} {
		raw := strings.ReplaceAll(fromLineMessage, "\n", nl)
		m, err := Parse([]byte(raw), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != "foo bar" || m.MessageID != "78w08.t365th3y6x7h@example.com" {
			t.Errorf("subject %q, message-id %q: the From_ line hid the headers", m.Subject, m.MessageID)
		}
		if len(m.From) != 1 || m.From[0].Addr == "" || len(m.To) != 1 {
			t.Errorf("from %+v to %+v", m.From, m.To)
		}
		if want := time.Date(2001, 8, 29, 12, 20, 43, 0, time.UTC); !m.Date.Equal(want) {
			t.Errorf("date = %v, want %v", m.Date, want)
		}
		if strings.Contains(m.Text, "Subject:") || m.Text != "subscription cancelable at anytime" {
			t.Errorf("text = %q: headers shown as body", m.Text)
		}
		if len(m.Problems) != 0 {
			t.Errorf("problems = %v", m.Problems)
		}
	}
	// The same message without the envelope line is the same message.
	a, _ := Parse([]byte(fromLineMessage), Options{})
	b, _ := Parse([]byte(fromLineMessage[strings.IndexByte(fromLineMessage, '\n')+1:]), Options{})
	if a.RawSHA256 != b.RawSHA256 {
		t.Error("the envelope line changes the content hash")
	}
	// A header named "From:" on the first line is a header, not an envelope.
	c, _ := Parse([]byte("From: a@example.org\nSubject: s\n\nbody\n"), Options{})
	if len(c.From) != 1 || c.Subject != "s" {
		t.Errorf("From: header mistaken for an envelope line: %+v", c)
	}
	if !LooksLikeMessage([]byte(fromLineMessage)) {
		t.Error("LooksLikeMessage rejects a message with an envelope line")
	}
}

func TestSpamAssassinFromLineFiles(t *testing.T) {
	t.Parallel()
	root := corpus(t, "spamassassin-tdata/t/data/spam")
	for _, name := range []string{"009", "002", "005"} {
		raw := mustRead(t, filepath.Join(root, name))
		if !strings.HasPrefix(string(raw), "From ") {
			continue
		}
		m, err := Parse(raw, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.From) == 0 || m.Date.IsZero() || strings.HasPrefix(m.Text, "To:") || strings.Contains(m.Text[:min(len(m.Text), 300)], "\nSubject:") {
			t.Errorf("%s: from %+v date %v text %.80q", name, m.From, m.Date, m.Text)
		}
	}
}
