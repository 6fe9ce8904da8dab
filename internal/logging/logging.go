// Package logging builds the daemon's slog logger: human-readable text on a
// terminal, JSON otherwise, and always a JSON copy in rotated files under the
// logs directory.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"
	"gopkg.in/natefinch/lumberjack.v2"
)

// ParseLevel maps a level name to a slog.Level.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("invalid log level %q: use debug, info, warn or error", s)
}

// Options configure New.
type Options struct {
	Level      slog.Level
	Console    io.Writer // usually os.Stderr; nil disables console output
	Dir        string    // rotated log files; empty disables file output
	MaxSizeMB  int
	MaxBackups int
}

// New returns the logger and a closer for the log file.
func New(o Options) (*slog.Logger, io.Closer, error) {
	var handlers []slog.Handler
	hopts := &slog.HandlerOptions{Level: o.Level}
	if o.Console != nil {
		if f, ok := o.Console.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			handlers = append(handlers, slog.NewTextHandler(o.Console, hopts))
		} else {
			handlers = append(handlers, slog.NewJSONHandler(o.Console, hopts))
		}
	}
	var closer io.Closer = nopCloser{}
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("creating log directory: %w", err)
		}
		lj := &lumberjack.Logger{
			Filename:   filepath.Join(o.Dir, "hestia.log"),
			MaxSize:    o.MaxSizeMB,
			MaxBackups: o.MaxBackups,
			Compress:   true,
		}
		closer = lj
		handlers = append(handlers, slog.NewJSONHandler(lj, hopts))
	}
	if len(handlers) == 0 {
		return slog.New(slog.DiscardHandler), closer, nil
	}
	if len(handlers) == 1 {
		return slog.New(handlers[0]), closer, nil
	}
	return slog.New(slog.NewMultiHandler(handlers...)), closer, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
