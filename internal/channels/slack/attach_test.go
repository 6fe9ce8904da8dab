package slack

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/slack/slacktest"
)

func TestFilesBecomeAttachments(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	r := f.receive(t)
	ctx := context.Background()
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	page := []byte("<!DOCTYPE html><html><body>notes</body></html>")
	f.s.Say(dm, owner, "read these", "",
		slacktest.File{ID: "F1", Name: "report.pdf", Mimetype: "application/pdf", Data: pdf},
		slacktest.File{ID: "F2", Name: "notes.html", Mimetype: "text/html", Data: page},
		slacktest.File{ID: "F3", Name: "voice.webm", Mimetype: "audio/webm", Subtype: "slack_audio", Data: []byte("\x1a\x45\xdf\xa3")},
		slacktest.File{ID: "F4", Name: "steal.png", Mimetype: "image/png", URL: "https://evil.example/f.png", Data: []byte("x")},
	)
	u := r.next(t)
	if u.Text != "read these" || u.Voice == nil || u.Voice.Filename != "voice.webm" {
		t.Fatalf("update = %+v", u)
	}
	if len(u.Attachments) != 3 {
		t.Fatalf("attachments = %+v", u.Attachments)
	}
	a := u.Attachments[0]
	if a.Name != "report.pdf" || a.Mime != "application/pdf" || a.Size != int64(len(pdf)) {
		t.Errorf("attachment = %+v", a)
	}
	before := f.s.Downloads()
	if got, err := a.Fetch(ctx, 1<<20); err != nil || string(got) != string(pdf) {
		t.Errorf("Fetch = %q %v", got, err)
	}
	if got, err := u.Attachments[1].Fetch(ctx, 1<<20); err != nil || string(got) != string(page) {
		t.Errorf("a web page file: %q %v", got, err)
	}
	if _, err := a.Fetch(ctx, 4); !errors.Is(err, channels.ErrTooLarge) {
		t.Errorf("Fetch over the limit = %v", err)
	}
	if _, err := u.Attachments[2].Fetch(ctx, 1<<20); err == nil || !strings.Contains(err.Error(), "evil.example") {
		t.Errorf("Fetch from a foreign host = %v", err)
	}
	if n := f.s.Downloads() - before; n != 3 {
		t.Errorf("%d downloads reached Slack, want 3 (never the foreign one)", n)
	}

	// A file alone is an update.
	f.s.Say(dm, owner, "", "", slacktest.File{ID: "F5", Name: "cat.png", Mimetype: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")})
	if u := r.next(t); len(u.Attachments) != 1 || u.Attachments[0].Name != "cat.png" || u.Text != "" {
		t.Errorf("file-only update = %+v", u)
	}
}
