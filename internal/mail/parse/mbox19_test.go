package parse

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func splitMbox(t *testing.T, data string) []*MboxMessage {
	t.Helper()
	r := NewMboxReader(strings.NewReader(data), 0)
	var out []*MboxMessage
	for {
		m, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		if len(out) > 100 {
			t.Fatal("runaway")
		}
	}
}

func TestMboxSeparatorsFollowRFC4155(t *testing.T) {
	t.Parallel()
	one := "From ann@example.org Tue Feb  3 10:00:00 2026\nFrom: ann@example.org\nSubject: one\n\n" +
		"We met yesterday.\nFrom here on, we use the new address.\n\nFrom what I hear it works.\n\n"
	two := "From bob@example.org Tue Feb  3 11:00:00 2026\nFrom: bob@example.org\nSubject: two\n\nbody two\n"
	msgs := splitMbox(t, one+two)
	if len(msgs) != 2 {
		for _, m := range msgs {
			t.Logf("at %d: %q", m.Offset, m.Raw)
		}
		t.Fatalf("%d messages, want 2: body lines starting with \"From \" split a message", len(msgs))
	}
	if !strings.Contains(string(msgs[0].Raw), "From what I hear it works.") || msgs[1].Offset != int64(len(one)) {
		t.Errorf("first = %q, second at %d", msgs[0].Raw, msgs[1].Offset)
	}
	// Separators of other writers: "From - date" (Mozilla), "From id@xxx" (Gmail Takeout).
	for _, sep := range []string{"From - Mon Jun  3 12:50:27 1996", "From 1844347792267117879@xxx", "From MAILER-DAEMON Fri Jul  8 12:08:34 2011"} {
		data := sep + "\nSubject: a\n\nx\n\n" + sep + "\nSubject: b\n\ny\n"
		if n := len(splitMbox(t, data)); n != 2 {
			t.Errorf("%q: %d messages, want 2", sep, n)
		}
	}
}

func TestMboxContentLength(t *testing.T) {
	t.Parallel()
	body := "Quoting the old archive:\n\nFrom someone@example.org Mon Jan  1 00:00:00 2001\nSubject: inner\n\nstill the same message\n"
	first := fmt.Sprintf("From ann@example.org Tue Feb  3 10:00:00 2026\nSubject: cl\nContent-Length: %d\n\n%s", len(body), body)
	second := "\nFrom bob@example.org Tue Feb  3 11:00:00 2026\nSubject: two\n\nbody two\n"
	msgs := splitMbox(t, first+second)
	if len(msgs) != 2 || !strings.HasSuffix(string(msgs[0].Raw), "still the same message\n") || msgs[1].Offset != int64(len(first)+1) {
		for _, m := range msgs {
			t.Logf("at %d: %q", m.Offset, m.Raw)
		}
		t.Fatalf("%d messages: Content-Length not honoured", len(msgs))
	}
	// A wrong Content-Length (too long, too short) falls back to separators.
	for _, n := range []int{len(body) + len(second) + 500, len(body) + 20, 7} {
		bad := fmt.Sprintf("From ann@example.org Tue Feb  3 10:00:00 2026\nSubject: cl\nContent-Length: %d\n\nshort body\n", n)
		msgs := splitMbox(t, bad+second)
		if len(msgs) != 2 || !strings.Contains(string(msgs[1].Raw), "Subject: two") || msgs[0].Offset != 0 || msgs[1].Offset != int64(len(bad)+1) {
			t.Errorf("content-length %d: %d messages", n, len(msgs))
		}
	}
}

func TestMimekitMboxes(t *testing.T) {
	t.Parallel()
	dir := corpus(t, "mimekit/UnitTests/TestData/mbox")
	for name, want := range map[string]int{"unmunged.mbox.txt": 2, "issue1189.mbox.txt": bytes.Count(mustRead(t, filepath.Join(dir, "issue1189.mbox.txt")), []byte("\nFrom 18")) + 1} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(splitMbox(t, string(data))); got != want {
			t.Errorf("%s: %d messages, want %d", name, got, want)
		}
	}
}

func TestMboxLeadingByteOrderMark(t *testing.T) {
	t.Parallel()
	data := "\xef\xbb\xbfFrom - Mon Jun  3 12:50:27 1996\nSubject: a\n\nx\n\nFrom - Mon Jun  3 12:51:27 1996\nSubject: b\n\ny\n"
	msgs := splitMbox(t, data)
	if len(msgs) != 2 || msgs[0].Offset != 3 || bytes.Contains(msgs[0].Raw, []byte("\xef\xbb\xbf")) {
		t.Fatalf("%d messages, first at %d: %q", len(msgs), msgs[0].Offset, msgs[0].Raw)
	}
}
