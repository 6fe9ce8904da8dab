package pathpolicy

import (
	"path/filepath"
	"strings"
)

// ErrExecutes is wrapped by write refusals of places where a written file
// runs code or changes how the user's programs run. It matches
// ErrSensitive too, so every caller that refuses sensitive paths (the
// policy's check before a card) refuses these.
var ErrExecutes error = execErr{}

type execErr struct{}

func (execErr) Error() string {
	return "a file written there runs code or changes the user's environment"
}
func (execErr) Is(target error) bool { return target == ErrSensitive }

// ErrReadOnly is wrapped by write refusals in a read-only folder
// (Options.ReadOnly: the channel inbox). It belongs to the same class as
// ErrExecutes — refused for writing, readable — and matches both
// ErrExecutes and ErrSensitive: the policy's check refuses a write there
// before anyone is asked, and falls back to the read check for a
// read-only tool, exactly as for a place where written files run code.
var ErrReadOnly error = readOnlyErr{}

type readOnlyErr struct{}

func (readOnlyErr) Error() string { return "the folder is read-only to tools" }
func (readOnlyErr) Is(target error) bool {
	return target == ErrSensitive || target == ErrExecutes
}

// ruleKind says how an ExecRule's pattern is matched.
type ruleKind int

const (
	homeDir   ruleKind = iota // a path under the home: it and everything below it
	absDir                    // an absolute path: it and everything below it
	component                 // a directory name anywhere: it and everything below it
	fileName                  // a file name in any directory
	suffix                    // a file name ending in any directory
)

// ExecRule is one place refused to every write tool because a file written
// there runs code or changes the user's environment without anyone running
// it on purpose.
type ExecRule struct {
	// Why is the reason a refusal gives ("starts programs at login: XDG
	// autostart").
	Why string
	// Examples are paths the rule refuses ("~/…" or absolute). Tests and
	// the security selftest write to each of them with each write tool, so
	// the cases are generated from this list and cannot drift from it.
	Examples []string
	kind     ruleKind
	pattern  string // lower case, slash-separated
}

// execRules is the list. Reading these paths stays allowed (a repository's
// .vscode/settings.json, a library in site-packages); only writes are
// refused, by ResolveForWrite.
func execRules() []ExecRule {
	shell := "the shell runs it at start-up: shell start-up file"
	editor := "the editor runs it at start-up: editor configuration"
	return []ExecRule{
		// Session and service start-up.
		{Why: "starts programs at login: XDG autostart", kind: homeDir, pattern: ".config/autostart", Examples: []string{"~/.config/autostart/updater.desktop"}},
		{Why: "runs scripts at login: KDE autostart scripts", kind: homeDir, pattern: ".config/autostart-scripts", Examples: []string{"~/.config/autostart-scripts/updater.sh"}},
		{Why: "runs scripts at login: KDE Plasma env and shutdown scripts", kind: homeDir, pattern: ".config/plasma-workspace", Examples: []string{"~/.config/plasma-workspace/env/path.sh"}},
		{Why: "starts programs: systemd user units", kind: homeDir, pattern: ".config/systemd", Examples: []string{"~/.config/systemd/user/updater.service", "~/.config/systemd/user/default.target.wants/updater.service"}},
		{Why: "starts programs: systemd user units", kind: homeDir, pattern: ".local/share/systemd", Examples: []string{"~/.local/share/systemd/user/updater.service"}},
		{Why: "sets the environment of every user service: systemd environment.d", kind: homeDir, pattern: ".config/environment.d", Examples: []string{"~/.config/environment.d/50-path.conf"}},
		{Why: "starts programs at login: launchd agents", kind: homeDir, pattern: "library/launchagents", Examples: []string{"~/Library/LaunchAgents/com.example.updater.plist"}},
		{Why: "starts programs: launchd agents and daemons", kind: absDir, pattern: "/library/launchagents", Examples: []string{"/Library/LaunchAgents/com.example.updater.plist"}},
		{Why: "starts programs: launchd agents and daemons", kind: absDir, pattern: "/library/launchdaemons", Examples: []string{"/Library/LaunchDaemons/com.example.updater.plist"}},
		{Why: "starts programs at boot: macOS startup items", kind: absDir, pattern: "/library/startupitems", Examples: []string{"/Library/StartupItems/updater/updater"}},
		{Why: "starts programs: systemd units", kind: absDir, pattern: "/lib/systemd", Examples: []string{"/lib/systemd/system/updater.service"}},
		{Why: "registers programs that open files and links: desktop entries", kind: homeDir, pattern: ".local/share/applications", Examples: []string{"~/.local/share/applications/opener.desktop"}},
		{Why: "chooses the programs that open files and links: mimeapps.list", kind: homeDir, pattern: ".config/mimeapps.list", Examples: []string{"~/.config/mimeapps.list"}},
		{Why: "sets the environment at login: pam_environment", kind: fileName, pattern: ".pam_environment", Examples: []string{"~/.pam_environment"}},
		// Scheduled jobs.
		{Why: "cron runs the jobs listed there: crontabs", kind: absDir, pattern: "/var/spool/cron", Examples: []string{"/var/spool/cron/crontabs/root", "/var/spool/cron/atjobs/a0001"}},
		{Why: "at runs the jobs queued there", kind: absDir, pattern: "/var/spool/at", Examples: []string{"/var/spool/at/a0001"}},
		{Why: "cron and at run the jobs listed there (macOS)", kind: absDir, pattern: "/var/at", Examples: []string{"/var/at/tabs/root"}},
		{Why: "cron and at run the jobs listed there (macOS)", kind: absDir, pattern: "/private/var/at", Examples: []string{"/private/var/at/tabs/root"}},
		{Why: "cron and at run the jobs listed there (macOS)", kind: absDir, pattern: "/usr/lib/cron", Examples: []string{"/usr/lib/cron/tabs/root"}},
		// Programs found on PATH.
		{Why: "programs there are found on PATH: ~/.local/bin", kind: homeDir, pattern: ".local/bin", Examples: []string{"~/.local/bin/git"}},
		{Why: "programs there are found on PATH: ~/bin", kind: homeDir, pattern: "bin", Examples: []string{"~/bin/ls"}},
		{Why: "programs there are found on PATH: system bin folders", kind: absDir, pattern: "/usr/local/bin", Examples: []string{"/usr/local/bin/git"}},
		{Why: "programs there are found on PATH: system bin folders", kind: absDir, pattern: "/usr/local/sbin", Examples: []string{"/usr/local/sbin/git"}},
		{Why: "programs there are found on PATH: system bin folders", kind: absDir, pattern: "/usr/bin", Examples: []string{"/usr/bin/git"}},
		{Why: "programs there are found on PATH: system bin folders", kind: absDir, pattern: "/usr/sbin", Examples: []string{"/usr/sbin/git"}},
		{Why: "programs there are found on PATH: system bin folders", kind: absDir, pattern: "/bin", Examples: []string{"/bin/git"}},
		{Why: "programs there are found on PATH: system bin folders", kind: absDir, pattern: "/sbin", Examples: []string{"/sbin/git"}},
		// Shells.
		{Why: shell, kind: fileName, pattern: ".bashrc", Examples: []string{"~/.bashrc"}},
		{Why: shell, kind: fileName, pattern: ".bash_profile", Examples: []string{"~/.bash_profile"}},
		{Why: shell, kind: fileName, pattern: ".bash_login", Examples: []string{"~/.bash_login"}},
		{Why: shell, kind: fileName, pattern: ".bash_logout", Examples: []string{"~/.bash_logout"}},
		{Why: shell, kind: fileName, pattern: ".bash_aliases", Examples: []string{"~/.bash_aliases"}},
		{Why: shell, kind: fileName, pattern: ".profile", Examples: []string{"~/.profile"}},
		{Why: shell, kind: fileName, pattern: ".zshrc", Examples: []string{"~/.zshrc"}},
		{Why: shell, kind: fileName, pattern: ".zshenv", Examples: []string{"~/.zshenv"}},
		{Why: shell, kind: fileName, pattern: ".zprofile", Examples: []string{"~/.zprofile"}},
		{Why: shell, kind: fileName, pattern: ".zlogin", Examples: []string{"~/.zlogin"}},
		{Why: shell, kind: fileName, pattern: ".zlogout", Examples: []string{"~/.zlogout"}},
		{Why: shell, kind: fileName, pattern: ".cshrc", Examples: []string{"~/.cshrc"}},
		{Why: shell, kind: fileName, pattern: ".tcshrc", Examples: []string{"~/.tcshrc"}},
		{Why: shell, kind: fileName, pattern: ".kshrc", Examples: []string{"~/.kshrc"}},
		{Why: shell, kind: fileName, pattern: ".mkshrc", Examples: []string{"~/.mkshrc"}},
		{Why: shell, kind: fileName, pattern: ".login", Examples: []string{"~/.login"}},
		{Why: shell, kind: fileName, pattern: ".logout", Examples: []string{"~/.logout"}},
		{Why: "readline reads its key bindings from it: .inputrc", kind: fileName, pattern: ".inputrc", Examples: []string{"~/.inputrc"}},
		{Why: "direnv runs it on entering the folder: .envrc", kind: fileName, pattern: ".envrc", Examples: []string{"~/projects/app/.envrc"}},
		{Why: "fish runs its configuration and functions: ~/.config/fish", kind: homeDir, pattern: ".config/fish", Examples: []string{"~/.config/fish/config.fish", "~/.config/fish/conf.d/path.fish", "~/.config/fish/functions/ls.fish"}},
		{Why: shell, kind: fileName, pattern: "config.fish", Examples: []string{"~/projects/app/config.fish"}},
		{Why: "the X session runs it at login", kind: fileName, pattern: ".xprofile", Examples: []string{"~/.xprofile"}},
		{Why: "the X session runs it at login", kind: fileName, pattern: ".xinitrc", Examples: []string{"~/.xinitrc"}},
		{Why: "the X session runs it at login", kind: fileName, pattern: ".xsession", Examples: []string{"~/.xsession"}},
		{Why: "the X session runs it at login", kind: fileName, pattern: ".xsessionrc", Examples: []string{"~/.xsessionrc"}},
		{Why: "tmux runs the commands in its configuration (run-shell)", kind: fileName, pattern: ".tmux.conf", Examples: []string{"~/.tmux.conf"}},
		{Why: "tmux runs the commands in its configuration (run-shell)", kind: homeDir, pattern: ".config/tmux", Examples: []string{"~/.config/tmux/tmux.conf"}},
		// SSH.
		{Why: "sshd runs ~/.ssh/rc at every login and ~/.ssh/config can run ProxyCommand: ~/.ssh", kind: homeDir, pattern: ".ssh", Examples: []string{"~/.ssh/rc", "~/.ssh/config", "~/.ssh/authorized_keys"}},
		// Python.
		{Why: "Python runs .pth files and imports packages from site-packages", kind: component, pattern: "site-packages", Examples: []string{"~/.local/lib/python3.12/site-packages/evil.pth", "~/projects/app/.venv/lib/python3.12/site-packages/requests/__init__.py", "~/Library/Python/3.12/lib/python/site-packages/evil.pth"}},
		{Why: "Python runs .pth files and imports packages from dist-packages", kind: component, pattern: "dist-packages", Examples: []string{"~/.local/lib/python3/dist-packages/evil.pth"}},
		{Why: "Python runs the import lines of .pth files at every start", kind: suffix, pattern: ".pth", Examples: []string{"~/Downloads/evil.pth"}},
		{Why: "Python imports it at every start: sitecustomize", kind: fileName, pattern: "sitecustomize.py", Examples: []string{"~/projects/app/sitecustomize.py"}},
		{Why: "Python imports it at every start: usercustomize", kind: fileName, pattern: "usercustomize.py", Examples: []string{"~/projects/app/usercustomize.py"}},
		{Why: "IPython runs its startup scripts: ~/.ipython", kind: homeDir, pattern: ".ipython", Examples: []string{"~/.ipython/profile_default/startup/00-init.py"}},
		{Why: "pip's configuration picks the package index and install options", kind: homeDir, pattern: ".config/pip", Examples: []string{"~/.config/pip/pip.conf"}},
		{Why: "pip's configuration picks the package index and install options", kind: homeDir, pattern: ".pip", Examples: []string{"~/.pip/pip.conf"}},
		// Version control.
		{Why: "git config can run programs (core.fsmonitor, core.pager, aliases): ~/.gitconfig", kind: fileName, pattern: ".gitconfig", Examples: []string{"~/.gitconfig"}},
		{Why: "git config can run programs (core.fsmonitor, core.pager, aliases): ~/.config/git", kind: homeDir, pattern: ".config/git", Examples: []string{"~/.config/git/config", "~/.config/git/attributes"}},
		{Why: "git runs a repository's hooks and its config can run programs (core.fsmonitor): .git", kind: component, pattern: ".git", Examples: []string{"~/projects/app/.git/config", "~/projects/app/.git/hooks/pre-commit", "~/projects/app/.git"}},
		{Why: "git runs husky's hooks: .husky", kind: component, pattern: ".husky", Examples: []string{"~/projects/app/.husky/pre-commit"}},
		{Why: "Mercurial runs the hooks its config names: .hgrc", kind: fileName, pattern: ".hgrc", Examples: []string{"~/.hgrc"}},
		{Why: "Mercurial runs the hooks a repository's .hg/hgrc names: .hg", kind: component, pattern: ".hg", Examples: []string{"~/projects/app/.hg/hgrc"}},
		// Editors and IDEs.
		{Why: editor, kind: fileName, pattern: ".vimrc", Examples: []string{"~/.vimrc", "~/projects/app/.vimrc"}},
		{Why: editor, kind: fileName, pattern: "_vimrc", Examples: []string{"~/_vimrc"}},
		{Why: editor, kind: fileName, pattern: ".gvimrc", Examples: []string{"~/.gvimrc"}},
		{Why: editor, kind: fileName, pattern: ".exrc", Examples: []string{"~/projects/app/.exrc"}},
		{Why: editor, kind: fileName, pattern: ".nvimrc", Examples: []string{"~/projects/app/.nvimrc"}},
		{Why: "Vim runs its plugins and vimrc at start-up: ~/.vim", kind: homeDir, pattern: ".vim", Examples: []string{"~/.vim/plugin/evil.vim", "~/.vim/vimrc"}},
		{Why: "Neovim runs init.lua and its plugins at start-up: ~/.config/nvim", kind: homeDir, pattern: ".config/nvim", Examples: []string{"~/.config/nvim/init.lua", "~/.config/nvim/plugin/evil.lua"}},
		{Why: editor, kind: fileName, pattern: ".emacs", Examples: []string{"~/.emacs"}},
		{Why: editor, kind: fileName, pattern: ".emacs.el", Examples: []string{"~/.emacs.el"}},
		{Why: editor, kind: fileName, pattern: ".spacemacs", Examples: []string{"~/.spacemacs"}},
		{Why: "Emacs runs init.el at start-up: ~/.emacs.d", kind: homeDir, pattern: ".emacs.d", Examples: []string{"~/.emacs.d/init.el"}},
		{Why: "Emacs runs init.el at start-up: ~/.config/emacs", kind: homeDir, pattern: ".config/emacs", Examples: []string{"~/.config/emacs/init.el"}},
		{Why: "VS Code runs a workspace's tasks (runOn folderOpen) and settings can name programs: .vscode", kind: component, pattern: ".vscode", Examples: []string{"~/projects/app/.vscode/tasks.json", "~/projects/app/.vscode/settings.json"}},
		{Why: "VS Code user settings and tasks can run programs", kind: homeDir, pattern: ".config/code/user", Examples: []string{"~/.config/Code/User/settings.json"}},
		{Why: "VS Code user settings and tasks can run programs", kind: homeDir, pattern: "library/application support/code/user", Examples: []string{"~/Library/Application Support/Code/User/tasks.json"}},
		{Why: "JetBrains IDEs run a project's run configurations and startup tasks: .idea", kind: component, pattern: ".idea", Examples: []string{"~/projects/app/.idea/workspace.xml"}},
		{Why: "dev containers run the commands it names on build and start: .devcontainer", kind: component, pattern: ".devcontainer", Examples: []string{"~/projects/app/.devcontainer/devcontainer.json"}},
		// Package managers and helpers that run what their config names.
		{Why: "npm's config can run programs (script-shell, node-options) and holds tokens: .npmrc", kind: fileName, pattern: ".npmrc", Examples: []string{"~/.npmrc", "~/projects/app/.npmrc"}},
		{Why: "yarn runs the script its config names (yarnPath): .yarnrc", kind: fileName, pattern: ".yarnrc", Examples: []string{"~/projects/app/.yarnrc"}},
		{Why: "yarn runs the script its config names (yarnPath): .yarnrc.yml", kind: fileName, pattern: ".yarnrc.yml", Examples: []string{"~/projects/app/.yarnrc.yml"}},
		{Why: "mail and web programs run the commands it maps to file types: .mailcap", kind: fileName, pattern: ".mailcap", Examples: []string{"~/.mailcap"}},
	}
}

// ExecRules returns the places refused to every write tool, with the
// reason and example paths of each.
func ExecRules() []ExecRule { return execRules() }

// executes returns why a write to abs would run code or change the user's
// environment, or "". Matching ignores case, as the sensitive lists do.
func (p *Policy) executes(abs string) string {
	labs := filepath.ToSlash(strings.ToLower(abs))
	home := filepath.ToSlash(strings.ToLower(p.home))
	parts := strings.Split(labs, "/")
	name := parts[len(parts)-1]
	for _, r := range execRules() {
		switch r.kind {
		case homeDir:
			if withinSlash(labs, home+"/"+r.pattern) {
				return r.Why
			}
		case absDir:
			if withinSlash(labs, r.pattern) {
				return r.Why
			}
		case component:
			for _, part := range parts {
				if part == r.pattern {
					return r.Why
				}
			}
		case fileName:
			if name == r.pattern {
				return r.Why
			}
		case suffix:
			if strings.HasSuffix(name, r.pattern) {
				return r.Why
			}
		}
	}
	return ""
}

func withinSlash(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}
