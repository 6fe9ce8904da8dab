package telegram

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
)

var attachedRe = regexp.MustCompile(`\[attached: (\S+) — ([^,]+), ([^\]]+)\]`)

func TestFilesAreSavedForTheAssistant(t *testing.T) {
	t.Parallel()
	tg := tgtest.New(t)
	inbox := filepath.Join(t.TempDir(), "inbox")
	h := newHarnessWith(t, filepath.Join(t.TempDir(), "telegram.db"), tg, hopts{cfg: func(c *Config) { c.InboxDir = inbox; c.MaxFileBytes = 1 << 20 }})
	day := filepath.Join(inbox, "telegram", time.Now().Format("2006-01-02"))
	turn := func(n int) string {
		t.Helper()
		tgtest.WaitFor(t, "the turn", func() bool { return len(h.agent.Texts()) >= n })
		return h.agent.Texts()[n-1]
	}
	saved := func(text string) []string {
		t.Helper()
		var paths []string
		for _, m := range attachedRe.FindAllStringSubmatch(text, -1) {
			paths = append(paths, m[1])
		}
		return paths
	}

	// A document with a caption.
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	tg.AddFile("doc1", pdf)
	tg.SendDocument(owner, "doc1", "Q3 report.pdf", "application/pdf", int64(len(pdf)), "what is in this?")
	text := turn(1)
	want := "what is in this?\n\n[attached: " + filepath.Join(day, "001-Q3-report.pdf") + " — application/pdf, 15 bytes]"
	if text != want {
		t.Fatalf("turn %q, want %q", text, want)
	}
	if b, err := os.ReadFile(filepath.Join(day, "001-Q3-report.pdf")); err != nil || string(b) != string(pdf) {
		t.Fatalf("saved %q %v", b, err)
	}
	tgtest.WaitFor(t, "the reply", func() bool { _, ok := findMsg(tg, owner, "You said: what is in this?"); return ok })

	// A photo: only its largest size is fetched and saved.
	small, large := []byte("\x89PNG\r\n\x1a\nsmall"), []byte("\x89PNG\r\n\x1a\nthe large one")
	tg.AddFile("p90", small)
	tg.AddFile("p1440", large)
	tg.SendPhoto(owner, "", "p90", "p1440")
	paths := saved(turn(2))
	if len(paths) != 1 || filepath.Base(paths[0]) != "002-photo.png" {
		t.Fatalf("photo saved as %q", paths)
	}
	if b, _ := os.ReadFile(paths[0]); string(b) != string(large) {
		t.Errorf("saved the photo's %q, want its largest size", b)
	}

	// A GIF arrives as an animation and a document of the same file: one
	// file. A video is a file too.
	mp4 := []byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom")
	tg.AddFile("gif1", mp4)
	tg.SendAnimation(owner, "gif1", "dance.gif.mp4", int64(len(mp4)))
	if paths := saved(turn(3)); len(paths) != 1 || filepath.Base(paths[0]) != "003-dance.gif.mp4" {
		t.Errorf("animation saved as %q", paths)
	}
	tg.AddFile("vid1", mp4)
	tg.SendVideo(owner, "vid1", "video/mp4", int64(len(mp4)), "")
	if paths := saved(turn(4)); len(paths) != 1 || filepath.Base(paths[0]) != "004-video.mp4" {
		t.Errorf("video saved as %q", paths)
	}

	// Over the relay's limit by Telegram's word: never fetched. Over the
	// Bot API's download limit: Telegram refuses getFile, and the sender
	// is told why.
	before := tg.Calls("getFile")
	tg.AddFile("big", pdf)
	tg.SendDocument(owner, "big", "big.pdf", "application/pdf", 2<<20, "")
	tgtest.WaitFor(t, "the size refusal", func() bool { _, ok := findMsg(tg, owner, "big.pdf”: it is 2.0 MB; at most 1.0 MB"); return ok })
	if n := tg.Calls("getFile"); n != before {
		t.Errorf("an oversized file was fetched (%d getFile calls)", n-before)
	}
	tg.AddFile("huge", pdf)
	tg.MarkTooBig("huge")
	tg.SendDocument(owner, "huge", "scan.pdf", "application/pdf", 0, "")
	tgtest.WaitFor(t, "the Bot API refusal", func() bool {
		_, ok := findMsg(tg, owner, "scan.pdf”: Telegram lets bots download files up to 20 MB")
		return ok
	})
	if n := len(h.agent.Texts()); n != 4 {
		t.Errorf("%d turns, want 4", n)
	}
	entries, _ := os.ReadDir(day)
	if len(entries) != 4 || strings.Contains(entries[len(entries)-1].Name(), "scan") {
		t.Errorf("inbox holds %v", entries)
	}
}
