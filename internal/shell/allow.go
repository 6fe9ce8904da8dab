package shell

import (
	"strings"
)

// program describes an allow-listed program: which options are refused
// (they write files, run other programs, follow symlinks out of the
// checked tree or never end) and how its operands are read.
type program struct {
	// refused maps an option (exact, or a prefix ending in '=') to why.
	refused map[string]string
	// pattern: the first operand is a pattern or filter, not a path.
	pattern bool
	// recursive: directory operands are walked by the program (always,
	// or when one of recursiveFlags is given).
	recursive      bool
	recursiveFlags []string
	// maxOperands, when > 0, bounds the operands (uniq's second operand
	// is an output file).
	maxOperands int
	// shortRefused are single letters refused inside bundled short
	// options (-rfL).
	shortRefused map[byte]string
}

const (
	whyExec    = "it runs other programs"
	whyWrite   = "it writes files"
	whyFollow  = "it follows symbolic links out of the checked folders"
	whyForever = "it never ends"
)

// allowed are the read-only programs shell_run may start.
var allowed = map[string]program{
	"ls":        {recursiveFlags: []string{"-R", "--recursive"}, shortRefused: map[byte]string{'R': ""}, refused: map[string]string{}},
	"cat":       {},
	"head":      {},
	"tail":      {refused: map[string]string{"-f": whyForever, "-F": whyForever, "--follow": whyForever, "--follow=": whyForever, "--retry": whyForever}, shortRefused: map[byte]string{'f': whyForever, 'F': whyForever}},
	"wc":        {refused: map[string]string{"--files0-from=": "it reads a list of files the policy cannot see"}},
	"sort":      {refused: map[string]string{"-o": whyWrite, "--output": whyWrite, "--output=": whyWrite, "--compress-program": whyExec, "--compress-program=": whyExec, "-T": whyWrite, "--temporary-directory=": whyWrite, "--files0-from=": "it reads a list of files the policy cannot see"}, shortRefused: map[byte]string{'o': whyWrite, 'T': whyWrite}},
	"uniq":      {maxOperands: 1},
	"cut":       {},
	"tr":        {pattern: true},
	"grep":      {pattern: true, recursiveFlags: []string{"-r", "--recursive", "-d", "--directories=recurse"}, shortRefused: map[byte]string{'R': whyFollow}, refused: map[string]string{"-R": whyFollow, "--dereference-recursive": whyFollow}},
	"egrep":     {pattern: true, recursiveFlags: []string{"-r", "--recursive"}, shortRefused: map[byte]string{'R': whyFollow}, refused: map[string]string{"-R": whyFollow, "--dereference-recursive": whyFollow}},
	"fgrep":     {pattern: true, recursiveFlags: []string{"-r", "--recursive"}, shortRefused: map[byte]string{'R': whyFollow}, refused: map[string]string{"-R": whyFollow, "--dereference-recursive": whyFollow}},
	"rg":        {pattern: true, recursive: true, shortRefused: map[byte]string{'L': whyFollow, 'z': whyExec}, refused: map[string]string{"-L": whyFollow, "--follow": whyFollow, "--pre": whyExec, "--pre=": whyExec, "--pre-glob": whyExec, "--search-zip": whyExec, "-z": whyExec}},
	"find":      {recursive: true, refused: map[string]string{"-exec": whyExec, "-execdir": whyExec, "-ok": whyExec, "-okdir": whyExec, "-delete": whyWrite, "-fprint": whyWrite, "-fprint0": whyWrite, "-fprintf": whyWrite, "-fls": whyWrite, "-L": whyFollow, "-follow": whyFollow, "-H": whyFollow}},
	"stat":      {},
	"file":      {refused: map[string]string{"-f": "it reads a list of files the policy cannot see", "--files-from": "it reads a list of files the policy cannot see", "-C": whyWrite, "--compile": whyWrite, "-m": "it loads magic files", "--magic-file": "it loads magic files"}},
	"du":        {recursive: true, refused: map[string]string{"-L": whyFollow, "--dereference": whyFollow, "--files0-from=": "it reads a list of files the policy cannot see"}, shortRefused: map[byte]string{'L': whyFollow}},
	"df":        {},
	"date":      {refused: map[string]string{"-s": "it sets the clock", "--set": "it sets the clock", "--set=": "it sets the clock", "-f": "it reads a file", "--file=": "it reads a file"}, shortRefused: map[byte]string{'s': "it sets the clock"}},
	"jq":        {pattern: true, refused: map[string]string{"-f": "it loads a program file", "--from-file": "it loads a program file", "-L": "it loads modules"}},
	"diff":      {recursiveFlags: []string{"-r", "--recursive"}},
	"basename":  {},
	"dirname":   {},
	"realpath":  {},
	"pwd":       {},
	"echo":      {},
	"true":      {},
	"nl":        {},
	"tac":       {},
	"rev":       {},
	"comm":      {},
	"md5sum":    {},
	"sha1sum":   {},
	"sha256sum": {},
	"cksum":     {},
	"column":    {},
	"fold":      {},
	"expand":    {},
	"paste":     {},
	"join":      {},
	"seq":       {},
	"uname":     {},
	"whoami":    {},
	"printf":    {pattern: true},
	"tree":      {recursive: true, refused: map[string]string{"-l": whyFollow, "-o": whyWrite, "-R": whyWrite}},
	"cmp":       {},
	"od":        {},
	"strings":   {},
	"numfmt":    {},
}

// Allowed lists the allow-listed program names.
func Allowed() []string {
	out := make([]string, 0, len(allowed))
	for n := range allowed {
		out = append(out, n)
	}
	return out
}

// checkOptions refuses dangerous options and reports whether the program
// will recurse into directory operands.
func (p program) checkOptions(name string, args []string) (recursive bool, err error) {
	recursive = p.recursive
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		for opt, why := range p.refused {
			if a == opt || (strings.HasSuffix(opt, "=") && strings.HasPrefix(a, opt)) || (strings.HasPrefix(opt, "--") && strings.HasPrefix(a, opt+"=")) {
				return false, refuse("%s %s is not allowed: %s", name, a, why)
			}
		}
		for _, rf := range p.recursiveFlags {
			if a == rf {
				recursive = true
			}
		}
		// Bundled short options: -rnL.
		if !strings.HasPrefix(a, "--") && len(a) > 2 {
			for i := 1; i < len(a); i++ {
				c := a[i]
				if why, bad := p.shortRefused[c]; bad {
					if why == "" {
						recursive = true
						continue
					}
					return false, refuse("%s option -%c (in %s) is not allowed: %s", name, c, a, why)
				}
				for _, rf := range p.recursiveFlags {
					if len(rf) == 2 && rf[1] == c {
						recursive = true
					}
				}
			}
		} else if why, bad := p.shortRefused[a[len(a)-1]]; bad && len(a) == 2 {
			if why == "" {
				recursive = true
			} else {
				return false, refuse("%s %s is not allowed: %s", name, a, why)
			}
		}
	}
	return recursive, nil
}
