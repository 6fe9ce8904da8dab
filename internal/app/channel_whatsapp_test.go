package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/config"
)

func TestWhatsAppChannelBuilder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "app_secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	w := &cfg.Channels.WhatsApp
	w.Token, w.AppSecretFile, w.VerifyToken, w.PhoneNumberID, w.Owners = "EAAG", secretFile, "verify", "106540352242922", []string{"393471234567"}
	a := &App{Config: cfg, Log: slog.New(slog.DiscardHandler), Now: time.Now}
	b := a.whatsappChannel()
	if !b.enabled || b.key != "channels.whatsapp" || len(b.owners) != 1 {
		t.Fatalf("builder %+v", b)
	}
	p, err := b.build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, ok := p.(channels.Router)
	if p.Kind() != "whatsapp" || !ok || len(r.Routes()) != 2 {
		t.Fatalf("platform %T", p)
	}
	// A secret file others can read is refused, naming the key.
	if err := os.Chmod(secretFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.build(context.Background()); err == nil || !strings.Contains(err.Error(), "channels.whatsapp.app_secret_file") {
		t.Errorf("readable secret file: %v", err)
	}
}
