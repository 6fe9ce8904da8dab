package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/mail"
)

func TestMailPageReaderCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := mail.Open(context.Background(), mail.Options{DBPath: filepath.Join(dir, "mail.db"), BlobDir: filepath.Join(dir, "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := mailPageReaderCheck(st)
	status, detail := c.Run(context.Background())
	// This build links the verified FTS5 (fts5.TestVerifiedSourceIsLinked).
	if c.Name != "mail.fts5_reader" || status != doctor.OK || !strings.Contains(detail, "read directly") {
		t.Fatalf("%s = %s: %s", c.Name, status, detail)
	}
}
