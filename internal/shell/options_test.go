package shell

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestOptionRefusals: for every allowed program an abbreviated dangerous
// option, or one the program has but shell_run does not allow, is refused
// before anything runs, with the program and the option named.
func TestOptionRefusals(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t)
	cases := []struct{ line, reason string }{
		// The reported bypasses.
		{"sort --compress-prog=sh Documents/notes.md", "sort --compress-prog (short for --compress-program) is not allowed: it runs other programs"},
		{"sort --compress=sh Documents/notes.md", "it runs other programs"},
		{"sort --co sh Documents/notes.md", "it runs other programs"},
		{"grep --recur KEY", "would read"},
		{"grep --direc=recurse KEY ~", "would read"},
		{"grep --directories=rec KEY ~", "would read"},
		{"grep -d recurse KEY ~", "would read"},
		{"grep -drecurse KEY ~", "would read"},
		{"grep -rR KEY Documents", "grep -R (in -rR) is not allowed: it follows symbolic links"},
		{"grep --dereference-r KEY Documents", "follows symbolic links"},
		{"grep --deref KEY Documents", "follows symbolic links"},
		{"grep -ni -r KEY ~", "would read"},
		{"grep --file=.env x Documents/notes.md", ".env files hold secrets"},
		{"grep --fil=.env x Documents/notes.md", "option --fil is ambiguous (--file, --files-without-match, --files-with-matches)"},
		{"grep -f .env Documents/notes.md", ".env files hold secrets"},
		{"grep -f.env Documents/notes.md", ".env files hold secrets"},
		{"grep --exclude-f .ssh/id_ed25519 -r x Documents", "is refused"},
		{"grep --d=recurse KEY ~", "ambiguous"},
		{"grep --colr x Documents/notes.md", "unknown option --colr"},
		{"egrep --recu KEY", "would read"},
		{"fgrep -R KEY Documents", "follows symbolic links"},
		{"sort --out=Documents/x Documents/notes.md", "sort --out (short for --output) is not allowed: it writes files"},
		{"sort -uo Documents/x Documents/notes.md", "sort -o (in -uo) is not allowed: it writes files"},
		{"sort --temp=Documents Documents/notes.md", "it writes files"},
		{"sort --c=x Documents/notes.md", "ambiguous (--check, --compress-program)"},
		{"sort --random-source=.env Documents/notes.md", ".env files hold secrets"},
		{"sort --files0=Documents/notes.md", "reads a list of files"},
		// One or more per remaining program.
		{"ls -RL Documents", "ls -L (in -RL) is not allowed: it follows symbolic links"},
		{"ls --deref -R Documents", "ambiguous"},
		{"ls --dereference --recur Documents", "ls --dereference is not allowed: it follows symbolic links"},
		{"ls --frobnicate", "ls: unknown option --frobnicate"},
		{"cat --evil Documents/notes.md", "cat: unknown option --evil"},
		{"head --fol Documents/notes.md", "head: unknown option --fol"},
		{"tail --fol Documents/notes.md", "never ends"},
		{"tail --follow=name Documents/notes.md", "never ends"},
		{"tail -5f Documents/notes.md", "tail: unknown option -5 (in -5f)"},
		{"tail --ret Documents/notes.md", "never ends"},
		{"wc --files0=Documents/notes.md", "wc --files0 (short for --files0-from) is not allowed"},
		{"uniq --outp Documents/notes.md", "uniq: unknown option --outp"},
		{"cut --fil=1 Documents/notes.md", "cut: unknown option --fil"},
		{"tr --output a b", "tr: unknown option --output"},
		{"rg --pre=sh KEY Documents", "rg --pre is not allowed: it runs other programs"},
		{"rg --pr=sh KEY Documents", "rg: unknown option --pr"},
		{"rg --hostname-bin=sh KEY Documents", "it runs other programs"},
		{"rg -z KEY Documents", "it runs other programs"},
		{"rg -L KEY Documents", "follows symbolic links"},
		{"find Documents -exe cat {} ;", "find: unknown or unsupported primary -exe"},
		{"find Documents -execdir cat {} +", "-execdir is not allowed: it runs other programs"},
		{"find Documents -fprin Documents/x", "unknown or unsupported primary -fprin"},
		{"find Documents -files0-from Documents/notes.md", "reads a list of files"},
		{"find -H Documents", "follows symbolic links"},
		{"find Documents -follow", "follows symbolic links"},
		{"find Documents -newer .env", ".env files hold secrets"},
		{"find Documents -name x Downloads", `unexpected word "Downloads"`},
		{"stat --print=%n --foo Documents", "stat: unknown option --foo"},
		{"file --magic=Documents/notes.md Documents/notes.md", "file --magic (short for --magic-file) is not allowed"},
		{"file --uncompress-n Documents/notes.md", "file --uncompress-n (short for --uncompress-noreport) is not allowed: it runs other programs"},
		{"file -zb Documents/notes.md", "file -z (in -zb) is not allowed: it runs other programs"},
		{"file --files=Documents/notes.md", "reads a list of files"},
		{"du --dereference Documents", "du --dereference is not allowed: it follows symbolic links"},
		{"du -L Documents", "follows symbolic links"},
		{"du --files0=Documents/notes.md", "reads a list of files"},
		{"df --sy", "df --sy (short for --sync) is not allowed"},
		{"date --se 2020-01-01", "sets the clock"},
		{"date -us 2020-01-01", "sets the clock"},
		{"date 010100002020", "sets the clock"},
		{"date --fi=.env", ".env files hold secrets"},
		{"jq --from-f Documents/notes.md", "jq: unknown option --from-f"},
		{"jq -f Documents/notes.md", "loads the program from a file"},
		{"jq -L . -n 1", "loads modules"},
		{`jq -n 'import "x" as $x; $x'`, "jq filter uses import"},
		{`jq -n 'include "x"; 1'`, "jq filter uses include"},
		{"jq --rawfile k .env -n '$k'", ".env files hold secrets"},
		{"diff --pag Documents/notes.md Documents/notes.md", "diff --pag (short for --paginate) is not allowed: it runs pr"},
		{"diff --from=.env Documents/notes.md", ".env files hold secrets"},
		{"diff -X .env Documents/notes.md Documents/notes.md", ".env files hold secrets"},
		{"basename --multi=x a", "basename --multiple takes no value (--multi=x)"},
		{"basename --foo a", "basename: unknown option --foo"},
		{"dirname --multiple a/b", "dirname: unknown option --multiple"},
		{"realpath --relative-t=.ssh Documents", "is refused"},
		{"realpath --foo Documents", "realpath: unknown option --foo"},
		{"pwd --foo", "pwd: unknown option --foo"},
		{"echo --foo", "echo: unknown option --foo"},
		{"true --foo", "true: unknown option --foo"},
		{"nl --bar Documents/notes.md", "nl: unknown option --bar"},
		{"tac --foo Documents/notes.md", "tac: unknown option --foo"},
		{"rev --foo Documents/notes.md", "rev: unknown option --foo"},
		{"comm --foo Documents/notes.md Documents/notes.md", "comm: unknown option --foo"},
		{"md5sum --che Documents/notes.md", "md5sum --che (short for --check) is not allowed: it reads a list of files"},
		{"sha1sum -c Documents/notes.md", "reads a list of files"},
		{"sha256sum -bc Documents/notes.md", "sha256sum -c (in -bc) is not allowed"},
		{"cksum --ch Documents/notes.md", "reads a list of files"},
		{"column --foo Documents/notes.md", "column: unknown option --foo"},
		{"fold --foo Documents/notes.md", "fold: unknown option --foo"},
		{"expand --foo Documents/notes.md", "expand: unknown option --foo"},
		{"paste --foo Documents/notes.md", "paste: unknown option --foo"},
		{"join --foo Documents/notes.md Documents/notes.md", "join: unknown option --foo"},
		{"seq --foo 5", "seq: unknown option --foo"},
		{"uname --foo", "uname: unknown option --foo"},
		{"whoami --foo", "whoami: unknown option --foo"},
		{"printf --help", "printf: unknown option --help"},
		{"tree -l Documents", "tree -l is not allowed: it follows symbolic links"},
		{"tree -o Documents/x Documents", "it writes files"},
		{"tree --fromf Documents", "tree: unknown option --fromf"},
		{"cmp --foo Documents/notes.md Documents/notes.md", "cmp: unknown option --foo"},
		{"od --foo Documents/notes.md", "od: unknown option --foo"},
		{"strings @.ssh/id_ed25519", "reads more arguments from the file after '@'"},
		{"strings --tar=x Documents/notes.md", "strings --tar (short for --target) is not allowed"},
		{"numfmt --foo 5", "numfmt: unknown option --foo"},
		// A value is consumed: -e's pattern, not recursion; -o FILE, not -k.
		{"sort -k 2 -o Documents/x Documents/notes.md", "it writes files"},
		{"grep -e x -f .env Documents/notes.md", ".env files hold secrets"},
		{"grep -A", "grep -A needs a value"},
	}
	tested := map[string]bool{}
	for _, c := range cases {
		tested[strings.Fields(c.line)[0]] = true
		out, isErr := run(t, r, c.line)
		if !isErr || !strings.Contains(out, c.reason) || !strings.HasSuffix(out, "(nothing was run)") {
			t.Errorf("%q: %v\n%s\n(want the reason %q)", c.line, isErr, out, c.reason)
		}
	}
	for _, name := range Allowed() {
		if !tested[name] {
			t.Errorf("no refusal case for %s", name)
		}
	}
}

// TestOptionFormsRun: the option forms people write still run, and give
// the program's answer (the long options spelled out, values consumed).
func TestOptionFormsRun(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t)
	cases := []struct{ line, want string }{
		{"grep -e -r Documents/notes.md", "exit: 1"},
		{"grep -- -r Documents/notes.md", "exit: 1"},
		{"grep --regex=total Documents/invoice-2024.txt", "total: 120 EUR"},
		{"grep --ignore-c -c INVOICE Documents/invoice-2024.txt", "1"},
		{"grep -A1 -n Invoice Documents/invoice-2024.txt", "2-total: 120 EUR"},
		{"grep -eInvoice -A 1 Documents/invoice-2024.txt", "total: 120 EUR"},
		{"grep -c5 total Documents/invoice-2024.txt", "1"},
		{"grep --direc=recurse -il invoice Documents/sub", "Documents/sub/invoice.txt"},
		{"grep -d skip -c x Documents/notes.md", "0"},
		{"grep --col=never -h total Documents/invoice-2024.txt", "total: 120 EUR"},
		{"sort -k 2 -t: Documents/invoice-2024.txt", "Invoice 2024\ntotal: 120 EUR"},
		{"sort --rev Documents/invoice-2024.txt", "total: 120 EUR\nInvoice 2024"},
		{"sort -rk1 Documents/invoice-2024.txt", "total: 120 EUR\nInvoice 2024"},
		{"head -1 Documents/invoice-2024.txt", "Invoice 2024\n"},
		{"head -n1 Documents/invoice-2024.txt", "Invoice 2024\n"},
		{"head -c 7 Documents/invoice-2024.txt", "Invoice\n"},
		{"tail -n 1 Documents/invoice-2024.txt", "total: 120 EUR"},
		{"wc --li Documents/notes.md", "1 Documents/notes.md"},
		{"ls -la Documents/sub", "invoice.txt"},
		{"ls --sort=si -1 Documents", "invoice-2024.txt"},
		{"date -u +%Y", "exit: 0\n2"},
		{"date -d 2024-01-02 +%F", "2024-01-02"},
		{"seq -3 -2", "-3\n-2"},
		{"seq -s, 3", "1,2,3"},
		{"find Documents -name '*.txt' -newer Documents/notes.md -o -type d -print", "Documents"},
		{"echo -n hi", "hi"},
		{"printf -- '-%s' x", "-x"},
		{"cut -d: -f1 Documents/invoice-2024.txt", "total"},
		{"diff -u Documents/notes.md Documents/notes.md", "exit: 0"},
		{"diff -rq Documents/sub Documents/sub", "exit: 0"},
		{"uniq -c Documents/notes.md", "1 no money here"},
		{"du -sh Documents/sub", "Documents/sub"},
		{"stat -c %s Documents/notes.md", "14"},
		{"od -An -c -N2 Documents/notes.md", "n   o"},
		{"strings -n 3 Documents/notes.md", "no money here"},
		{"cat -n -- Documents/notes.md", "1\tno money here"},
		{"md5sum --tag Documents/notes.md", "MD5 (Documents/notes.md)"},
		{"numfmt --to=iec 2048", "2.0K"},
	}
	r.defaults()
	for _, c := range cases {
		name := strings.Fields(c.line)[0]
		if _, err := r.lookPath(name); err != nil {
			t.Logf("%s is not installed; skipping %q", name, c.line)
			continue
		}
		out, isErr := run(t, r, c.line)
		if isErr || !strings.Contains(out, c.want) {
			t.Errorf("%s:\n%s\n(want %q)", c.line, out, c.want)
		}
	}
}

// TestParseOptions: what each program is handed, and what is checked as a
// path, for the option forms getopt accepts.
func TestParseOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line                      string
		args, operands, paths     []string
		recursive, patternOptions bool
	}{
		{line: "sort --rev -k 2 x", args: []string{"--reverse", "-k", "2", "x"}, operands: []string{"x"}},
		{line: "sort --che=q x", args: []string{"--check=quiet", "x"}, operands: []string{"x"}},
		{line: "grep --direc=rec p", args: []string{"--directories=recurse", "p"}, operands: []string{"p"}, recursive: true},
		{line: "grep -d rec p", args: []string{"-d", "recurse", "p"}, operands: []string{"p"}, recursive: true},
		{line: "grep -nrec p", args: []string{"-nrec", "p"}, operands: []string{"p"}, recursive: true, patternOptions: true},
		{line: "grep --recur p", args: []string{"--recursive", "p"}, operands: []string{"p"}, recursive: true},
		{line: "grep -e -r f", args: []string{"-e", "-r", "f"}, operands: []string{"f"}, patternOptions: true},
		{line: "grep -- -r f", args: []string{"--", "-r", "f"}, operands: []string{"-r", "f"}},
		{line: "grep f -r", args: []string{"f", "-r"}, operands: []string{"f"}, recursive: true},
		{line: "grep --file p x", args: []string{"--file", "p", "x"}, operands: []string{"x"}, paths: []string{"p"}, patternOptions: true},
		{line: "grep --col x", args: []string{"--color", "x"}, operands: []string{"x"}},
		{line: "grep --colour=al x", args: []string{"--colour=always", "x"}, operands: []string{"x"}},
		{line: "ls --color always", args: []string{"--color", "always"}, operands: []string{"always"}},
		{line: "diff --from-f a b", args: []string{"--from-file", "a", "b"}, operands: []string{"b"}, paths: []string{"a"}},
		{line: "head -20 f", args: []string{"-20", "f"}, operands: []string{"f"}},
		{line: "seq -5 5", args: []string{"-5", "5"}, operands: []string{"-5", "5"}},
		{line: "seq -w 1 -1", args: []string{"-w", "1", "-1"}, operands: []string{"1", "-1"}},
		{line: "find . -newermt 2024-01-01 -newer f", args: []string{".", "-newermt", "2024-01-01", "-newer", "f"}, operands: []string{"."}, paths: []string{"f"}, recursive: true},
		{line: "jq --arg k ./v -r .", args: []string{"--arg", "k", "./v", "-r", "."}, operands: []string{"."}},
		{line: "jq --slurpfile k f .", args: []string{"--slurpfile", "k", "f", "."}, operands: []string{"."}, paths: []string{"f"}},
		{line: "echo -n -e x -n", args: []string{"-n", "-e", "x", "-n"}, operands: []string{"x", "-n"}},
		{line: "od -w16 -An f", args: []string{"-w16", "-An", "f"}, operands: []string{"f"}},
		{line: "date -Isec", args: []string{"-Iseconds"}},
		{line: "ls -Fla x", args: []string{"-Fla", "x"}, operands: []string{"x"}},
		{line: "ls --classify=al x", args: []string{"--classify=always", "x"}, operands: []string{"x"}},
		{line: "tr a -d", args: []string{"a", "-d"}, operands: []string{"a", "-d"}},
	}
	for _, c := range cases {
		words := strings.Fields(c.line)
		p, err := allowed()[words[0]].parse(words[0], words[1:])
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if !slices.Equal(p.args, c.args) || !slices.Equal(p.operands, c.operands) || !slices.Equal(p.paths, c.paths) || p.recursive != c.recursive {
			t.Errorf("%s:\n got args %q operands %q paths %q recursive %v\nwant args %q operands %q paths %q recursive %v",
				c.line, p.args, p.operands, p.paths, p.recursive, c.args, c.operands, c.paths, c.recursive)
		}
	}
}

// TestParseOptionsBadInput: malformed option lines are refused with
// ErrRefused and a message naming the program.
func TestParseOptionsBadInput(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"grep -e", "grep --regexp", "sort --key", "grep --=x", "grep --count=3", "jq --arg k",
		"find . -name", "grep --directories=sideways", "ls --format=x", "grep -d", "grep ---r"} {
		words := strings.Fields(line)
		_, err := allowed()[words[0]].parse(words[0], words[1:])
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), words[0]) {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// TestDiffRecursiveKeepsLinks: diff -r follows links it meets inside the
// folders, which the walk does not; with -N it printed a linked key in
// full. Without a sandbox to hide the key, only --no-dereference stops it.
func TestDiffRecursiveKeepsLinks(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t)
	r.Sandbox = nil
	out, _ := run(t, r, "diff -rN Documents Downloads")
	if strings.Contains(out, "PRIVATE KEY MATERIAL") || !strings.Contains(out, "ssh-link") {
		t.Fatalf("%s", out)
	}
}
