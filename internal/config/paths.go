// Package config resolves where Hestia keeps its files and loads the
// configuration: a TOML file plus HESTIA_* environment overrides, validated
// with errors that name the key, the value and what is allowed.
package config

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hestia-dev/hestia/internal/homedir"
)

// Paths are the directories Hestia reads and writes. With HESTIA_HOME set,
// everything lives under it; otherwise data follows the XDG base directory
// spec and configuration lives under $XDG_CONFIG_HOME/hestia.
type Paths struct {
	Data   string // databases, auth token, blobs
	Config string // config.toml
	Logs   string // rotated log files
}

// Env abstracts the process environment so tests can pass their own.
type Env func(string) string

// ResolvePaths computes the paths from the environment.
func ResolvePaths(env Env) (Paths, error) {
	d, err := homedir.Resolve(env)
	if err != nil {
		return Paths{}, err
	}
	return Paths{Data: d.Data, Config: d.Config, Logs: filepath.Join(d.Data, "logs")}, nil
}

// ConfigFile is the path of the TOML configuration file.
func (p Paths) ConfigFile() string { return filepath.Join(p.Config, "config.toml") }

// TokenFile holds the daemon's bearer token (mode 0600).
func (p Paths) TokenFile() string { return filepath.Join(p.Data, "auth-token") }

// LockFile is held by the running daemon.
func (p Paths) LockFile() string { return filepath.Join(p.Data, "hestia.lock") }

// SecretsFile holds credentials kept out of config.toml (mode 0600).
func (p Paths) SecretsFile() string { return filepath.Join(p.Config, "secrets.toml") }

// InboxDir holds the files received on messaging channels, one folder
// per channel and day (internal/channels): the user's data, kept, and
// readable but never writable by the assistant's tools (pathpolicy).
func (p Paths) InboxDir() string { return filepath.Join(p.Data, "inbox") }

// DBDir holds every domain database; backup and doctor walk it.
func (p Paths) DBDir() string { return filepath.Join(p.Data, "db") }

// DB is the file of the named domain database.
func (p Paths) DB(name string) string { return filepath.Join(p.DBDir(), name+".db") }

// Ensure creates the directories with owner-only permissions.
func (p Paths) Ensure() error {
	for _, d := range []string{p.Data, p.Config, p.Logs, p.DBDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	return nil
}

// OSEnv reads the real process environment.
func OSEnv(key string) string { return os.Getenv(key) }

// WithDefaults is env with a value for the keys it leaves empty: what a
// build carries (PackagedClient's variables set with -ldflags -X) and the
// environment overrides.
func WithDefaults(env Env, defaults map[string]string) Env {
	return func(key string) string {
		if v := env(key); v != "" {
			return v
		}
		return defaults[key]
	}
}
