package signal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/signal/signaltest"
)

func TestAttachmentsThroughGetAttachment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF")
	t.Run("getAttachment", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		r := receive(t, newAdapter(t, s, nil))
		s.WaitSubscribed(1)
		s.Files(anna, "please file these",
			signaltest.File{Name: "lease.pdf", ContentType: "application/pdf", Data: pdf},
			signaltest.File{ContentType: "image/jpeg", Data: jpeg})
		u := r.next(t)
		if u.Text != "please file these" || u.Voice != nil || len(u.Attachments) != 2 {
			t.Fatalf("update = %+v", u)
		}
		a, b := u.Attachments[0], u.Attachments[1]
		if a.Name != "lease.pdf" || a.Mime != "application/pdf" || a.Size != int64(len(pdf)) || b.Name != "" || b.Mime != "image/jpeg" {
			t.Errorf("attachments %+v %+v", a, b)
		}
		if got, err := a.Fetch(ctx, 1<<20); err != nil || string(got) != string(pdf) {
			t.Errorf("fetched %q, %v", got, err)
		}
		if got, err := b.Fetch(ctx, 1<<20); err != nil || string(got) != string(jpeg) {
			t.Errorf("fetched %q, %v", got, err)
		}
		req := s.Requests("getAttachment")[0].Params
		if req["recipient"] != anna.Number || req["account"] != signaltest.Account {
			t.Errorf("getAttachment params %v", req)
		}
		// Over the limit by the envelope's size: not asked for.
		n := len(s.Requests("getAttachment"))
		if _, err := a.Fetch(ctx, 4); !errors.Is(err, channels.ErrTooLarge) {
			t.Errorf("over the limit: %v", err)
		}
		if len(s.Requests("getAttachment")) != n {
			t.Error("an oversized attachment was asked for")
		}
	})
	t.Run("old daemon reads the folder", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		s.Old()
		s.AutoReceive(true)
		dir := t.TempDir()
		r := receive(t, newAdapter(t, s, func(c *Config) { c.AttachmentsDir = dir }))
		s.WaitSubscribed(1)
		s.Files(anna, "", signaltest.File{Name: "lease.pdf", ContentType: "application/pdf", Data: pdf})
		u := r.next(t)
		if len(u.Attachments) != 1 {
			t.Fatalf("update = %+v", u)
		}
		if _, err := u.Attachments[0].Fetch(ctx, 1<<20); err == nil {
			t.Fatal("fetched a file that is not there")
		}
		id := s.Requests("getAttachment")[0].Params["id"].(string)
		if err := os.WriteFile(filepath.Join(dir, id), append(pdf, make([]byte, 100)...), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := u.Attachments[0].Fetch(ctx, int64(len(pdf)+50)); !errors.Is(err, channels.ErrTooLarge) {
			t.Errorf("a file grown on disk over the limit: %v", err)
		}
		if got, err := u.Attachments[0].Fetch(ctx, 1<<20); err != nil || len(got) != len(pdf)+100 {
			t.Errorf("fetched %d bytes, %v", len(got), err)
		}
	})
}
