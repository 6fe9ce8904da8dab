package skills

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/hestia-dev/hestia/internal/untrusted"
)

// Finding is one match of the scanner.
type Finding struct {
	Rule     string `json:"rule"`
	Category string `json:"category"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Excerpt  string `json:"excerpt"`
	Why      string `json:"why"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s (%s): %s", f.File, f.Line, f.Rule, f.Category, f.Why)
}

// Scanner categories.
const (
	CatDestructive = "destructive command"
	CatExfil       = "credential exfiltration"
	CatInjection   = "prompt injection"
	CatPersistence = "persistence"
	CatReverse     = "reverse shell"
	CatObfuscation = "obfuscation"
	CatKeys        = "hard-coded key"
	CatHidden      = "hidden characters"
)

// pattern is one rule. It holds only constants, so the rule table is
// static data: nothing of it runs at program start, which every hestia
// process (each CLI command) would pay.
type pattern struct {
	id, cat, why, expr string
}

// compiledPatterns compiles the rules, in the order of patterns, on the
// first scan: compiling them at package init cost every process.
var compiledPatterns = sync.OnceValue(func() []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(patterns))
	for i, pt := range patterns {
		res[i] = regexp.MustCompile(pt.expr)
	}
	return res
})

// patterns is the scanner's rule set. Each is a reason to look before
// installing, not proof of malice: --accept-risk installs anyway.
var patterns = []pattern{
	// Destructive commands.
	{"rm-rf-root", CatDestructive, "recursive delete of / or ~", `(?i)\brm\s+(-[a-z]*r[a-z]*f|-[a-z]*f[a-z]*r|--recursive\s+--force|--force\s+--recursive)[a-z-]*\s+(/|~|\$HOME|\*)(\s|$|/\*)`},
	{"rm-no-preserve-root", CatDestructive, "rm --no-preserve-root", `(?i)--no-preserve-root`},
	{"mkfs", CatDestructive, "formats a filesystem", `(?i)\bmkfs(\.[a-z0-9]+)?\s+/dev/`},
	{"dd-device", CatDestructive, "dd writing to a block device", `(?i)\bdd\s+[^\n]*\bof=/dev/(sd|nvme|hd|disk|mmcblk)`},
	{"redirect-device", CatDestructive, "output redirected onto a disk device", `>\s*/dev/(sd[a-z]|nvme\d|disk\d)`},
	{"fork-bomb", CatDestructive, "fork bomb", `:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:`},
	{"chmod-777-root", CatDestructive, "world-writable permissions on / or ~", `(?i)\bchmod\s+(-R\s+)?0?777\s+(/|~|\$HOME)(\s|$)`},
	{"shred", CatDestructive, "shred/wipe of files or disks", `(?i)\b(shred|wipefs)\s+-`},
	{"git-force-push", CatDestructive, "force push rewrites remote history", `(?i)\bgit\s+push\s+[^\n]*(--force\b|-f\b)`},
	{"drop-database", CatDestructive, "drops a database or table", `(?i)\bdrop\s+(database|table)\s+`},
	// Credential exfiltration.
	{"ssh-key-read", CatExfil, "reads SSH private keys", `(?i)(~|\$HOME|/home/[^/\s]+|/root)/\.ssh/(id_[a-z0-9]+|identity)\b`},
	{"aws-credentials", CatExfil, "reads cloud credentials", `(?i)\.aws/credentials|\.config/gcloud|\.azure/`},
	{"etc-shadow", CatExfil, "reads the password database", `/etc/shadow\b`},
	{"env-to-network", CatExfil, "sends the environment over the network", `(?i)\b(env|printenv|set)\b[^\n|]*\|\s*(curl|wget|nc|ncat)\b`},
	{"curl-upload-file", CatExfil, "uploads a local file with curl", `(?i)\bcurl\b[^\n]*(-d|--data(-binary)?|-F|--form|-T|--upload-file)\s*['"]?@?[^\s'"]*(\.ssh|\.aws|\.env|\.netrc|\.gnupg|credentials|id_rsa|id_ed25519)`},
	{"netrc-gnupg", CatExfil, "reads .netrc or GnuPG secrets", `(?i)(~|\$HOME)/\.(netrc|gnupg)\b`},
	{"browser-cookies", CatExfil, "reads browser cookie or login stores", `(?i)(Cookies|Login Data|cookies\.sqlite|logins\.json|key4\.db)\b`},
	{"keychain-dump", CatExfil, "dumps the macOS keychain", `(?i)\bsecurity\s+(dump-keychain|find-generic-password|find-internet-password)`},
	{"hestia-token", CatExfil, "reads Hestia's auth token or secrets", `(?i)hestia/(auth-token|secrets)`},
	// Prompt injection.
	{"ignore-instructions", CatInjection, "tells the model to ignore its instructions", `(?i)\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|system)\s+(instructions|prompts?|rules|messages)`},
	{"system-prompt-reveal", CatInjection, "asks for the system prompt", `(?i)\b(reveal|print|show|output|repeat)\s+(your|the)\s+(system\s+prompt|hidden\s+instructions)`},
	{"role-hijack", CatInjection, "tries to change the model's role or rules", `(?i)\byou\s+are\s+now\s+(in\s+)?(developer|dan|jailbreak|unrestricted|god)\s*(mode)?\b`},
	{"hide-from-user", CatInjection, "tells the model to hide actions from the user", `(?i)\b(do\s+not|don't|never)\s+(tell|inform|notify|ask|show)\s+(the\s+)?user\b`},
	{"template-tokens", CatInjection, "chat-template control tokens", `<\|(im_start|im_end|system|endoftext|eot_id|start_header_id)\|>|\[/?INST\]`},
	{"fake-approval", CatInjection, "claims approval was already given", `(?i)\b(the\s+)?user\s+(has\s+)?(already\s+)?(approved|authorized|consented)\b`},
	{"bypass-policy", CatInjection, "tells the model to get around approvals or policy", `(?i)\b(bypass|skip|avoid|disable|circumvent)\s+(the\s+)?(approval|policy|confirmation|safety|sandbox)`},
	// Persistence.
	{"crontab", CatPersistence, "installs a cron job", `(?i)\bcrontab\s+(-[a-z]\s+)*(-|\S+)|/etc/cron(\.d|tab)|/var/spool/cron`},
	{"systemd-unit", CatPersistence, "installs or enables a systemd unit", `(?i)\bsystemctl\s+(--user\s+)?(enable|link)\b|\.config/systemd/user/|/etc/systemd/system/`},
	{"launchd", CatPersistence, "installs a launchd agent", `(?i)LaunchAgents/|LaunchDaemons/|\blaunchctl\s+(load|bootstrap)\b`},
	{"authorized-keys", CatPersistence, "adds an SSH authorized key", `(?i)authorized_keys`},
	{"shell-rc", CatPersistence, "modifies a shell start-up file", `(?i)>>?\s*(~|\$HOME)/\.(bashrc|zshrc|profile|bash_profile|zprofile|config/fish/config\.fish)`},
	{"rc-local", CatPersistence, "modifies system start-up scripts", `/etc/(rc\.local|profile\.d/|init\.d/)`},
	{"git-hooks", CatPersistence, "installs a git hook", `\.git/hooks/`},
	// Reverse shells.
	{"dev-tcp", CatReverse, "bash /dev/tcp connection", `/dev/(tcp|udp)/[^\s/]+/\d+`},
	{"nc-exec", CatReverse, "netcat executing a shell", `(?i)\b(nc|ncat|netcat)\b[^\n]*\s(-e|-c|--exec|--sh-exec)\s`},
	{"socat-exec", CatReverse, "socat executing a program", `(?i)\bsocat\b[^\n]*\bexec:`},
	{"python-socket-shell", CatReverse, "python socket with a spawned shell", `(?i)import\s+socket[^\n]*(subprocess|pty\.spawn|os\.dup2)`},
	{"mkfifo-shell", CatReverse, "named pipe shell", `(?i)\bmkfifo\b[^\n]*\|\s*(/bin/)?(ba|z)?sh\b`},
	{"php-perl-ruby-socket", CatReverse, "scripting language socket shell", `(?i)\b(fsockopen|TCPSocket\.(new|open)|IO::Socket::INET)\b`},
	// Obfuscation.
	{"base64-exec", CatObfuscation, "decodes base64 into a shell", `(?i)base64\s+(-d|--decode|-D)\b[^\n]*\|\s*(ba|z)?sh\b`},
	{"curl-pipe-shell", CatObfuscation, "pipes a download into a shell", `(?i)\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(ba|z)?sh\b`},
	{"eval-decode", CatObfuscation, "evaluates decoded or downloaded code", `(?i)\beval\s*\(?\s*[$"'(]?\s*(atob|base64|echo\s+[A-Za-z0-9+/=]{20,}|\$\(curl|\$\(wget)`},
	{"powershell-encoded", CatObfuscation, "PowerShell encoded command", `(?i)powershell[^\n]*\s-(e|enc|encodedcommand)\s+[A-Za-z0-9+/=]{16,}`},
	{"hex-blob", CatObfuscation, "long escaped hex string", `(\\x[0-9a-fA-F]{2}){24,}`},
	{"long-base64", CatObfuscation, "long base64 blob", `[A-Za-z0-9+/]{300,}={0,2}`},
	// Hard-coded keys.
	{"aws-key", CatKeys, "AWS access key id", `\bAKIA[0-9A-Z]{16}\b`},
	{"openai-key", CatKeys, "OpenAI/Anthropic-style secret key", `\bsk-(ant-|proj-)?[A-Za-z0-9_-]{20,}`},
	{"github-token", CatKeys, "GitHub token", `\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{40,}`},
	{"slack-token", CatKeys, "Slack token", `\bxox[abprs]-[A-Za-z0-9-]{10,}`},
	{"private-key", CatKeys, "private key block", `-----BEGIN ([A-Z]+ )?PRIVATE KEY-----`},
	{"google-key", CatKeys, "Google API key", `\bAIza[0-9A-Za-z_-]{35}\b`},
	{"stripe-key", CatKeys, "Stripe live key", `\b(sk|rk)_live_[0-9A-Za-z]{20,}`},
	{"gitlab-token", CatKeys, "GitLab token", `\bglpat-[A-Za-z0-9_-]{20,}`},
}

// PatternCount is how many rules the scanner has (hidden-character
// detection comes on top).
func PatternCount() int { return len(patterns) }

const (
	maxScanFiles = 200
	maxScanBytes = 4 << 20
)

// Scan checks every regular file under dir. Binary files are reported as
// such (a skill is text). Symlinks are findings: they could point anywhere.
func Scan(dir string) ([]Finding, error) {
	var out []Finding
	files, total := 0, 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.Type()&fs.ModeSymlink != 0 {
			out = append(out, Finding{Rule: "symlink", Category: CatObfuscation, File: rel, Why: "symbolic links are not allowed in a skill"})
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if files++; files > maxScanFiles {
			return fmt.Errorf("more than %d files", maxScanFiles)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if total += len(b); total > maxScanBytes {
			return fmt.Errorf("more than %d bytes", maxScanBytes)
		}
		out = append(out, ScanText(rel, string(b))...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning %s: %w", dir, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// ScanText checks one file's content.
func ScanText(file, text string) []Finding {
	var out []Finding
	if strings.IndexByte(text, 0) >= 0 {
		return []Finding{{Rule: "binary", Category: CatObfuscation, File: file, Why: "binary content in a skill"}}
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		for i, re := range compiledPatterns() {
			if loc := re.FindStringIndex(l); loc != nil {
				pt := patterns[i]
				f := Finding{Rule: pt.id, Category: pt.cat, File: file, Line: line, Why: pt.why}
				if pt.cat != CatKeys { // never repeat a key
					f.Excerpt = excerpt(l, loc)
				}
				out = append(out, f)
			}
		}
		if _, rep := untrusted.Sanitize(l); rep.Hidden() > 0 {
			out = append(out, Finding{Rule: "hidden-unicode", Category: CatHidden, File: file, Line: line, Why: fmt.Sprintf("%d hidden or direction-changing characters", rep.Hidden())})
		}
	}
	return out
}

func excerpt(l string, loc []int) string {
	start, end := max(0, loc[0]-20), min(len(l), loc[1]+20)
	s := strings.ToValidUTF8(l[start:end], "")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120])
	}
	return strings.TrimSpace(s)
}
