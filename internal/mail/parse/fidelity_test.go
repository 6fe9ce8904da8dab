package parse

import (
	"io"
	"strings"
	"testing"
)

// Issue 34 items 1–3: shapes of real-world mail whose body text was lost.
func TestBodyFidelity(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file    string
		want    []string // each must appear in Text
		notWant []string
	}{
		// An HTML body followed by a short inline text/plain footer in a
		// multipart/mixed: both are the body, in order.
		{"testdata/html-then-footer.eml", []string{"quarterly figures are attached", "Revenue grew 12%", "Sent via ListServ"}, []string{"<p>"}},
		// <head> never closed: the body after it is still the body.
		{"testdata/html-unclosed-head.eml", []string{"Your order 4711 has shipped."}, []string{"track()"}},
		// Invalid quoted-printable escapes are kept literally and decoding
		// goes on to the end.
		{"testdata/qp-invalid-escape.eml", []string{"café newsletter", "==========", "5=zz", "tomato harvest starts on Monday"}, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			m, err := Parse(mustRead(t, c.file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(m.Text, w) {
					t.Errorf("text lacks %q:\n%s", w, m.Text)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(m.Text, w) {
					t.Errorf("text holds %q:\n%s", w, m.Text)
				}
			}
		})
	}
}

// Alternatives stay alternatives: the plain part is chosen, the HTML copy
// of the same text is not appended, also when the HTML sits in a
// multipart/related inside the alternative; a trailing footer is kept.
func TestAlternativeNotDuplicated(t *testing.T) {
	t.Parallel()
	raw := "Subject: x\nContent-Type: multipart/mixed; boundary=m\n\n" +
		"--m\nContent-Type: multipart/alternative; boundary=a\n\n" +
		"--a\nContent-Type: text/plain\n\nplain words\n" +
		"--a\nContent-Type: multipart/related; boundary=r\n\n" +
		"--r\nContent-Type: text/html\n\n<p>html words</p>\n" +
		"--r\nContent-Type: image/png\nContent-Disposition: inline; filename=a.png\n\nPNG\n--r--\n" +
		"--a--\n" +
		"--m\nContent-Type: text/plain\n\nthe footer\n--m--\n"
	m, err := Parse([]byte(raw), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != "plain words\nthe footer" {
		t.Errorf("text = %q, want the plain alternative then the footer", m.Text)
	}
	if m.HTMLOnly {
		t.Error("HTMLOnly set though the text came from plain parts")
	}
}

func TestHTMLToTextBrokenHead(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"<html><head><title>T</title><body>Hello there</body></html>", "Hello there"},
		{"<head><body>Hello there</body></head>", "Hello there"},
		{"<HEAD><META x=1><BODY>Hello <SCRIPT>bad()</SCRIPT>there</BODY>", "Hello there"},
		{"<head><style>p{}</style></head><body>Hello there</body>", "Hello there"},
		{"<script>a()</script>Hello <style>p{}</style>there", "Hello there"},
		{"<title>T</title><p>Hello there", "Hello there"},
		{"no markup at all", "no markup at all"},
	}
	for _, c := range cases {
		if got := HTMLToText(c.in); got != c.want {
			t.Errorf("HTMLToText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLenientQP(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"a=3Db\n", "a=b\n"},
		{"a=3db\n", "a=b\n"},
		{"soft=\nbreak\n", "softbreak\n"},
		{"soft= \t\r\nbreak\r\n", "softbreak\r\n"},
		{"====\nrest\n", "===rest\n"},
		{"x=\ry\n", "x=\ry\n"},
		{"5=zz and =4\n", "5=zz and =4\n"},
		{"trailing space   \nnext", "trailing space\nnext"},
		{"ctl\x0cbyte\n", "ctl\x0cbyte\n"},
		{"end=", "end"},
		{"", ""},
	}
	for _, c := range cases {
		got, err := io.ReadAll(newLenientQP(strings.NewReader(c.in)))
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("decode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
