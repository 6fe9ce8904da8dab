package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Dir is the folder of the token files under the data directory.
// `hestia backup` copies DATA/db only, so these never reach a backup.
func Dir(dataDir string) string { return filepath.Join(dataDir, "oauth") }

// fileVersion is the token file format written; a newer one is refused.
const fileVersion = 1

// maxTokenFile bounds a token file read (they are a few KiB).
const maxTokenFile = 1 << 20

// grant is one account's token file: the grant (refresh token) and the
// access tokens obtained with it, by audience key ("" for a provider with
// one token, the resource for a per-resource one). It is unexported and
// prints redacted so that nothing outside this package handles the
// secrets in bulk.
type grant struct {
	Version      int                    `json:"version"`
	Account      string                 `json:"account"`
	Provider     string                 `json:"provider"`
	ClientID     string                 `json:"client_id"`
	Scopes       []string               `json:"scopes"`
	RefreshToken string                 `json:"refresh_token"`
	Access       map[string]storedToken `json:"access,omitempty"`
	ConnectedAt  time.Time              `json:"connected_at"`
	RefreshedAt  time.Time              `json:"refreshed_at,omitzero"`
	// Reconnect is set once a refresh found the grant dead; it stays until
	// the account is connected again, so the failure is reported (and
	// notified) once, not on every retry.
	Reconnect *reconnectMark `json:"reconnect,omitempty"`
}

type storedToken struct {
	Token  string    `json:"token"`
	Expiry time.Time `json:"expiry,omitzero"`
}

type reconnectMark struct {
	Code   string    `json:"code"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

func (g *grant) String() string   { return "oauth grant of " + g.Account + " [redacted]" }
func (g *grant) GoString() string { return g.String() }
func (g *grant) LogValue() slog.Value {
	return slog.GroupValue(slog.String("account", g.Account), slog.String("tokens", "[redacted]"))
}

func (g *grant) clone() *grant {
	c := *g
	c.Scopes = append([]string(nil), g.Scopes...)
	c.Access = make(map[string]storedToken, len(g.Access))
	for k, v := range g.Access {
		c.Access[k] = v
	}
	if g.Reconnect != nil {
		m := *g.Reconnect
		c.Reconnect = &m
	}
	return &c
}

// accountNameRE is what config accepts for an account name; the store
// checks it again because the name becomes a file name.
var accountNameRE = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// fileStore reads and writes the token files of one folder.
type fileStore struct {
	dir string
	log *slog.Logger
}

func (s fileStore) path(name string) (string, error) {
	if !accountNameRE.MatchString(name) {
		return "", fmt.Errorf("invalid account name %q", name)
	}
	return filepath.Join(s.dir, name+".json"), nil
}

// ensureDir makes the folder owner-only, tightening one made looser.
func (s fileStore) ensureDir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", s.dir, err)
	}
	st, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("checking %s: %w", s.dir, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(s.dir, 0o700); err != nil {
			return fmt.Errorf("making %s owner-only: %w", s.dir, err)
		}
	}
	return nil
}

// load reads name's token file. A missing file is ErrNotConnected; a
// damaged one is a *ReconnectError naming the file (only connecting again
// replaces it). The returned FileInfo identifies this version of the file.
func (s fileStore) load(name string) (*grant, os.FileInfo, error) {
	path, err := s.path(name)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("account %s: %w (run: hestia accounts connect %s)", name, ErrNotConnected, name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("opening token file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("checking token file %s: %w", path, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		// Someone loosened it (a copy, a restore by hand): the secret may
		// have been readable, so say so, and close it again.
		s.log.Warn("oauthTokenFileNotPrivate", "path", path, "mode", fi.Mode().Perm().String())
		if err := f.Chmod(0o600); err != nil {
			return nil, nil, fmt.Errorf("making token file %s owner-only: %w", path, err)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading token file %s: %w", path, err)
	}
	g, err := decodeGrant(data)
	if err != nil {
		return nil, nil, &ReconnectError{Account: name, Code: "damaged_token_file", Detail: fmt.Sprintf("token file %s %v", path, err)}
	}
	if g.Account != name {
		return nil, nil, &ReconnectError{Account: name, Code: "damaged_token_file", Detail: fmt.Sprintf("token file %s belongs to account %q", path, g.Account)}
	}
	return g, fi, nil
}

// decodeGrant parses a token file. Its errors never quote the file's
// bytes: a damaged file may still hold a secret.
func decodeGrant(data []byte) (*grant, error) {
	if len(data) > maxTokenFile {
		return nil, errors.New("is larger than 1 MiB")
	}
	var g grant
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&g); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("is not valid JSON (at byte %d)", se.Offset)
		case errors.As(err, &te):
			return nil, fmt.Errorf("has a %s where %s belongs", te.Value, te.Field)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errors.New("is empty or cut short")
		default:
			return nil, errors.New("is not a token file")
		}
	}
	if dec.More() {
		return nil, errors.New("has data after the JSON object")
	}
	switch {
	case g.Version == 0:
		return nil, errors.New("has no version: not a token file")
	case g.Version > fileVersion:
		return nil, fmt.Errorf("has format %d, newer than this Hestia reads (%d)", g.Version, fileVersion)
	case g.RefreshToken == "":
		return nil, errors.New("has no refresh token")
	case g.Account == "" || g.ClientID == "":
		return nil, errors.New("names no account or client id")
	}
	if g.Access == nil {
		g.Access = map[string]storedToken{}
	}
	return &g, nil
}

// save writes g atomically with mode 0600 and returns the new file's info.
func (s fileStore) save(g *grant) (os.FileInfo, error) {
	path, err := s.path(g.Account)
	if err != nil {
		return nil, err
	}
	if err := s.ensureDir(); err != nil {
		return nil, err
	}
	g.Version = fileVersion
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the token file of %s: %w", g.Account, err)
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("checking token file %s: %w", path, err)
	}
	return fi, nil
}

// remove deletes name's token file; a missing file is not an error. The
// lock file stays: deleting it under a waiting process would let two
// processes hold "the" lock at once.
func (s fileStore) remove(name string) error {
	path, err := s.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting token file %s: %w", path, err)
	}
	return nil
}

func (s fileStore) lockPath(name string) string { return filepath.Join(s.dir, name+".lock") }

// lock takes the account's lock file, which serializes refreshes and
// connects between processes (the daemon and a CLI command): without it
// two refreshes could race and one rotated refresh token be lost.
func (s fileStore) lock(ctx context.Context, name string) (unlock func(), err error) {
	if _, err := s.path(name); err != nil {
		return nil, err
	}
	if err := s.ensureDir(); err != nil {
		return nil, err
	}
	path := s.lockPath(name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another refresh of %s: %w", name, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}
