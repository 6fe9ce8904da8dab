// Package service installs and manages Hestia as a background service of
// the logged-in user: a systemd user unit on Linux, a launchd agent on
// macOS. It writes the unit or plist itself and shells out to systemctl
// --user, journalctl --user and launchctl for everything else, so what it
// does is what a user would type. Where systemd is not running (containers,
// CI), Install still writes the unit and says how to start it.
//
// The unit runs `<absolute path of this hestia> serve` with Restart=on-failure
// (the plist: KeepAlive unless the exit was clean), so a crash or a failed
// re-exec after `hestia restart` (status 75) brings the daemon back.
package service

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// UnitName is the systemd user unit; Label the launchd agent's label.
const (
	UnitName = "hestia.service"
	Label    = "dev.hestia.daemon"
)

// ErrUnavailable is returned when the platform's service manager cannot be
// reached (no systemd user instance, an unsupported OS).
var ErrUnavailable = errors.New("service manager not available")

// Spec is what the service runs.
type Spec struct {
	// Exe is the absolute path of the hestia binary.
	Exe string
	// HestiaHome, when set, is passed as HESTIA_HOME.
	HestiaHome string
	// LogDir is where launchd writes the daemon's stdout and stderr.
	LogDir string
}

func (s Spec) validate() error {
	if !filepath.IsAbs(s.Exe) {
		return fmt.Errorf("executable path %q is not absolute", s.Exe)
	}
	for name, v := range map[string]string{"executable path": s.Exe, "HESTIA_HOME": s.HestiaHome, "log directory": s.LogDir} {
		// A newline would end the unit's line and start a directive of its own.
		if strings.ContainsAny(v, "\n\r\x00") {
			return fmt.Errorf("%s %q contains a newline or NUL", name, v)
		}
	}
	if s.HestiaHome != "" && !filepath.IsAbs(s.HestiaHome) {
		return fmt.Errorf("HESTIA_HOME %q is not absolute: the service does not start in this directory", s.HestiaHome)
	}
	return nil
}

// systemdQuote quotes one word for a unit file (systemd.syntax(7)):
// backslash and double quote escaped, % doubled (specifiers), and in
// ExecStart $ doubled (variable expansion).
func systemdQuote(s string, exec bool) string {
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`).Replace(s)
	if exec {
		s = strings.ReplaceAll(s, "$", "$$")
	}
	return `"` + s + `"`
}

// Unit is the systemd user unit's text.
func Unit(s Spec) (string, error) {
	if err := s.validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Written by `hestia service install`; `hestia service uninstall` removes it.\n")
	b.WriteString("[Unit]\nDescription=Hestia personal assistant\nDocumentation=https://github.com/hestia-dev/hestia\n\n")
	b.WriteString("[Service]\nType=simple\n")
	fmt.Fprintf(&b, "ExecStart=%s serve\n", systemdQuote(s.Exe, true))
	if s.HestiaHome != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote("HESTIA_HOME="+s.HestiaHome, false))
	}
	// `hestia restart` re-executes in place (same PID); if that fails the
	// daemon exits 75 and this brings it back, as after a crash.
	b.WriteString("Restart=on-failure\nRestartSec=2\n\n")
	b.WriteString("[Install]\nWantedBy=default.target\n")
	return b.String(), nil
}

// Plist is the launchd agent's property list.
func Plist(s Spec) (string, error) {
	if err := s.validate(); err != nil {
		return "", err
	}
	if s.LogDir == "" {
		return "", errors.New("no log directory for the agent's output")
	}
	esc := func(v string) string {
		var b strings.Builder
		xml.EscapeText(&b, []byte(v)) // a strings.Builder does not fail
		return b.String()
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by hestia service install; hestia service uninstall removes it. -->
<plist version="1.0">
<dict>
`)
	fmt.Fprintf(&b, "\t<key>Label</key>\n\t<string>%s</string>\n", Label)
	fmt.Fprintf(&b, "\t<key>ProgramArguments</key>\n\t<array>\n\t\t<string>%s</string>\n\t\t<string>serve</string>\n\t</array>\n", esc(s.Exe))
	if s.HestiaHome != "" {
		fmt.Fprintf(&b, "\t<key>EnvironmentVariables</key>\n\t<dict>\n\t\t<key>HESTIA_HOME</key>\n\t\t<string>%s</string>\n\t</dict>\n", esc(s.HestiaHome))
	}
	// KeepAlive with SuccessfulExit=false: restarted after a crash or a
	// failed re-exec (status 75), left stopped after a clean exit.
	b.WriteString("\t<key>RunAtLoad</key>\n\t<true/>\n\t<key>KeepAlive</key>\n\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	logf := esc(filepath.Join(s.LogDir, "launchd.log"))
	fmt.Fprintf(&b, "\t<key>StandardOutPath</key>\n\t<string>%s</string>\n\t<key>StandardErrorPath</key>\n\t<string>%s</string>\n", logf, logf)
	b.WriteString("</dict>\n</plist>\n")
	return b.String(), nil
}

// Runner runs an outside command with the given output streams; tests
// substitute one that records calls.
type Runner func(ctx context.Context, stdout, stderr io.Writer, name string, args ...string) error

// Manager manages the service for one user on one OS.
type Manager struct {
	GOOS string // "linux" or "darwin"
	// UserHome is the user's home directory; ConfigHome is
	// $XDG_CONFIG_HOME (default UserHome/.config).
	UserHome, ConfigHome string
	UID                  int // launchctl's gui/<uid> domain
	User                 string
	Spec                 Spec
	Run                  Runner
	Stdout, Stderr       io.Writer
}

// Path is the unit or plist file.
func (m *Manager) Path() (string, error) {
	switch m.GOOS {
	case "linux":
		cfg := m.ConfigHome
		if cfg == "" {
			cfg = filepath.Join(m.UserHome, ".config")
		}
		return filepath.Join(cfg, "systemd", "user", UnitName), nil
	case "darwin":
		return filepath.Join(m.UserHome, "Library", "LaunchAgents", Label+".plist"), nil
	}
	return "", fmt.Errorf("%w: no service support on %s (run `hestia serve` yourself)", ErrUnavailable, m.GOOS)
}

func (m *Manager) run(ctx context.Context, name string, args ...string) error {
	return m.Run(ctx, m.Stdout, m.Stderr, name, args...)
}

// quiet runs a command whose output only matters when it fails.
func (m *Manager) quiet(ctx context.Context, name string, args ...string) error {
	var out strings.Builder
	if err := m.Run(ctx, &out, &out, name, args...); err != nil {
		if s := strings.TrimSpace(out.String()); s != "" {
			return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, s)
		}
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// SystemdAvailable reports whether a systemd user instance answers, and
// why not when it does not.
func (m *Manager) SystemdAvailable(ctx context.Context) (bool, string) {
	if err := m.quiet(ctx, "systemctl", "--user", "show-environment"); err != nil {
		return false, err.Error()
	}
	return true, ""
}

func (m *Manager) domain() string { return fmt.Sprintf("gui/%d", m.UID) }

// Install writes the unit (or plist) and, where the service manager runs,
// enables and starts it.
func (m *Manager) Install(ctx context.Context, start bool) error {
	path, err := m.Path()
	if err != nil {
		return err
	}
	var text string
	if m.GOOS == "darwin" {
		text, err = Plist(m.Spec)
	} else {
		text, err = Unit(m.Spec)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if m.GOOS == "darwin" {
		if err := os.MkdirAll(m.Spec.LogDir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", m.Spec.LogDir, err)
		}
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(m.Stdout, "Wrote %s (runs %s serve).\n", path, m.Spec.Exe)
	if m.GOOS == "darwin" {
		if !start {
			fmt.Fprintf(m.Stdout, "Start it with `hestia service start` (launchctl bootstrap %s %s).\n", m.domain(), path)
			return nil
		}
		// A loaded older version must go first: bootstrap refuses a label
		// that is already loaded.
		_ = m.quiet(ctx, "launchctl", "bootout", m.domain()+"/"+Label)
		if err := m.quiet(ctx, "launchctl", "bootstrap", m.domain(), path); err != nil {
			return err
		}
		fmt.Fprintln(m.Stdout, "Started; it starts again at every login. `hestia service status` shows it.")
		return nil
	}
	if ok, why := m.SystemdAvailable(ctx); !ok {
		fmt.Fprintf(m.Stdout, "systemd is not available here (%s): the unit is written but not started. On a machine with a systemd user instance run `systemctl --user daemon-reload && systemctl --user enable --now %s`; here, run `hestia serve`.\n", why, UnitName)
		return nil
	}
	if err := m.quiet(ctx, "systemctl", "--user", "daemon-reload"); err != nil {
		return err
	}
	args := []string{"--user", "enable", UnitName}
	if start {
		args = []string{"--user", "enable", "--now", UnitName}
	}
	if err := m.quiet(ctx, "systemctl", args...); err != nil {
		return err
	}
	if start {
		fmt.Fprintln(m.Stdout, "Enabled and started; `hestia service status` shows it, `hestia service logs` its log.")
	} else {
		fmt.Fprintf(m.Stdout, "Enabled; start it with `hestia service start`.\n")
	}
	user := m.User
	if user == "" {
		user = "$USER"
	}
	fmt.Fprintf(m.Stdout, "It runs while you are logged in. To keep it running after you log out and start it at boot: loginctl enable-linger %s\n", user)
	return nil
}

// Uninstall stops and disables the service and removes its file. Nothing
// installed is not an error.
func (m *Manager) Uninstall(ctx context.Context) error {
	path, err := m.Path()
	if err != nil {
		return err
	}
	if m.GOOS == "darwin" {
		_ = m.quiet(ctx, "launchctl", "bootout", m.domain()+"/"+Label) // not loaded is fine
	} else if ok, _ := m.SystemdAvailable(ctx); ok {
		_ = m.quiet(ctx, "systemctl", "--user", "disable", "--now", UnitName) // not loaded is fine
		defer m.quiet(ctx, "systemctl", "--user", "daemon-reload")            // best effort, after the removal
	}
	switch err := os.Remove(path); {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(m.Stdout, "No service installed (%s does not exist).\n", path)
	case err != nil:
		return fmt.Errorf("removing %s: %w", path, err)
	default:
		fmt.Fprintf(m.Stdout, "Removed %s.\n", path)
	}
	return nil
}

// installed returns the file's path, or an error saying to install first.
func (m *Manager) installed() (string, error) {
	path, err := m.Path()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no service installed (%s: %w); run `hestia service install` first", path, err)
	}
	return path, nil
}

// needSystemd fails with ErrUnavailable when no systemd user instance answers.
func (m *Manager) needSystemd(ctx context.Context) error {
	if ok, why := m.SystemdAvailable(ctx); !ok {
		return fmt.Errorf("%w: systemd is not available here (%s); run `hestia serve` instead", ErrUnavailable, why)
	}
	return nil
}

// Start starts the installed service.
func (m *Manager) Start(ctx context.Context) error {
	path, err := m.installed()
	if err != nil {
		return err
	}
	if m.GOOS == "darwin" {
		return m.quiet(ctx, "launchctl", "bootstrap", m.domain(), path)
	}
	if err := m.needSystemd(ctx); err != nil {
		return err
	}
	return m.quiet(ctx, "systemctl", "--user", "start", UnitName)
}

// Stop stops the service; it starts again at the next login (launchd: at
// the next `start`).
func (m *Manager) Stop(ctx context.Context) error {
	if _, err := m.installed(); err != nil {
		return err
	}
	if m.GOOS == "darwin" {
		// bootout, not kill: KeepAlive would start a killed agent again.
		return m.quiet(ctx, "launchctl", "bootout", m.domain()+"/"+Label)
	}
	if err := m.needSystemd(ctx); err != nil {
		return err
	}
	return m.quiet(ctx, "systemctl", "--user", "stop", UnitName)
}

// Status prints the service manager's view of the service.
func (m *Manager) Status(ctx context.Context) error {
	path, err := m.Path()
	if err != nil {
		return err
	}
	_, serr := os.Stat(path)
	if serr != nil {
		fmt.Fprintf(m.Stdout, "Not installed (%s does not exist); `hestia service install` installs it.\n", path)
	} else {
		fmt.Fprintf(m.Stdout, "Installed: %s\n", path)
	}
	if m.GOOS == "darwin" {
		if serr != nil {
			return nil
		}
		if err := m.run(ctx, "launchctl", "print", m.domain()+"/"+Label); err != nil {
			fmt.Fprintln(m.Stdout, "Not loaded: `hestia service start` starts it.")
		}
		return nil
	}
	if ok, why := m.SystemdAvailable(ctx); !ok {
		fmt.Fprintf(m.Stdout, "systemd is not available here (%s).\n", why)
		return nil
	}
	// systemctl status exits 3 for a stopped unit: its output says so.
	_ = m.run(ctx, "systemctl", "--user", "status", "--no-pager", UnitName)
	return nil
}

// Logs prints the service's recent log lines, following them when follow.
func (m *Manager) Logs(ctx context.Context, lines int, follow bool) error {
	if lines <= 0 {
		return fmt.Errorf("lines must be positive, not %d", lines)
	}
	n := fmt.Sprint(lines)
	if m.GOOS == "darwin" {
		if _, err := m.Path(); err != nil {
			return err
		}
		args := []string{"-n", n}
		if follow {
			args = append(args, "-f")
		}
		return m.run(ctx, "tail", append(args, filepath.Join(m.Spec.LogDir, "launchd.log"))...)
	}
	if _, err := m.Path(); err != nil {
		return err
	}
	if err := m.needSystemd(ctx); err != nil {
		return fmt.Errorf("%w; the daemon's own log files are in %s", err, m.Spec.LogDir)
	}
	args := []string{"--user", "-u", UnitName, "--no-pager", "-n", n}
	if follow {
		args = append(args, "-f")
	}
	return m.run(ctx, "journalctl", args...)
}
