package authtoken

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadOrCreate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "auth-token")
	tok, created, err := LoadOrCreate(path)
	if err != nil || !created {
		t.Fatalf("first: created=%v err=%v", created, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", info.Mode().Perm())
	}
	again, created, err := LoadOrCreate(path)
	if err != nil || created {
		t.Fatalf("second: created=%v err=%v", created, err)
	}
	if again.Value() != tok.Value() {
		t.Fatal("token changed on second start")
	}
	if len(tok.Value()) != 64 {
		t.Fatalf("token length %d", len(tok.Value()))
	}
}

func TestLooseModeTightened(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "auth-token")
	os.WriteFile(path, []byte(strings.Repeat("a", 40)), 0o644)
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v after load", info.Mode().Perm())
	}
}

func TestShortTokenRejected(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "auth-token")
	os.WriteFile(path, []byte("short"), 0o600)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("err = %v", err)
	}
}

func TestEqual(t *testing.T) {
	t.Parallel()
	tok, _ := New()
	if !tok.Equal(tok.Value()) {
		t.Fatal("right token rejected")
	}
	for _, bad := range []string{"", tok.Value()[:63], tok.Value() + "x", strings.ToUpper(tok.Value()), "Bearer " + tok.Value()} {
		if tok.Equal(bad) {
			t.Errorf("accepted %q", bad)
		}
	}
	var zero Token
	if zero.Equal("") {
		t.Error("zero token accepted empty string")
	}
}

func TestNeverPrinted(t *testing.T) {
	t.Parallel()
	tok, _ := New()
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %s %+v", tok, tok, tok)} {
		if strings.Contains(s, tok.Value()) {
			t.Fatalf("token printed: %s", s)
		}
	}
}
