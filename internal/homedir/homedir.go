// Package homedir finds a home's directories from the environment alone:
// HESTIA_HOME, else the XDG base directories, without loading the
// configuration (package config builds its paths on it).
package homedir

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Dirs are where a home keeps its data and its configuration.
type Dirs struct {
	Data   string // databases, auth token, the daemon's socket
	Config string // config.toml
}

// Resolve computes the directories. With HESTIA_HOME set both are that
// folder; otherwise data follows XDG_DATA_HOME and configuration
// XDG_CONFIG_HOME, whose relative values the XDG spec says to ignore.
func Resolve(getenv func(string) string) (Dirs, error) {
	if home := getenv("HESTIA_HOME"); home != "" {
		abs, err := filepath.Abs(home)
		if err != nil {
			return Dirs{}, fmt.Errorf("resolving HESTIA_HOME %q: %w", home, err)
		}
		return Dirs{Data: abs, Config: abs}, nil
	}
	userHome := getenv("HOME")
	dataBase := getenv("XDG_DATA_HOME")
	if dataBase == "" || !filepath.IsAbs(dataBase) {
		if userHome == "" {
			return Dirs{}, errors.New("cannot locate data directory: set HESTIA_HOME, XDG_DATA_HOME or HOME")
		}
		dataBase = filepath.Join(userHome, ".local", "share")
	}
	configBase := getenv("XDG_CONFIG_HOME")
	if configBase == "" || !filepath.IsAbs(configBase) {
		if userHome == "" {
			return Dirs{}, errors.New("cannot locate config directory: set HESTIA_HOME, XDG_CONFIG_HOME or HOME")
		}
		configBase = filepath.Join(userHome, ".config")
	}
	return Dirs{Data: filepath.Join(dataBase, "hestia"), Config: filepath.Join(configBase, "hestia")}, nil
}
