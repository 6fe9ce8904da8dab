package channels_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/channeltest"
)

var attachedLine = regexp.MustCompile(`\[attached: (\S+) — ([^,]+), ([^\]]+)\]`)

// attached returns the paths, types and sizes named in a turn's text.
func attached(text string) [][]string {
	var out [][]string
	for _, m := range attachedLine.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1:])
	}
	return out
}

func waitTurns(t *testing.T, h *harness, n int) []string {
	t.Helper()
	channeltest.WaitFor(t, "the turns", func() bool { texts, _ := h.agent.submits(); return len(texts) >= n })
	texts, _ := h.agent.submits()
	return texts
}

const pdfBytes = "%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"

func TestAttachmentsAreSavedAndNamedInTheTurn(t *testing.T) {
	t.Parallel()
	inbox := filepath.Join(t.TempDir(), "inbox")
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{inbox: inbox})

	// A PDF with a caption, named with folders and odd characters; a
	// photo without a name whose bytes are a PNG though the platform
	// says JPEG; a "PDF" that is a web page.
	u := msg(owner, dm, "summarise this")
	u.Attachments = []channels.Attachment{
		channeltest.File(`..\..\.bashrc/../Report Q3 (final).pdf`, "application/pdf", []byte(pdfBytes), nil),
		channeltest.File("", "image/jpeg", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), nil),
		channeltest.File("invoice.pdf", "application/pdf", []byte("<!DOCTYPE html><html><body>pay now</body></html>"), nil),
	}
	p.Deliver(u)
	texts := waitTurns(t, h, 1)
	if !strings.HasPrefix(texts[0], "summarise this\n\n[attached: ") {
		t.Fatalf("turn text %q", texts[0])
	}
	files := attached(texts[0])
	if len(files) != 3 {
		t.Fatalf("attached lines %q", texts[0])
	}
	day := time.Now().Format("2006-01-02")
	want := []struct{ name, mime, size string }{
		{"001-Report-Q3-(final).pdf", "application/pdf", "45 bytes"},
		{"002-image.png", "image/png", "16 bytes"},
		{"003-invoice.html", "text/html", "48 bytes"},
	}
	for i, w := range want {
		path, mime, size := files[i][0], files[i][1], files[i][2]
		if path != filepath.Join(inbox, "fake", day, w.name) || mime != w.mime || size != w.size {
			t.Errorf("file %d: %s — %s, %s; want %s — %s, %s", i, path, mime, size, w.name, w.mime, w.size)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want owner-only", path, st.Mode().Perm())
		}
	}
	if b, _ := os.ReadFile(files[0][0]); string(b) != pdfBytes {
		t.Errorf("saved PDF holds %q", b)
	}
	for _, d := range []string{inbox, filepath.Join(inbox, "fake"), filepath.Join(inbox, "fake", day)} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("folder %s: %v %v, want owner-only", d, st.Mode(), err)
		}
	}
	if got := h.audit.of("channel.attachment"); len(got) != 3 || got[0]["path"] != files[0][0] || got[0]["mime"] != "application/pdf" ||
		got[0]["size"] != int64(len(pdfBytes)) || got[0]["name"] != `..\..\.bashrc/../Report Q3 (final).pdf` {
		t.Errorf("audited %v", got)
	}

	// Files alone make a turn of their lines; the same name again gets
	// the next number, and a number already taken is skipped.
	if err := os.WriteFile(filepath.Join(inbox, "fake", day, "005-notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	u = msg(owner, dm, "")
	u.Attachments = []channels.Attachment{
		channeltest.File("notes.txt", "text/plain", []byte("first"), nil),
		channeltest.File("notes.txt", "text/plain", []byte("second"), nil),
	}
	p.Deliver(u)
	texts = waitTurns(t, h, 2)
	files = attached(texts[1])
	if !strings.HasPrefix(texts[1], "[attached: ") || len(files) != 2 {
		t.Fatalf("files-only turn %q", texts[1])
	}
	if filepath.Base(files[0][0]) != "006-notes.txt" || filepath.Base(files[1][0]) != "007-notes.txt" || files[0][1] != "text/plain" {
		t.Errorf("collision handling: %q", files)
	}
	if b, _ := os.ReadFile(filepath.Join(inbox, "fake", day, "005-notes.txt")); string(b) != "mine" {
		t.Errorf("an existing file was overwritten: %q", b)
	}
	// The reply arrives as for any turn.
	channeltest.WaitFor(t, "the reply", func() bool { _, ok := p.FindText(dm, "You said: [attached:"); return ok })
}

func TestAttachmentRefusals(t *testing.T) {
	t.Parallel()
	inbox := filepath.Join(t.TempDir(), "inbox")
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{inbox: inbox, maxFile: 1000, maxMessage: 1500})
	var fetched atomic.Int32

	// Too big by the platform's word: refused unfetched.
	u := msg(owner, dm, "")
	big := channeltest.File("big.pdf", "application/pdf", make([]byte, 2000), &fetched)
	u.Attachments = []channels.Attachment{big}
	p.Deliver(u)
	channeltest.WaitFor(t, "the size refusal", func() bool {
		_, ok := p.FindText(dm, "I can't use the file “big.pdf”: it is 2 KB; at most 1000 bytes are accepted per file.")
		return ok
	})
	if fetched.Load() != 0 {
		t.Error("an oversized file was fetched")
	}

	// Too big by its bytes (the platform did not say): refused after
	// at most limit+1 bytes.
	u = msg(owner, dm, "")
	quiet := channeltest.File("quiet.bin", "", make([]byte, 5000), nil)
	quiet.Size = 0
	u.Attachments = []channels.Attachment{quiet}
	p.Deliver(u)
	channeltest.WaitFor(t, "the size refusal after fetching", func() bool { _, ok := p.FindText(dm, "larger than 1000 bytes"); return ok })

	// Over the message's budget: the first file is kept, the second
	// refused, and the turn goes on with the caption and the one file.
	u = msg(owner, dm, "two files")
	u.Attachments = []channels.Attachment{
		channeltest.File("a.txt", "text/plain", []byte(strings.Repeat("a", 900)), nil),
		channeltest.File("b.txt", "text/plain", []byte(strings.Repeat("b", 900)), nil),
	}
	p.Deliver(u)
	channeltest.WaitFor(t, "the message-size refusal", func() bool {
		_, ok := p.FindText(dm, "“b.txt”: the files of one message may weigh 1 KB together")
		return ok
	})
	texts := waitTurns(t, h, 1)
	if files := attached(texts[0]); !strings.HasPrefix(texts[0], "two files\n\n") || len(files) != 1 || filepath.Base(files[0][0]) != "001-a.txt" {
		t.Errorf("turn %q", texts[0])
	}

	// A failed download is said, and nothing is left on disk.
	u = msg(owner, dm, "")
	u.Attachments = []channels.Attachment{{Name: "x.pdf", Size: 10, Fetch: func(context.Context, int64) ([]byte, error) { return nil, errors.New("HTTP 500") }}}
	p.Deliver(u)
	channeltest.WaitFor(t, "the fetch refusal", func() bool { _, ok := p.FindText(dm, "“x.pdf”: fetching it failed."); return ok })

	// An empty file, and one the platform said nothing of.
	u = msg(owner, dm, "")
	u.Attachments = []channels.Attachment{channeltest.File("empty.txt", "", nil, nil), {Name: "ghost"}}
	p.Deliver(u)
	channeltest.WaitFor(t, "the empty and missing refusals", func() bool {
		_, a := p.FindText(dm, "“empty.txt”: it is empty.")
		_, b := p.FindText(dm, "“ghost”: the platform did not hand over the file.")
		return a && b
	})

	// More files than a message may carry.
	u = msg(owner, dm, "")
	for range channels.DefaultMaxFiles + 1 {
		u.Attachments = append(u.Attachments, channeltest.File("n.txt", "text/plain", []byte("n"), nil))
	}
	p.Deliver(u)
	channeltest.WaitFor(t, "the count refusal", func() bool { _, ok := p.FindText(dm, "only the first 10 files of a message are kept"); return ok })
	texts = waitTurns(t, h, 2)
	if n := len(attached(texts[1])); n != 10 {
		t.Errorf("%d files kept of 11", n)
	}

	time.Sleep(30 * time.Millisecond)
	if texts, _ := h.agent.submits(); len(texts) != 2 {
		t.Errorf("a message whose files were all refused started a turn: %q", texts)
	}
	refused := h.audit.of("channel.attachment_refused")
	if len(refused) != 7 {
		t.Fatalf("%d refusals audited, want 7: %v", len(refused), refused)
	}
	if refused[0]["name"] != "big.pdf" || refused[0]["size"] != int64(2000) || !strings.Contains(refused[0]["reason"].(string), "per file") {
		t.Errorf("first refusal audited as %v", refused[0])
	}
	day := time.Now().Format("2006-01-02")
	entries, _ := os.ReadDir(filepath.Join(inbox, "fake", day))
	if len(entries) != 11 {
		t.Errorf("%d files on disk, want the 11 accepted", len(entries))
	}
}

func TestAttachmentsOnlyFromAllowedPeopleAndTaintedFromContacts(t *testing.T) {
	t.Parallel()
	inbox := filepath.Join(t.TempDir(), "inbox")
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{inbox: inbox})
	var fetched atomic.Int32
	u := msg("U_STRANGER", "D9", "")
	u.Attachments = []channels.Attachment{channeltest.File("a.pdf", "application/pdf", []byte(pdfBytes), &fetched)}
	p.Deliver(u)
	channeltest.WaitFor(t, "the stranger's refusal", func() bool { return h.audit.count("channel.refused") == 1 })
	if fetched.Load() != 0 {
		t.Error("a stranger's file was fetched")
	}
	if _, err := os.Stat(inbox); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the inbox exists after a stranger's file: %v", err)
	}
	u = msg(contact, "D2", "please read")
	u.Attachments = []channels.Attachment{channeltest.File("a.pdf", "application/pdf", []byte(pdfBytes), &fetched)}
	p.Deliver(u)
	waitTurns(t, h, 1)
	_, subs := h.agent.submits()
	if len(subs[0].Provenance) != 1 || subs[0].Provenance[0].Tool != "channel:fake" {
		t.Errorf("a contact's file must taint the turn: %+v", subs[0].Provenance)
	}
}

func TestAttachmentsRefusedWithoutAnInbox(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{})
	u := msg(owner, dm, "")
	u.Attachments = []channels.Attachment{channeltest.File("a.pdf", "application/pdf", []byte(pdfBytes), nil)}
	p.Deliver(u)
	channeltest.WaitFor(t, "the refusal", func() bool { _, ok := p.FindText(dm, "receiving files is not set up here"); return ok })
	if h.audit.count("channel.attachment_refused") != 1 {
		t.Error("refusal not audited")
	}
}

func TestInboxUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if n, b, err := channels.InboxUsage(filepath.Join(dir, "missing")); n != 0 || b != 0 || err != nil {
		t.Errorf("missing inbox: %d %d %v", n, b, err)
	}
	os.MkdirAll(filepath.Join(dir, "slack", "2025-01-02"), 0o700)
	os.WriteFile(filepath.Join(dir, "slack", "2025-01-02", "001-a.txt"), []byte("abc"), 0o600)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("de"), 0o600)
	if n, b, err := channels.InboxUsage(dir); n != 2 || b != 5 || err != nil {
		t.Errorf("usage: %d files %d bytes %v", n, b, err)
	}
}
