package mail

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestSpamAssassinShapedCorpus imports a tree shaped like the public
// SpamAssassin corpus (easy_ham/ and spam/ folders of files that start
// with an mbox envelope line, CRLF files, raw 8-bit headers, broken
// attachments, forwards) and checks what issue 19 found wrong in it.
func TestSpamAssassinShapedCorpus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	write := func(folder, name, raw string) {
		dir := filepath.Join(root, folder, "cur")
		os.MkdirAll(dir, 0o755)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	env := func(from string) string { return "From " + from + "  Thu Aug 22 12:36:23 2002\n" }
	for i := 0; i < 20; i++ {
		date := time.Date(2002, 8, 1+i, 10, 0, 0, 0, time.UTC).Format(time.RFC1123Z)
		raw := env("list@spamassassin.example") + fmt.Sprintf("Message-Id: <ham%d@example.org>\nFrom: Ham Sender%d <Ham.Sender%d@Example.org>\nTo: users@lists.example\nSubject: [SAtalk] rule question %d\nDate: %s\n\nplain ham body %d about bayes\n", i, i, i, i, date, i)
		if i%2 == 1 {
			raw = strings.ReplaceAll(raw, "\n", "\r\n")
		}
		write("easy_ham", fmt.Sprintf("%04d.ham", i), raw)
	}
	d := "Mon, 5 Aug 2002 10:00:00 +0000"
	write("spam", "0001.spam", env("x@y")+"Message-Id: <sp1@x>\nFrom: Deals <deals@spam.example>\nTo: users@lists.example\nSubject: [SAtalk] rule question 3\nDate: "+d+"\n\ncheap pills\n")
	write("spam", "0002.spam", env("x@y")+"Message-Id: <sp2@x>\nFrom: \"=?iso-2022-jp?B?GyRCJUYlOSVIGyhC?=\" <Shop@Spam.Example>\nTo: a@b\nSubject: \x8c\x8f\x96\xbc\nContent-Type: text/plain; charset=shift_jis\nDate: "+d+"\n\nbody\n")
	write("spam", "0003.spam", env("x@y")+"Message-Id: <sp3@x>\nFrom: c@spam.example\nTo: a@b\nSubject: resume\nDate: "+d+"\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nsee the attached file\n--B\nContent-Type: application/msword; name=my resume.doc\nContent-Disposition: attachment; filename=my resume.doc\nContent-Transfer-Encoding: base64\n\n0M8R4KGxGuEAAAAAAAAAAAAAAAAAAAAAPgADAP7/CQAG\n--B--\n")
	write("spam", "0004.spam", env("x@y")+"Message-Id: <sp4@x>\nFrom: d@spam.example\nTo: a@b\nSubject: Fwd: offer\nDate: "+d+"\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nforwarding this\n--B\nContent-Type: message/rfc822\n\nFrom: origin@far.example\nSubject: the original offer\n\nunbelievable prices inside\n--B--\n")

	s := openStore(t, nil)
	p, err := s.Import(ctx, root, ImportOptions{})
	if err != nil || p.Added != 24 || p.Failed != 0 {
		t.Fatalf("import %+v %v", p, err)
	}
	var empty, badUTF8, headerBodies int
	rows, err := s.DB().QueryContext(ctx, `SELECT subject, from_addr, to_addr, hestia_body(body), message_id, date FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var subj, from, to, body, mid string
		var date int64
		rows.Scan(&subj, &from, &to, &body, &mid, &date)
		if subj == "" || from == "" || to == "" || mid == "" || date > time.Date(2003, 1, 1, 0, 0, 0, 0, time.UTC).Unix() {
			empty++
		}
		for _, f := range []string{subj, from, to, body} {
			if !utf8.ValidString(f) {
				badUTF8++
			}
		}
		if strings.Contains(body, "Message-Id:") || strings.Contains(body, "0M8R4") || strings.ContainsRune(body, 0) {
			headerBodies++
		}
	}
	rows.Close()
	if empty != 0 || badUTF8 != 0 || headerBodies != 0 {
		t.Errorf("%d messages lost headers, %d fields are invalid UTF-8, %d bodies hold headers or binary", empty, badUTF8, headerBodies)
	}
	checks := []struct {
		q    Query
		want int
	}{
		{Query{From: "Ham.Sender1"}, 11}, // Sender1, Sender10..19
		{Query{Mailbox: "easy_ham", To: "users@lists"}, 20},
		{Query{Text: "bayes"}, 20},
		{Query{Text: `"rule question 3"`, PerMessage: true}, 2},
		{Query{AttachmentName: "resume.doc"}, 1},
		{Query{Text: "unbelievable prices"}, 1},
		{Query{From: "テスト"}, 1},
		{Query{Subject: "件名"}, 1},
	}
	for _, c := range checks {
		if n := count(t, s, c.q); n != c.want {
			t.Errorf("%+v: %d, want %d", c.q, n, c.want)
		}
	}
	// Spam reusing a list subject never joins the list thread.
	var ham3, spam1 int64
	s.DB().QueryRowContext(ctx, `SELECT thread_id FROM messages WHERE message_id = 'ham3@example.org'`).Scan(&ham3)
	s.DB().QueryRowContext(ctx, `SELECT thread_id FROM messages WHERE message_id = 'sp1@x'`).Scan(&spam1)
	if ham3 == spam1 {
		t.Error("spam joined a ham thread by subject")
	}
	var addr string
	s.DB().QueryRowContext(ctx, `SELECT from_addr FROM messages WHERE message_id = 'ham7@example.org'`).Scan(&addr)
	if addr != "Ham Sender7 <Ham.Sender7@example.org>" {
		t.Errorf("from = %q", addr)
	}
}
