// Package authtoken creates, loads and checks the daemon's bearer token.
// The token lives in one 0600 file in the data directory; clients on the
// same machine read it from there, other devices get it by pairing.
package authtoken

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// Token is the daemon's secret. Its String method never reveals it.
type Token struct {
	value string
	sum   [32]byte
}

// New returns a fresh random token (256 bits, hex).
func New() (Token, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return Token{}, fmt.Errorf("generating auth token: %w", err)
	}
	return FromString(hex.EncodeToString(b))
}

// FromString wraps an existing token value.
func FromString(v string) (Token, error) {
	v = strings.TrimSpace(v)
	if len(v) < 32 {
		return Token{}, errors.New("auth token is too short (need at least 32 characters)")
	}
	return Token{value: v, sum: sha256.Sum256([]byte(v))}, nil
}

// LoadOrCreate reads the token file, creating it with mode 0600 on first
// start. A file readable by others is tightened to 0600.
func LoadOrCreate(path string) (Token, bool, error) {
	t, err := Load(path)
	if err == nil {
		return t, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Token{}, false, err
	}
	t, err = New()
	if err != nil {
		return Token{}, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Token{}, false, fmt.Errorf("creating token directory: %w", err)
	}
	// O_EXCL: if two processes race on first start, one wins and the other
	// reads the winner's token instead of overwriting it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		t, err := Load(path)
		return t, false, err
	}
	if err != nil {
		return Token{}, false, fmt.Errorf("creating auth token file: %w", err)
	}
	if _, err := f.WriteString(t.value + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return Token{}, false, fmt.Errorf("writing auth token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return Token{}, false, fmt.Errorf("writing auth token file: %w", err)
	}
	return t, true, nil
}

// Load reads an existing token file.
func Load(path string) (Token, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Token{}, fmt.Errorf("reading auth token: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return Token{}, fmt.Errorf("auth token %s is readable by others and could not be fixed: %w", path, err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Token{}, fmt.Errorf("reading auth token: %w", err)
	}
	t, err := FromString(string(b))
	if err != nil {
		return Token{}, fmt.Errorf("auth token file %s: %w", path, err)
	}
	return t, nil
}

// Equal reports whether candidate is the token, in constant time. Both sides
// are hashed first so neither the length nor a prefix match leaks timing.
func (t Token) Equal(candidate string) bool {
	if t.value == "" {
		return false
	}
	c := sha256.Sum256([]byte(candidate))
	return subtle.ConstantTimeCompare(c[:], t.sum[:]) == 1
}

// Value returns the secret itself, for writing to a client that is entitled
// to it (pairing) or into an Authorization header.
func (t Token) Value() string { return t.value }

// String masks the token so it cannot leak through %v in logs.
func (t Token) String() string { return "[redacted token]" }

// LogValue keeps slog from printing the token.
func (t Token) LogValue() slog.Value { return slog.StringValue("[redacted token]") }
