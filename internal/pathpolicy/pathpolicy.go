// Package pathpolicy is the one place that decides whether a tool may touch a
// filesystem path. Every file-like tool resolves its path arguments here.
//
// A path is checked twice: as written (after ~ expansion and cleaning) and
// after every symlink in it is resolved, so neither a sensitive name nor a
// link pointing at a sensitive file gets through. Sensitive paths are
// credentials and things that grant execution or identity: SSH keys, cloud
// and package-registry credentials, GnuPG, .env files, shell start-up files,
// system directories, and Hestia's own data and configuration (its token
// lives there).
//
// Writes are refused in more places (ResolveForWrite, ExecRules in
// execpaths.go): wherever a written file runs code or changes the user's
// environment with nobody running it on purpose — XDG and KDE autostart,
// systemd user units and environment.d, launchd agents, cron and at spools,
// ~/.local/bin, ~/bin and the system bin folders, shell and X start-up
// files (.bashrc, .profile, .zshenv, fish's folder, .inputrc, .envrc…),
// ~/.ssh, Python's site-packages/dist-packages, any *.pth,
// sitecustomize/usercustomize.py and IPython startup, pip's config, git
// config (~/.gitconfig, ~/.config/git) and any .git, .husky or .hg folder,
// editor and IDE start-up files (.vimrc, ~/.vim, nvim, Emacs, any .vscode,
// .idea or .devcontainer folder, VS Code user settings), .npmrc, .yarnrc,
// .mailcap, mimeapps.list and desktop entries. Reading them stays allowed
// unless a rule above refuses it.
//
// Read-only folders (Options.ReadOnly) are the one exception to "Hestia's
// own folders are refused": the channel inbox (DATA/inbox), where files
// people send on a messaging channel are saved for the assistant to read.
// Inside one, the read check skips the protected-folder rule and the file
// roots (the inbox is readable wherever the roots point), and every other
// rule still applies (a received "server.key" stays unreadable, a symlink
// out of the inbox is judged where it lands). Every write there is refused
// with ErrReadOnly, whatever the roots say: a received file stays as it
// arrived, and the inbox can never become a place where a file the
// assistant writes runs or is picked up as code or configuration.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `files` too:
//
// symlink-resolving path policy refusing sensitive paths, and for writes (`ResolveForWrite`, which
// the policy engine applies to every path argument before a card) every place where a written file
// runs code or changes the user's environment (`ExecRules`, with reason and examples: XDG/KDE
// autostart, systemd user units and environment.d, launchd agents, cron/at spools, `~/.local/bin`,
// `~/bin` and system bin folders, shell and X start-up files, `~/.ssh`, site-/dist-packages, any
// `*.pth`, sitecustomize/usercustomize, IPython startup, pip config, `~/.gitconfig`,
// `~/.config/git`, any `.git`/`.husky`/`.hg`, vim/nvim/Emacs start-up, any
// `.vscode`/`.idea`/`.devcontainer`, VS Code user settings, `.npmrc`, `.yarnrc`, `.mailcap`,
// desktop entries and mimeapps.list; case-insensitive; reading them stays allowed); `read_file`,
// `list_dir`, `write_file`, `edit_file`; `find_files` (bounded walk with name/size/time filters,
// sensitive entries skipped, links not followed).
package pathpolicy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrSensitive is wrapped by refusals of sensitive paths.
var ErrSensitive = errors.New("path is sensitive")

// ErrOutsideRoots is wrapped when a path lies outside every allowed root.
var ErrOutsideRoots = errors.New("path is outside the allowed folders")

// Policy resolves and checks paths. The zero value is not usable; use New.
type Policy struct {
	home  string   // user's home directory, for ~ and home-relative rules
	base  string   // directory relative paths are resolved against
	roots []string // resolved allowed roots; empty means anywhere not sensitive
	// protected are absolute directories refused with everything under
	// them (Hestia's data and config dirs, plus extras).
	protected []string
	// readOnly are directories readable despite protected and roots, and
	// refused to every write (as written and resolved).
	readOnly []string
}

// Options configure a Policy.
type Options struct {
	Home string // the user's home; required
	// Base is where relative paths start; defaults to the first root, or
	// Home when there are no roots.
	Base string
	// Roots, when non-empty, confine tools to these directories.
	Roots []string
	// Protected directories are refused entirely (Hestia's own data and
	// config directories belong here).
	Protected []string
	// ReadOnly directories may be read even inside a protected directory
	// or outside the roots, and are never written (the channel inbox,
	// DATA/inbox). Every other rule still applies inside them.
	ReadOnly []string
}

// New builds a policy.
func New(o Options) (*Policy, error) {
	if o.Home == "" || !filepath.IsAbs(o.Home) {
		return nil, fmt.Errorf("path policy: home %q must be an absolute path", o.Home)
	}
	p := &Policy{home: filepath.Clean(o.Home), base: o.Base}
	if p.base == "" {
		p.base = p.home
		if len(o.Roots) > 0 {
			if b, err := p.expand(o.Roots[0]); err == nil {
				p.base = b
			}
		}
	}
	for _, r := range o.Roots {
		abs, err := p.expand(r)
		if err != nil {
			return nil, fmt.Errorf("path policy root %q: %w", r, err)
		}
		if res, err := filepath.EvalSymlinks(abs); err == nil {
			abs = res
		}
		p.roots = append(p.roots, abs)
	}
	for _, d := range o.Protected {
		if d == "" {
			continue
		}
		abs, err := p.expand(d)
		if err != nil {
			return nil, fmt.Errorf("path policy protected dir %q: %w", d, err)
		}
		p.protected = append(p.protected, abs)
		if res, err := filepath.EvalSymlinks(abs); err == nil && res != abs {
			p.protected = append(p.protected, res)
		}
	}
	for _, d := range o.ReadOnly {
		if d == "" {
			continue
		}
		abs, err := p.expand(d)
		if err != nil {
			return nil, fmt.Errorf("path policy read-only dir %q: %w", d, err)
		}
		if abs == string(filepath.Separator) || abs == p.home {
			return nil, fmt.Errorf("path policy read-only dir %q: the whole disk or home cannot be read-only", d)
		}
		p.readOnly = append(p.readOnly, abs)
		// The folder may not exist yet (the inbox is made by the first
		// file): its nearest existing ancestor is resolved, so a data
		// folder behind a symlink still matches.
		if res := resolveAncestor(abs); res != abs {
			p.readOnly = append(p.readOnly, res)
		}
	}
	return p, nil
}

func (p *Policy) expand(path string) (string, error) {
	path = strings.TrimSpace(path)
	if path == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(path, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	if path == "~" {
		path = p.home
	} else if strings.HasPrefix(path, "~/") {
		path = filepath.Join(p.home, path[2:])
	} else if strings.HasPrefix(path, "~") {
		return "", fmt.Errorf("path %q names another user's home; only ~/ is supported", path)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.base, path)
	}
	return filepath.Clean(path), nil
}

// Resolve expands and checks path for reading: the target must exist. It
// returns the fully resolved absolute path.
func (p *Policy) Resolve(path string) (string, error) {
	abs, err := p.expand(path)
	if err != nil {
		return "", err
	}
	if err := p.check(abs, path); err != nil {
		return "", err
	}
	res, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist: %w", abs, fs.ErrNotExist)
		}
		return "", fmt.Errorf("resolving %s: %w", abs, err)
	}
	if err := p.check(res, path); err != nil {
		return "", err
	}
	return res, nil
}

// ResolveForWrite is Resolve for a path that may not exist yet: the nearest
// existing ancestor is resolved and the rest appended, so a symlinked parent
// directory cannot smuggle a write somewhere sensitive. An existing final
// symlink is resolved too. Besides the sensitive paths it refuses, with
// ErrExecutes, every place listed by ExecRules. The policy engine resolves
// every tool's path arguments with it before asking anyone (read tools'
// too), so those are refused without a card.
func (p *Policy) ResolveForWrite(path string) (string, error) {
	abs, err := p.expand(path)
	if err != nil {
		return "", err
	}
	if err := p.checkWrite(abs, path); err != nil {
		return "", err
	}
	dir, rest := abs, ""
	for {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
	res, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", dir, err)
	}
	full := filepath.Join(res, rest)
	if err := p.checkWrite(full, path); err != nil {
		return "", err
	}
	return full, nil
}

// checkWrite is check plus the places where a written file runs code or
// changes the user's environment (execpaths.go). Those come first so the
// refusal gives the specific reason.
func (p *Policy) checkWrite(abs, asked string) error {
	labs := strings.ToLower(abs)
	for _, d := range p.readOnly {
		// Compared without case, like the protected folders: on a
		// case-insensitive disk DATA/Inbox is the inbox.
		if within(labs, strings.ToLower(d)) {
			shown := asked
			if shown != abs {
				shown = fmt.Sprintf("%s (%s)", asked, abs)
			}
			return fmt.Errorf("%s is refused for writing: files received on channels are kept as they arrived: %w", shown, ErrReadOnly)
		}
	}
	if why := p.executes(abs); why != "" {
		shown := asked
		if shown != abs {
			shown = fmt.Sprintf("%s (%s)", asked, abs)
		}
		return fmt.Errorf("%s is refused for writing: %s: %w", shown, why, ErrExecutes)
	}
	return p.check(abs, asked)
}

// Check reports whether an already absolute path may be used, without
// touching the filesystem. Policy scopes use it.
func (p *Policy) Check(abs string) error { return p.check(filepath.Clean(abs), abs) }

// Expand returns the absolute cleaned form of path without checks or
// symlink resolution.
func (p *Policy) Expand(path string) (string, error) { return p.expand(path) }

func (p *Policy) check(abs, asked string) error {
	if why := p.sensitive(abs); why != "" {
		shown := asked
		if shown != abs {
			shown = fmt.Sprintf("%s (%s)", asked, abs)
		}
		return fmt.Errorf("%s is refused: %s: %w", shown, why, ErrSensitive)
	}
	if len(p.roots) > 0 && !p.inReadOnly(abs) {
		for _, r := range p.roots {
			if within(abs, r) {
				return nil
			}
		}
		return fmt.Errorf("%s is refused: allowed folders are %s: %w", abs, strings.Join(p.roots, ", "), ErrOutsideRoots)
	}
	return nil
}

// resolveAncestor resolves the symlinks of abs's nearest existing
// ancestor and appends the rest; abs itself when nothing resolves.
func resolveAncestor(abs string) string {
	dir, rest := abs, ""
	for {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
	res, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return abs
	}
	return filepath.Join(res, rest)
}

// inReadOnly reports whether abs lies in a read-only folder. The
// comparison keeps case: a path that only matches without it is judged by
// the other rules (and refused as Hestia's own when it is).
func (p *Policy) inReadOnly(abs string) bool {
	for _, d := range p.readOnly {
		if within(abs, d) {
			return true
		}
	}
	return false
}

func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// systemDirs are refused wholesale.
var systemDirs = []string{"/etc", "/boot", "/sys", "/proc", "/dev", "/usr/lib/systemd", "/System", "/private/etc", "/var/run/docker.sock", "/run/docker.sock"}

// ownHomeDirs are Hestia's default folders under the home, refused like
// the protected ones (and, like them, not inside a read-only folder).
var ownHomeDirs = []string{".config/hestia", ".local/share/hestia"}

// homeDirs are refused under the user's home.
var homeDirs = []string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".config/gh", ".config/gcloud", ".password-store", "Library/LaunchAgents", "Library/LaunchDaemons", "Library/Keychains", ".mozilla", ".config/google-chrome", ".config/chromium", "Library/Application Support/Google/Chrome"}

// sensitiveNames are refused in any directory.
var sensitiveNames = map[string]bool{
	".netrc": true, ".npmrc": true, ".pypirc": true, ".pgpass": true, ".git-credentials": true,
	".bashrc": true, ".bash_profile": true, ".bash_login": true, ".bash_logout": true, ".profile": true,
	".zshrc": true, ".zprofile": true, ".zshenv": true, ".zlogin": true, ".zlogout": true,
	".cshrc": true, ".tcshrc": true, ".kshrc": true, ".envrc": true, "config.fish": true,
	"authorized_keys": true, "known_hosts": true, "credentials": true, "auth-token": true,
	"secrets.toml": true, "id_rsa": true, "id_dsa": true, "id_ecdsa": true, "id_ed25519": true,
	".htpasswd": true, "shadow": true,
}

// sensitiveSuffixes are refused in any directory.
var sensitiveSuffixes = []string{".pem", ".p12", ".pfx", ".key", "_key", "_ed25519", "_rsa", "_ecdsa", ".keystore", ".jks", ".kdbx", ".ovpn"}

func (p *Policy) sensitive(abs string) string {
	// Compare without case: on macOS (and Windows) ~/.SSH is ~/.ssh, so a
	// case trick must not get past a list written in lower case. On a
	// case-sensitive disk this refuses a little more, never less.
	fold := strings.ToLower
	labs := fold(abs)
	if !p.inReadOnly(abs) {
		for _, d := range p.protected {
			if within(labs, fold(d)) {
				return "it belongs to Hestia's own data or configuration"
			}
		}
		for _, d := range ownHomeDirs {
			if within(labs, fold(filepath.Join(p.home, d))) {
				return "it belongs to Hestia's own data or configuration"
			}
		}
	}
	for _, d := range systemDirs {
		if within(labs, fold(d)) {
			return "system directories are off limits"
		}
	}
	for _, d := range homeDirs {
		if within(labs, fold(filepath.Join(p.home, d))) {
			return "it holds credentials or start-up configuration"
		}
	}
	parts := strings.Split(labs, string(filepath.Separator))
	for i, part := range parts {
		if part == ".ssh" || part == ".gnupg" {
			return "it holds keys"
		}
		// A repository's hooks run as code on the next git command, and its
		// config can name programs to run (core.hooksPath, core.fsmonitor)
		// or hold credentials in remote URLs.
		if part == ".git" && i+1 < len(parts) && (parts[i+1] == "hooks" || parts[i+1] == "config") {
			return "git hooks and repository config can run programs"
		}
	}
	name := filepath.Base(abs)
	lower := strings.ToLower(name)
	if sensitiveNames[lower] {
		return "the file name marks credentials or shell start-up configuration"
	}
	if lower == ".env" || strings.HasPrefix(lower, ".env.") || strings.HasSuffix(lower, ".env") {
		if lower != ".env.example" && lower != ".env.sample" {
			return ".env files hold secrets"
		}
	}
	if strings.HasPrefix(lower, "id_") && !strings.Contains(lower, ".") {
		return "it looks like a private key"
	}
	for _, s := range sensitiveSuffixes {
		if strings.HasSuffix(lower, s) {
			return "it looks like a key or certificate store"
		}
	}
	return ""
}

// Roots returns the resolved allowed roots (empty: anywhere not sensitive).
func (p *Policy) Roots() []string { return append([]string(nil), p.roots...) }

// ReadOnly returns the read-only folders, as configured and resolved.
func (p *Policy) ReadOnly() []string { return append([]string(nil), p.readOnly...) }

// Home returns the user's home directory the policy was built with.
func (p *Policy) Home() string { return p.home }

// Hidden lists the concrete paths an OS sandbox should make unreadable:
// Hestia's own directories, the credential folders under the home, and
// the sensitive files directly in the home (.bashrc, .env, …). The
// pattern rules (any .env, any *.pem) cannot be listed ahead of time and
// stay with the per-argument checks.
func (p *Policy) Hidden() []string {
	out := append([]string(nil), p.protected...)
	for _, d := range append(slices.Clone(ownHomeDirs), homeDirs...) {
		out = append(out, filepath.Join(p.home, d))
	}
	entries, _ := os.ReadDir(p.home)
	for _, e := range entries {
		full := filepath.Join(p.home, e.Name())
		if p.sensitive(full) != "" && !slices.Contains(out, full) {
			out = append(out, full)
		}
	}
	return out
}
