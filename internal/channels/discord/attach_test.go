package discord

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/discord/discordtest"
)

func TestAttachmentsFromTheCDN(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	ctx := context.Background()
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	png := []byte("\x89PNG\r\n\x1a\nimage")
	ogg := []byte("OggS\x00fake opus")
	id := h.srv.FilesDM(owner, "what do these say?",
		discordtest.Upload{Name: "report.pdf", ContentType: "application/pdf", Data: pdf},
		discordtest.Upload{Name: "voice-message.ogg", ContentType: "audio/ogg", Data: ogg},
		discordtest.Upload{Name: "screenshot.png", Data: png}, // Discord leaves content_type out when it cannot tell
	)
	u := h.next(t)
	if u.ID != id || u.Text != "what do these say?" || u.Voice == nil || len(u.Attachments) != 2 {
		t.Fatalf("update %+v", u)
	}
	a, b := u.Attachments[0], u.Attachments[1]
	if a.Name != "report.pdf" || a.Mime != "application/pdf" || a.Size != int64(len(pdf)) || b.Name != "screenshot.png" || b.Mime != "" {
		t.Errorf("attachments %+v %+v", a, b)
	}
	// Fetched from the CDN without the bot token (the fake fails the
	// test on an Authorization header), within the relay's limit.
	if data, err := a.Fetch(ctx, 1<<20); err != nil || !bytes.Equal(data, pdf) {
		t.Errorf("fetched %q, %v", data, err)
	}
	if data, err := b.Fetch(ctx, 1<<20); err != nil || !bytes.Equal(data, png) {
		t.Errorf("fetched %q, %v", data, err)
	}
	if _, err := a.Fetch(ctx, 4); !errors.Is(err, channels.ErrTooLarge) {
		t.Errorf("over the limit by the payload's size: %v", err)
	}
	lying := attachment{ID: "9", URL: h.srv.URL + "/attachments/1/2/x?hm=abc"}
	if _, err := h.a.fetch(ctx, lying, 4); err == nil {
		t.Errorf("a missing blob fetched")
	}
	// A file alone is an update.
	h.srv.FilesDM(owner, "", discordtest.Upload{Name: "notes.txt", ContentType: "text/plain; charset=utf-8", Data: []byte("hi")})
	if u := h.next(t); len(u.Attachments) != 1 || u.Text != "" || u.Voice != nil {
		t.Errorf("file-only update %+v", u)
	}
}
