package parse

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func mustParse(t *testing.T, raw string) *Message {
	t.Helper()
	m, err := Parse([]byte(raw), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func validUTF8(t *testing.T, m *Message) {
	t.Helper()
	fields := []string{m.Subject, m.Text}
	for _, l := range [][]Address{m.From, m.To, m.Cc, m.ReplyTo} {
		for _, a := range l {
			fields = append(fields, a.Name, a.Addr)
		}
	}
	for _, a := range m.Attachments {
		fields = append(fields, a.Filename)
	}
	for _, f := range fields {
		if !utf8.ValidString(f) {
			t.Errorf("invalid UTF-8 stored: %q", f)
		}
	}
}

func TestEncodedWordsInQuotedNames(t *testing.T) {
	t.Parallel()
	m := mustParse(t, "From: \"=?iso-2022-jp?B?GyRCJUYlOSVIQkBPOhsoQg==?=\" <Taro.Yamada@Example.JP>\n"+
		"To: \"=?utf-8?Q?Ren=C3=A9e?= Smith\" <renee@x.org>, plain@x.org\nSubject: hi\n\nbody\n")
	if len(m.From) != 1 || m.From[0].Name != "テスト太郎" {
		t.Errorf("from = %+v", m.From)
	}
	if m.From[0].Addr != "Taro.Yamada@example.jp" {
		t.Errorf("addr = %q: keep the local part's case, lower the domain", m.From[0].Addr)
	}
	if len(m.To) != 2 || m.To[0].Name != "Renée Smith" || m.To[1].Addr != "plain@x.org" {
		t.Errorf("to = %+v", m.To)
	}
	validUTF8(t, m)
}

func TestRawEightBitHeaders(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, raw, subject, fromName string
	}{
		{"latin-1 declared", "From: Jos\xe9 <j@x.org>\nSubject: Caf\xe9 cr\xe8me\nContent-Type: text/plain; charset=iso-8859-1\n\nCaf\xe9\n", "Café crème", "José"},
		{"shift_jis declared", "From: a@x.org\nSubject: \x8c\x8f\x96\xbc\x83e\x83X\x83g\nContent-Type: text/plain; charset=shift_jis\n\nx\n", "件名テスト", ""},
		{"charset only on a part", "From: a@x.org\nSubject: \x8c\x8f\x96\xbc\x83e\x83X\x83g\nContent-Type: multipart/alternative; boundary=B\n\n--B\nContent-Type: text/plain; charset=\"Shift_JIS\"\n\nx\n--B--\n", "件名テスト", ""},
		{"undeclared", "From: M\xfcller <m@x.org>\nSubject: Gr\xfc\xdfe\n\nx\n", "Grüße", "Müller"},
		{"utf-8 raw", "From: a@x.org\nSubject: déjà vu\n\nx\n", "déjà vu", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := mustParse(t, c.raw)
			if m.Subject != c.subject {
				t.Errorf("subject = %q, want %q", m.Subject, c.subject)
			}
			if c.fromName != "" && (len(m.From) != 1 || m.From[0].Name != c.fromName) {
				t.Errorf("from = %+v", m.From)
			}
			validUTF8(t, m)
		})
	}
}

// An attachment whose headers do not parse (an unquoted file name with a
// space) must stay an attachment, and binary bytes never become text.
func TestBrokenAttachmentHeadersAreSalvaged(t *testing.T) {
	t.Parallel()
	doc := "0M8R4KGxGuEAAAAAAAAAAAAAAAAAAAAAPgADAP7/CQAGAAAAAAAAAAAAAAABAAAA" // an OLE2 (Word) header
	raw := "From: a@x.org\nSubject: cv\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nmy cv attached\n" +
		"--B\nContent-Type: application/msword; name=my cv 2024.doc\nContent-Disposition: attachment; filename=my cv 2024.doc\nContent-Transfer-Encoding: base64\n\n" + doc + "\n" +
		"--B\nContent-Type: text/plain; name=\"data.bin\nContent-Transfer-Encoding: base64\n\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n--B--\n"
	m := mustParse(t, raw)
	if m.Text != "my cv attached" {
		t.Errorf("text = %q", m.Text)
	}
	if len(m.Attachments) != 2 {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	a := m.Attachments[0]
	if a.Filename != "my cv 2024.doc" || a.ContentType != "application/msword" || a.Size != 48 {
		t.Errorf("salvaged attachment = %q %q %d", a.Filename, a.ContentType, a.Size)
	}
	if b := m.Attachments[1]; b.ContentType != "application/octet-stream" || b.Size != 32 {
		t.Errorf("binary text part = %q %q %d", b.Filename, b.ContentType, b.Size)
	}
	validUTF8(t, m)
}

func TestForwardedMessageIsIndexed(t *testing.T) {
	t.Parallel()
	inner := "Message-ID: <inner@x>\nFrom: Original Sender <orig@y.org>\nTo: a@x.org\nSubject: quarterly numbers\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n" +
		"Content-Type: multipart/mixed; boundary=I\n\n--I\nContent-Type: text/plain\n\nrevenue grew by eleven percent\n--I\nContent-Type: text/csv\nContent-Disposition: attachment; filename=q1.csv\n\na,b\n--I--\n"
	raw := "From: a@x.org\nTo: b@x.org\nSubject: Fwd: quarterly numbers\nContent-Type: multipart/mixed; boundary=O\n\n--O\nContent-Type: text/plain\n\nsee below\n" +
		"--O\nContent-Type: message/rfc822\nContent-Disposition: inline\n\n" + inner + "\n--O--\n"
	m := mustParse(t, raw)
	for _, want := range []string{"see below", "revenue grew by eleven percent", "Original Sender", "quarterly numbers"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.Text)
		}
	}
	var names []string
	for _, a := range m.Attachments {
		names = append(names, a.Filename+"|"+a.ContentType)
	}
	if !strings.Contains(strings.Join(names, ","), "q1.csv|text/csv") {
		t.Errorf("inner attachment missing: %v", names)
	}
	// Nesting is bounded: a message forwarded inside itself 50 times parses.
	deep := "Subject: leaf\n\nbottom text\n"
	for i := 0; i < 50; i++ {
		deep = "Subject: level\nContent-Type: message/rfc822\n\n" + deep
	}
	if _, err := Parse([]byte(deep), Options{}); err != nil {
		t.Fatal(err)
	}
}
