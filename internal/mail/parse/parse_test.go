package parse

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const corpora = "../../../../shared/corpora"

func corpus(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(corpora, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("corpus %s not present", rel)
	}
	return p
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseMultipart(t *testing.T) {
	t.Parallel()
	m, err := Parse(mustRead(t, "testdata/multipart.eml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "café plans" {
		t.Errorf("subject = %q", m.Subject)
	}
	if m.MessageID != "a1@example.org" {
		t.Errorf("message-id = %q", m.MessageID)
	}
	if len(m.From) != 1 || m.From[0] != (Address{Name: "Ann", Addr: "ann@example.org"}) {
		t.Errorf("from = %+v", m.From)
	}
	if !strings.Contains(m.Text, "café opens") {
		t.Errorf("text = %q (latin-1 QP not decoded)", m.Text)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Filename != "plan.pdf" || string(m.Attachments[0].Data) != "%PDF-1.4\n" {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	if want := time.Date(2026, 2, 3, 9, 0, 0, 0, time.UTC); !m.Date.Equal(want) {
		t.Errorf("date = %v", m.Date)
	}
	if len(m.Problems) != 0 {
		t.Errorf("problems = %v", m.Problems)
	}
}

func TestParseBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		raw     string
		wantErr bool
		check   func(*Message) bool
	}{
		{"empty", "", true, nil},
		{"blank", "\n\n  \n", true, nil},
		{"no header", "just some text\nwithout fields\n", false, func(m *Message) bool { return strings.Contains(m.Text, "just some text") }},
		{"bad header line", "Subject: kept\nthis is not a header\nFrom: a@b.c\n\nbody\n", false, func(m *Message) bool { return m.Subject == "kept" && len(m.Problems) > 0 }},
		{"bad address", "From: Foo, Bar <foo@x.org>\nSubject: s\n\nb\n", false, func(m *Message) bool {
			return len(m.From) > 0 && m.From[len(m.From)-1].Addr == "foo@x.org"
		}},
		{"bad date", "Date: yesterday-ish\nSubject: s\n\nb\n", false, func(m *Message) bool { return m.Date.IsZero() && len(m.Problems) == 1 }},
		{"unknown charset", "Content-Type: text/plain; charset=x-klingon\n\nplain words\n", false, func(m *Message) bool { return strings.Contains(m.Text, "plain words") }},
		{"multipart without boundary", "Content-Type: multipart/mixed\n\n--x\n\nhello\n", false, func(m *Message) bool { return true }},
		{"html only", "Content-Type: text/html\n\n<html><style>x{}</style><p>Hi &amp; bye</p><br>next</html>", false, func(m *Message) bool {
			return m.HTMLOnly && m.Text == "Hi & bye\n\nnext"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse([]byte(c.raw), Options{})
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, c.wantErr)
			}
			if c.check != nil && !c.check(m) {
				t.Errorf("unexpected result %+v", m)
			}
		})
	}
}

// TestCorporaNoFailures parses every message of the malformed-MIME corpora:
// none may panic or be rejected outright, and known headers decode.
func TestCorporaNoFailures(t *testing.T) {
	t.Parallel()
	dirs := []string{
		"enmime/testdata/mail",
		"mimekit/UnitTests/TestData/messages",
		"cpython-email/usr/lib/python3.11/test/test_email/data",
		"spamassassin-tdata/t/data",
		"notmuch/test/corpora",
	}
	total := 0
	for _, d := range dirs {
		root := filepath.Join(corpora, d)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			raw := mustRead(t, p)
			if !LooksLikeMessage(raw) {
				return nil
			}
			total++
			if _, err := Parse(raw, Options{}); err != nil {
				t.Errorf("%s: %v", p, err)
			}
			return nil
		})
	}
	if total == 0 {
		t.Skip("no corpora present")
	}
	t.Logf("parsed %d corpus messages", total)
}

func TestCorpusHeaders(t *testing.T) {
	t.Parallel()
	cases := []struct{ file, subject, text string }{
		{"enmime/testdata/mail/qp-utf8-header.raw", "MIME UTF8 Test ¢ More Text", ""},
		{"mimekit/UnitTests/TestData/messages/japanese.txt", "日本語メールテスト (testing Japanese emails)", ""},
		{"enmime/testdata/mail/html-only-inline.raw", "", "Test"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			t.Parallel()
			m, err := Parse(mustRead(t, corpus(t, c.file)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.subject != "" && m.Subject != c.subject {
				t.Errorf("subject = %q, want %q", m.Subject, c.subject)
			}
			if c.text != "" && !strings.Contains(m.Text, c.text) {
				t.Errorf("text %q lacks %q", m.Text, c.text)
			}
		})
	}
}

func TestMboxOffsetsMatchMimekit(t *testing.T) {
	t.Parallel()
	dir := corpus(t, "mimekit/UnitTests/TestData/mbox")
	var want []struct {
		MboxMarkerOffset int64 `json:"mboxMarkerOffset"`
	}
	if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "content-length.unix-offsets.json")), &want); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "content-length.mbox.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewMboxReader(f, 0)
	var got []int64
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(m.Raw, Options{}); err != nil {
			t.Errorf("message at %d: %v", m.Offset, err)
		}
		got = append(got, m.Offset)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i].MboxMarkerOffset {
			t.Errorf("message %d at %d, want %d", i, got[i], want[i].MboxMarkerOffset)
		}
	}
}

func TestMboxQuoting(t *testing.T) {
	t.Parallel()
	r := NewMboxReader(bytes.NewReader(mustRead(t, "testdata/two.mbox")), 0)
	a, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(a.Raw), "body one\nFrom the start\n") {
		t.Errorf("first = %q", a.Raw)
	}
	b, err := r.Next()
	if err != nil || !strings.Contains(string(b.Raw), "Subject: two") {
		t.Fatalf("second = %v %v", b, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("third: %v, want EOF", err)
	}
	if _, err := NewMboxReader(strings.NewReader("Subject: x\n\n"), 0).Next(); err != ErrNotMbox {
		t.Errorf("non-mbox: %v", err)
	}
}

func TestEmlx(t *testing.T) {
	t.Parallel()
	e, err := ParseEmlx(mustRead(t, "testdata/seed.emlx"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Flags.Seen || !e.Flags.Flagged || e.Flags.Answered {
		t.Errorf("flags = %+v", e.Flags)
	}
	m, err := Parse(e.Message, Options{})
	if err != nil || m.Subject != "emlx seed" || m.Text != "Hello from Mail.app." {
		t.Fatalf("message = %+v, %v", m, err)
	}
	if _, err := ParseEmlx([]byte("no count\n"), false); err != ErrNotEmlx {
		t.Errorf("bad emlx: %v", err)
	}
	// Real Apple Mail files, including partial downloads and broken ones.
	root := filepath.Join(corpora, "emlx")
	if _, err := os.Stat(root); err != nil {
		return
	}
	n := 0
	filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".emlx") {
			return nil
		}
		e, err := ParseEmlx(mustRead(t, p), strings.HasSuffix(p, ".partial.emlx"))
		if err != nil {
			return nil // broken*.emlx are expected to be rejected
		}
		if _, err := Parse(e.Message, Options{}); err != nil && err != ErrEmpty {
			t.Errorf("%s: %v", p, err)
		}
		n++
		return nil
	})
	if n < 10 {
		t.Errorf("only %d emlx files parsed", n)
	}
	e, err = ParseEmlx(mustRead(t, filepath.Join(root, "mikez/tests/plaintext.emlx")), false)
	if err != nil {
		t.Fatal(err)
	}
	m, _ = Parse(e.Message, Options{})
	if m.Subject != "Re: Emlx library" || m.InReplyTo[0] != "6FA2F219-2B7C-4962-9724-E9399409CCBE@example.com" || e.ConversationID != 123456 {
		t.Errorf("plaintext.emlx: %q %v %d", m.Subject, m.InReplyTo, e.ConversationID)
	}
}

func TestMaildirFlags(t *testing.T) {
	t.Parallel()
	f := MaildirFlags("1700000000.M1P2.host:2,FRS")
	if !f.Seen || !f.Answered || !f.Flagged || f.Draft || f.Deleted {
		t.Errorf("flags = %+v", f)
	}
	if MaildirBase("abc:2,S") != "abc" || MaildirBase("abc") != "abc" {
		t.Error("MaildirBase")
	}
	if (MaildirFlags("abc") != Flags{}) {
		t.Error("no suffix must mean no flags")
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/multipart.eml", "testdata/two.mbox", "testdata/seed.emlx", "testdata/broken.eml",
		"testdata/html-then-footer.eml", "testdata/html-unclosed-head.eml", "testdata/qp-invalid-escape.eml"} {
		f.Add(mustRead(f, p))
	}
	f.Add([]byte("Content-Type: multipart/alternative; boundary=a\n\n--a\nContent-Type: text/html; charset=iso-2022-jp\n\n<p>x\n--a--"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Parse(raw, Options{MaxParts: 50})
		if err == nil && m == nil {
			t.Fatal("nil message without error")
		}
		if err == nil && (!utf8.ValidString(m.Subject) || !utf8.ValidString(m.Text)) {
			t.Fatalf("invalid UTF-8 kept: %q %q", m.Subject, m.Text)
		}
	})
}

func FuzzEmlx(f *testing.F) {
	f.Add(mustRead(f, "testdata/seed.emlx"))
	f.Add([]byte("5\nabc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEmlx(data, false)
		if err == nil && len(e.Message) > len(data) {
			t.Fatal("message longer than input")
		}
	})
}

func FuzzMbox(f *testing.F) {
	f.Add(mustRead(f, "testdata/two.mbox"))
	f.Add([]byte("From x\n\nFrom y\n>From z\n"))
	f.Add([]byte("From a@b Mon Jan  1 00:00:00 2001\nContent-Length: 30\n\nFrom c@d Mon Jan  1 00:00:00 2001\n\nFrom - \nX: y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewMboxReader(bytes.NewReader(data), 1<<16)
		total := 0
		for i := 0; i < 10000; i++ {
			m, err := r.Next()
			if err != nil {
				return
			}
			total += len(m.Raw)
			if total > len(data) {
				t.Fatal("mbox produced more bytes than it read")
			}
		}
		t.Fatal("mbox reader did not terminate")
	})
}
