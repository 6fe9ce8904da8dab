package backup

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth"
)

// OAuth token files live beside the databases, in DATA/oauth, and never
// reach a backup: no file of it holds the refresh token.
func TestBackupLeavesOAuthTokensOut(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dbDir := filepath.Join(home, "db")
	seed(t, dbDir, "chats")
	const secret = "rt-1//refresh-token-that-must-not-be-copied"
	dir := oauth.Dir(home)
	if strings.HasPrefix(dir+string(filepath.Separator), dbDir+string(filepath.Separator)) {
		t.Fatalf("token folder %s is inside the database folder %s", dir, dbDir)
	}
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "work.json"), []byte(`{"version":1,"refresh_token":"`+secret+`"}`), 0o600)
	out := filepath.Join(t.TempDir(), "bk")
	m, err := Create(context.Background(), dbDir, out, "v-test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 1 || m.Files[0].Name != "chats.db" {
		t.Errorf("manifest = %+v", m.Files)
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the refresh token", p)
		}
		return nil
	})
}
