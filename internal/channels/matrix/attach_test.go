package matrix_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/matrix/matrixtest"
)

func TestFilesBecomeAttachments(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	a := newAdapter(t, srv, opts{})
	r := receive(t, srv, a)
	ctx := context.Background()
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	png := []byte("\x89PNG\r\n\x1a\nimage")

	// A file without a caption: the body is its name.
	srv.SendFile(d, owner, "m.file", pdf, "application/pdf", "report.pdf", "")
	u := r.next()
	if u.Text != "" || u.Voice != nil || len(u.Attachments) != 1 {
		t.Fatalf("file update = %+v", u)
	}
	f := u.Attachments[0]
	if f.Name != "report.pdf" || f.Mime != "application/pdf" || f.Size != int64(len(pdf)) {
		t.Errorf("attachment %+v", f)
	}
	before := srv.Calls("download")
	if got, err := f.Fetch(ctx, 1<<20); err != nil || string(got) != string(pdf) {
		t.Errorf("fetch = %q, %v", got, err)
	}
	if _, err := f.Fetch(ctx, 4); !errors.Is(err, channels.ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if n := srv.Calls("download") - before; n != 2 {
		t.Errorf("%d authenticated downloads, want 2", n)
	}

	// An image with a caption; a video.
	srv.SendFile(d, owner, "m.image", png, "image/png", "cat.png", "look at this")
	if u := r.next(); u.Text != "look at this" || len(u.Attachments) != 1 || u.Attachments[0].Name != "cat.png" {
		t.Errorf("image update = %+v", u)
	}
	srv.SendFile(d, owner, "m.video", []byte("\x00\x00\x00\x18ftypmp42"), "video/mp4", "clip.mp4", "")
	if u := r.next(); len(u.Attachments) != 1 || u.Attachments[0].Mime != "video/mp4" {
		t.Errorf("video update = %+v", u)
	}
	// An audio file is still a voice note; an encrypted file (no url)
	// is nothing to fetch.
	srv.SendFile(d, owner, "m.file", []byte("OggS"), "audio/ogg", "note.ogg", "")
	if u := r.next(); u.Voice == nil || len(u.Attachments) != 0 {
		t.Errorf("audio file = %+v", u)
	}
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.file", "body": "secret.pdf",
		"file": map[string]any{"url": "mxc://fake.test/enc", "key": map[string]any{}}})
	if u := r.next(); len(u.Attachments) != 0 || u.Voice != nil {
		t.Errorf("encrypted file = %+v", u)
	}
}
