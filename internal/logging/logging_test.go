package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileAndConsole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var console bytes.Buffer
	log, closer, err := New(Options{Level: slog.LevelInfo, Console: &console, Dir: dir, MaxSizeMB: 1, MaxBackups: 1})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("started", "addr", "127.0.0.1:1")
	closer.Close()
	// A non-terminal console gets JSON.
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(console.Bytes()), &line); err != nil || line["msg"] != "started" {
		t.Fatalf("console: %q %v", console.String(), err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "hestia.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"addr":"127.0.0.1:1"`) || strings.Contains(string(data), "hidden") {
		t.Fatalf("log file: %s", data)
	}
}

func TestParseLevel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	if _, err := ParseLevel("loud"); err == nil || !strings.Contains(err.Error(), "loud") {
		t.Errorf("bad level: %v", err)
	}
}
