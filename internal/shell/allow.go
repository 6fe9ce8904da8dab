package shell

import (
	"slices"
	"strings"
	"sync"
)

// program describes an allow-listed program: the options it accepts (its
// real long options are all listed, refused ones with why, so a prefix is
// resolved as the program resolves it) and how its operands are read.
// The tables follow the GNU tools (coreutils 9, grep 3, findutils 4.9,
// diffutils 3, binutils strings, util-linux column/rev) and jq 1.6/1.7,
// ripgrep 14 and tree 2; anything outside them is refused, so another
// implementation can only see fewer options, never more.
type program struct {
	opts   []option
	syntax argSyntax
	// find is find's expression table (findSyntax).
	find map[string]findPrimary
	// pattern: the first operand is a pattern or filter, not a path,
	// unless an option gave the pattern (grep -e).
	pattern bool
	// recursive: directory operands are always walked by the program.
	recursive bool
	// maxOperands, when > 0, bounds the operands (uniq's second operand
	// is an output file).
	maxOperands int
	// leadingNumber: the first word may be -NUM plus these letters (head
	// -20, tail -5c), read by the program itself, not getopt.
	leadingNumber string
	// stopAtOperand: options end at the first operand (getopt's "+");
	// negativeNumbers: also at a word like -5 or -.5 (seq).
	stopAtOperand, negativeNumbers bool
	// atFiles: an argument @FILE is replaced by the words in FILE
	// (binutils), so it is refused.
	atFiles bool
	// operand checks each operand (date's only operand is +FORMAT);
	// checkPattern checks the pattern operand (jq's filter).
	operand, checkPattern func(name, v string) error
}

const (
	whyExec    = "it runs other programs"
	whyWrite   = "it writes files"
	whyFollow  = "it follows symbolic links out of the checked folders"
	whyForever = "it never ends"
	whyList    = "it reads a list of files the policy cannot see"
	whyUnused  = "it is only useful with options that are refused here"
)

func opts(groups ...[]option) []option { return slices.Concat(groups...) }

// allowed are the read-only programs shell_run may start, built on first
// use: every package init runs in every process of the one binary, and a
// CLI query must not pay for these tables.
var allowed = sync.OnceValue(func() map[string]program {
	coreutilsSum := opts(helpVersion(), []option{
		flag('b', "binary"), flag('t', "text"), flag('z', "zero"), flag(0, "tag"),
		deny(whyList, 'c', "check"), deny(whyUnused, 0, "ignore-missing"), deny(whyUnused, 0, "quiet"),
		deny(whyUnused, 0, "status"), deny(whyUnused, 0, "strict"), deny(whyUnused, 'w', "warn"),
	})

	grepOptions := opts(helpVersion()[:1], digits(), []option{
		flag('V', "version"),
		flag('E', "extended-regexp"), flag('F', "fixed-strings", "fixed-regexp"), flag('G', "basic-regexp"), flag('P', "perl-regexp"),
		val('e', "regexp").givesPattern(), file('f', "file").givesPattern(),
		flag('i', "ignore-case"), flag('y'), flag(0, "no-ignore-case"), flag('w', "word-regexp"), flag('x', "line-regexp"),
		flag('z', "null-data"), flag('s', "no-messages"), flag('v', "invert-match"),
		val('m', "max-count"), flag('b', "byte-offset"), flag('n', "line-number"), flag(0, "line-buffered"),
		flag('H', "with-filename"), flag('h', "no-filename"), val(0, "label"), flag('o', "only-matching"),
		flag('q', "quiet", "silent"), val(0, "binary-files").oneOf("binary", "text", "without-match"),
		flag('a', "text"), flag('I'), flag('U', "binary"), flag('u', "unix-byte-offsets"),
		val('d', "directories").oneOf("read", "recurse", "skip").recursiveIf("recurse"),
		val('D', "devices").oneOf("read", "skip"),
		flag('r', "recursive").recursive(), flag('R', "dereference-recursive").recursive().followsLinks(),
		val(0, "include"), val(0, "exclude"), file(0, "exclude-from"), val(0, "exclude-dir"),
		flag('L', "files-without-match"), flag('l', "files-with-matches"), flag('c', "count"),
		flag('T', "initial-tab"), flag('Z', "null"),
		val('B', "before-context"), val('A', "after-context"), val('C', "context"),
		val(0, "group-separator"), flag(0, "no-group-separator"),
		optval(0, "color", "colour").oneOf("always", "yes", "force", "never", "no", "none", "auto", "tty", "if-tty"),
	})

	return map[string]program{
		"ls": {opts: opts(helpVersion(), []option{
			flag('a', "all"), flag('A', "almost-all"), flag(0, "author"), flag('b', "escape"), val(0, "block-size"),
			flag('B', "ignore-backups"), flag('c'), flag('C'), optval(0, "color", "colour").oneOf("always", "yes", "force", "never", "no", "none", "auto", "tty", "if-tty"),
			flag('d', "directory"), flag('D', "dired"), flag('f'), flag('F'), optval(0, "classify").oneOf("always", "yes", "force", "never", "no", "none", "auto", "tty", "if-tty"),
			flag(0, "file-type"), val(0, "format").oneOf("verbose", "long", "commas", "horizontal", "across", "vertical", "single-column"),
			flag(0, "full-time"), flag('g'), flag(0, "group-directories-first"), flag('G', "no-group"), flag('h', "human-readable"),
			flag(0, "si"), flag('H', "dereference-command-line"), flag(0, "dereference-command-line-symlink-to-dir"),
			val(0, "hide"), optval(0, "hyperlink").oneOf("always", "yes", "force", "never", "no", "none", "auto", "tty", "if-tty"),
			val(0, "indicator-style").oneOf("none", "slash", "file-type", "classify"), flag('i', "inode"), val('I', "ignore"),
			flag('k', "kibibytes"), flag('l'), flag('L', "dereference").followsLinks(), flag('m'), flag('n', "numeric-uid-gid"),
			flag('N', "literal"), flag('o'), flag('p'), flag('q', "hide-control-chars"), flag(0, "show-control-chars"),
			flag('Q', "quote-name"), val(0, "quoting-style"), flag('r', "reverse"), flag('R', "recursive").recursive(),
			flag('s', "size"), flag('S'), val(0, "sort").oneOf("none", "time", "size", "extension", "version", "width"),
			val(0, "time").oneOf("atime", "access", "use", "ctime", "status", "mtime", "modification", "birth", "creation"),
			val(0, "time-style"), flag('t'), val('T', "tabsize"), flag('u'), flag('U'), flag('v'), val('w', "width"),
			flag('x'), flag('X'), flag('Z', "context"), flag(0, "zero"), flag('1'),
		})},
		"cat": {opts: opts(helpVersion(), []option{
			flag('A', "show-all"), flag('b', "number-nonblank"), flag('e'), flag('E', "show-ends"), flag('n', "number"),
			flag('s', "squeeze-blank"), flag('t'), flag('T', "show-tabs"), flag('u'), flag('v', "show-nonprinting"),
		})},
		"head": {leadingNumber: "bcklmqvz", opts: opts(helpVersion(), []option{
			val('c', "bytes"), val('n', "lines"), flag('q', "quiet", "silent"), flag('v', "verbose"), flag('z', "zero-terminated"),
		})},
		"tail": {leadingNumber: "bcl", opts: opts(helpVersion(), []option{
			val('c', "bytes"), val('n', "lines"), flag('q', "quiet", "silent"), flag('v', "verbose"), flag('z', "zero-terminated"),
			deny(whyForever, 'f', "follow"), deny(whyForever, 'F'), deny(whyForever, 0, "retry"),
			deny(whyUnused, 's', "sleep-interval"), deny(whyUnused, 0, "pid"), deny(whyUnused, 0, "max-unchanged-stats"),
		})},
		"wc": {opts: opts(helpVersion(), []option{
			flag('c', "bytes"), flag('m', "chars"), flag('l', "lines"), flag('L', "max-line-length"), flag('w', "words"),
			val(0, "total").oneOf("auto", "always", "only", "never"), deny(whyList, 0, "files0-from"),
		})},
		"sort": {opts: opts(helpVersion(), []option{
			flag('b', "ignore-leading-blanks"), flag('d', "dictionary-order"), flag('f', "ignore-case"),
			flag('g', "general-numeric-sort"), flag('i', "ignore-nonprinting"), flag('M', "month-sort"),
			flag('h', "human-numeric-sort"), flag('n', "numeric-sort"), flag('R', "random-sort"), file(0, "random-source"),
			flag('r', "reverse"), val(0, "sort").oneOf("general-numeric", "human-numeric", "month", "numeric", "random", "version"),
			flag('V', "version-sort"), val(0, "batch-size"),
			optval(0, "check").oneOf("diagnose-first", "quiet", "silent"), flag('c'), flag('C'),
			deny(whyExec, 0, "compress-program"), flag(0, "debug"), deny(whyList, 0, "files0-from"),
			val('k', "key"), flag('m', "merge"), deny(whyWrite, 'o', "output"), flag('s', "stable"),
			val('S', "buffer-size"), val('t', "field-separator"), deny(whyWrite, 'T', "temporary-directory"),
			val(0, "parallel"), flag('u', "unique"), flag('z', "zero-terminated"),
		})},
		"uniq": {maxOperands: 1, opts: opts(helpVersion(), digits(), []option{
			flag('c', "count"), flag('d', "repeated"), flag('D'),
			optval(0, "all-repeated").oneOf("none", "prepend", "separate"), val('f', "skip-fields"),
			optval(0, "group").oneOf("separate", "prepend", "append", "both"), flag('i', "ignore-case"),
			val('s', "skip-chars"), flag('u', "unique"), flag('z', "zero-terminated"), val('w', "check-chars"),
		})},
		"cut": {opts: opts(helpVersion(), []option{
			val('b', "bytes"), val('c', "characters"), val('d', "delimiter"), val('f', "fields"), flag('n'),
			flag(0, "complement"), flag('s', "only-delimited"), val(0, "output-delimiter"), flag('z', "zero-terminated"),
		})},
		"tr": {pattern: true, stopAtOperand: true, opts: opts(helpVersion(), []option{
			flag('c', "complement"), flag('C'), flag('d', "delete"), flag('s', "squeeze-repeats"), flag('t', "truncate-set1"),
		})},
		"grep":  {pattern: true, opts: grepOptions},
		"egrep": {pattern: true, opts: grepOptions},
		"fgrep": {pattern: true, opts: grepOptions},
		"rg": {pattern: true, recursive: true, syntax: exactSyntax, opts: []option{
			flag('h', "help"), flag('V', "version"),
			val('e', "regexp").givesPattern(), file('f', "file").givesPattern(),
			flag('i', "ignore-case"), flag('s', "case-sensitive"), flag('S', "smart-case"), flag('F', "fixed-strings"),
			flag('w', "word-regexp"), flag('x', "line-regexp"), flag('v', "invert-match"), flag('U', "multiline"),
			flag(0, "multiline-dotall"), flag('P', "pcre2"), flag('o', "only-matching"), val('r', "replace"),
			flag('n', "line-number"), flag('N', "no-line-number"), flag(0, "column"), flag(0, "no-column"),
			flag(0, "heading"), flag(0, "no-heading"), flag('H', "with-filename"), flag('I', "no-filename"),
			val('A', "after-context"), val('B', "before-context"), val('C', "context"), val('m', "max-count"),
			flag('c', "count"), flag(0, "count-matches"), flag('l', "files-with-matches"), flag(0, "files-without-match"),
			flag(0, "files"), flag('q', "quiet"), flag(0, "no-messages"), flag('0', "null"), flag('a', "text"),
			flag(0, "binary"), flag(0, "json"), flag(0, "vimgrep"), flag(0, "stats"), flag(0, "trim"), flag('p', "pretty"),
			val('g', "glob"), val(0, "iglob"), val('t', "type"), val('T', "type-not"), flag(0, "type-list"),
			flag('.', "hidden"), flag(0, "no-hidden"), flag(0, "no-ignore"), flag(0, "no-ignore-vcs"), flag(0, "no-ignore-dot"),
			flag(0, "no-ignore-parent"), flag(0, "no-ignore-global"), flag(0, "no-require-git"), flag('u', "unrestricted"),
			file(0, "ignore-file"), val('d', "max-depth"), val(0, "max-filesize"), val('M', "max-columns"),
			flag(0, "max-columns-preview"), val('j', "threads"), val('E', "encoding"), flag(0, "one-file-system"),
			val(0, "sort").oneOf("none", "path", "modified", "accessed", "created"),
			val(0, "sortr").oneOf("none", "path", "modified", "accessed", "created"),
			val(0, "color").oneOf("never", "auto", "always", "ansi"), flag(0, "no-config"), flag(0, "crlf"), flag(0, "no-unicode"),
			deny(whyExec, 0, "pre"), deny(whyExec, 0, "pre-glob"), deny(whyExec, 'z', "search-zip"),
			deny(whyExec, 0, "hostname-bin"), deny(whyFollow, 'L', "follow"),
		}},
		"find": {recursive: true, syntax: findSyntax, find: findPrimaries()},
		"stat": {opts: opts(helpVersion(), []option{
			flag('L', "dereference"), flag('f', "file-system"), val(0, "cached").oneOf("always", "never", "default"),
			val('c', "format"), val(0, "printf"), flag('t', "terse"),
		})},
		"file": {opts: []option{
			flag(0, "help"), flag('v', "version"), flag('b', "brief"), flag('e', "exclude").withValue(), val(0, "exclude-quiet"),
			val('F', "separator"), flag('i', "mime"), flag(0, "apple"), flag(0, "extension"), flag(0, "mime-type"),
			flag(0, "mime-encoding"), flag('k', "keep-going"), flag('L', "dereference"), flag('h', "no-dereference"),
			flag('n', "no-buffer"), flag('N', "no-pad"), flag('0', "print0"), flag('r', "raw"), flag('s', "special-files"),
			flag('E'), flag('d', "debug"),
			deny("it loads magic files the policy cannot see", 'm', "magic-file"), deny(whyExec, 'z', "uncompress"),
			deny(whyExec, 'Z', "uncompress-noreport"), deny("it prints the parsed magic file", 'c', "checking-printout"),
			deny(whyList, 'f', "files-from"), deny(whyWrite, 'p', "preserve-date"), deny("it changes file's limits", 'P', "parameter"),
			deny("it turns off file's own sandbox", 'S', "no-sandbox"), deny(whyWrite, 'C', "compile"), deny(whyUnused, 'l', "list"),
		}},
		"du": {recursive: true, opts: opts(helpVersion(), []option{
			flag('0', "null"), flag('a', "all"), flag(0, "apparent-size"), val('B', "block-size"), flag('b', "bytes"),
			flag('c', "total"), flag('D', "dereference-args"), val('d', "max-depth"), deny(whyList, 0, "files0-from"),
			flag('H'), flag('h', "human-readable"), flag(0, "inodes"), flag('k'), flag('L', "dereference").followsLinks(),
			flag('l', "count-links"), flag('m'), flag('P', "no-dereference"), flag('S', "separate-dirs"), flag(0, "si"),
			flag('s', "summarize"), val('t', "threshold"), optval(0, "time").oneOf("atime", "access", "use", "ctime", "status"),
			val(0, "time-style"), file('X', "exclude-from"), val(0, "exclude"), flag('x', "one-file-system"),
		})},
		"df": {opts: opts(helpVersion(), []option{
			flag('a', "all"), val('B', "block-size"), flag('h', "human-readable"), flag('H', "si"), flag('i', "inodes"),
			flag('k'), flag('l', "local"), flag(0, "no-sync"), optval(0, "output"), flag('P', "portability"),
			deny("it flushes every file system", 0, "sync"), flag(0, "total"), val('t', "type"), flag('T', "print-type"),
			val('x', "exclude-type"), flag('v'),
		})},
		"date": {operand: dateOperand, opts: opts(helpVersion(), []option{
			val('d', "date"), flag(0, "debug"), file('f', "file"), optval('I', "iso-8601").oneOf("date", "hours", "minutes", "seconds", "ns"),
			flag(0, "resolution"), flag('R', "rfc-email", "rfc-822", "rfc-2822"), val(0, "rfc-3339").oneOf("date", "seconds", "ns"),
			file('r', "reference"), deny("it sets the clock", 's', "set"), flag('u', "utc", "universal", "uct"),
		})},
		"jq": {pattern: true, syntax: exactSyntax, checkPattern: jqFilter, opts: []option{
			flag('h', "help"), flag(0, "version"), flag(0, "seq"), flag(0, "stream"), flag(0, "stream-errors"),
			flag('s', "slurp"), flag('R', "raw-input"), flag('n', "null-input"), flag('c', "compact-output"), flag(0, "tab"),
			val(0, "indent"), flag('C', "color-output"), flag('M', "monochrome-output"), flag('a', "ascii-output"),
			flag(0, "unbuffered"), flag('S', "sort-keys"), flag('r', "raw-output"), flag(0, "raw-output0"), flag('j', "join-output"),
			flag('e', "exit-status"), flag(0, "args"), flag(0, "jsonargs"),
			val(0, "arg").pair(), val(0, "argjson").pair(), file(0, "slurpfile").pair(), file(0, "rawfile").pair(), file(0, "argfile").pair(),
			deny("it loads the program from a file", 'f', "from-file"), deny("it loads modules the policy cannot see", 'L'),
			deny(whyUnused, 0, "run-tests"), deny(whyUnused, 0, "debug-dump-disasm"), deny(whyUnused, 0, "debug-trace"),
		}},
		"diff": {opts: opts(digits(), []option{
			flag(0, "help"), flag('v', "version"), flag(0, "normal"), flag('q', "brief"), flag('s', "report-identical-files"),
			flag('c'), val('C'), optval(0, "context"), flag('u'), val('U'), optval(0, "unified"), flag('e', "ed"),
			flag('f', "forward-ed"), flag('n', "rcs"), flag('y', "side-by-side"), val('W', "width"), flag(0, "left-column"),
			flag(0, "suppress-common-lines"), flag('p', "show-c-function"), val('F', "show-function-line"), val('L', "label"),
			flag('t', "expand-tabs"), flag('T', "initial-tab"), val(0, "tabsize"), flag(0, "suppress-blank-empty"),
			deny("it runs pr", 'l', "paginate"), flag('r', "recursive").recursive(), flag(0, "no-dereference"),
			flag('N', "new-file"), flag('P', "unidirectional-new-file"), flag(0, "ignore-file-name-case"),
			flag(0, "no-ignore-file-name-case"), val('x', "exclude"), file('X', "exclude-from"), val('S', "starting-file"),
			file(0, "from-file"), file(0, "to-file"), flag('i', "ignore-case"), flag('E', "ignore-tab-expansion"),
			flag('Z', "ignore-trailing-space"), flag('b', "ignore-space-change"), flag('w', "ignore-all-space"),
			flag('B', "ignore-blank-lines"), val('I', "ignore-matching-lines"), flag('a', "text"), flag(0, "strip-trailing-cr"),
			val('D', "ifdef"), val(0, "old-group-format"), val(0, "new-group-format"), val(0, "changed-group-format"),
			val(0, "unchanged-group-format"), val(0, "line-format"), val(0, "old-line-format"), val(0, "new-line-format"),
			val(0, "unchanged-line-format"), flag('d', "minimal"), val(0, "horizon-lines"), flag('H', "speed-large-files"),
			optval(0, "color").oneOf("never", "always", "auto"), val(0, "palette"), flag(0, "binary"), flag('h'),
			deny(whyUnused, 0, "sdiff-merge-assist"),
		})},
		"basename": {stopAtOperand: true, opts: opts(helpVersion(), []option{flag('a', "multiple"), val('s', "suffix"), flag('z', "zero")})},
		"dirname":  {opts: opts(helpVersion(), []option{flag('z', "zero")})},
		"realpath": {opts: opts(helpVersion(), []option{
			flag('e', "canonicalize-existing"), flag('m', "canonicalize-missing"), flag('L', "logical"), flag('P', "physical"),
			flag('q', "quiet"), file(0, "relative-to"), file(0, "relative-base"), flag('s', "strip", "no-symlinks"), flag('z', "zero"),
		})},
		"pwd":  {opts: opts(helpVersion(), []option{flag('L', "logical"), flag('P', "physical")})},
		"echo": {syntax: echoSyntax},
		"true": {},
		"nl": {opts: opts(helpVersion(), []option{
			val('b', "body-numbering"), val('d', "section-delimiter"), val('f', "footer-numbering"), val('h', "header-numbering"),
			val('i', "line-increment"), val('l', "join-blank-lines"), val('n', "number-format").oneOf("ln", "rn", "rz"),
			flag('p', "no-renumber"), val('s', "number-separator"), val('v', "starting-line-number"), val('w', "number-width"),
		})},
		"tac": {opts: opts(helpVersion(), []option{flag('b', "before"), flag('r', "regex"), val('s', "separator")})},
		"rev": {opts: []option{flag('h', "help"), flag('V', "version"), flag('0', "zero")}},
		"comm": {opts: opts(helpVersion(), []option{
			flag('1'), flag('2'), flag('3'), flag(0, "check-order"), flag(0, "nocheck-order"),
			val(0, "output-delimiter"), flag(0, "total"), flag('z', "zero-terminated"),
		})},
		"md5sum":    {opts: coreutilsSum},
		"sha1sum":   {opts: coreutilsSum},
		"sha256sum": {opts: coreutilsSum},
		"cksum": {opts: opts(helpVersion(), []option{
			val('a', "algorithm").oneOf("sysv", "bsd", "crc", "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "sm3"),
			val('l', "length"), flag(0, "tag"), flag(0, "untagged"), flag('z', "zero"), flag(0, "debug"), flag(0, "base64"), flag(0, "raw"),
			deny(whyList, 'c', "check"), deny(whyUnused, 0, "ignore-missing"), deny(whyUnused, 0, "quiet"),
			deny(whyUnused, 0, "status"), deny(whyUnused, 0, "strict"), deny(whyUnused, 'w', "warn"),
		})},
		"column": {opts: []option{
			flag('t', "table"), val('n', "table-name"), val('O', "table-order"), val('N', "table-columns"),
			val('l', "table-columns-limit"), val('E', "table-noextreme"), flag('d', "table-noheadings"),
			flag('m', "table-maxout"), flag('e', "table-header-repeat"), val('H', "table-hide"), val('R', "table-right"),
			val('T', "table-truncate"), val('W', "table-wrap"), flag('L', "keep-empty-lines"), flag('J', "json"),
			val('r', "tree"), val('i', "tree-id"), val('p', "tree-parent"), val('c', "output-width"),
			val('o', "output-separator"), val('s', "separator"), flag('x', "fillrows"), flag('h', "help"), flag('V', "version"),
		}},
		"fold":   {opts: opts(helpVersion(), []option{flag('b', "bytes"), flag('s', "spaces"), val('w', "width")})},
		"expand": {opts: opts(helpVersion(), []option{flag('i', "initial"), val('t', "tabs")})},
		"paste":  {opts: opts(helpVersion(), []option{val('d', "delimiters"), flag('s', "serial"), flag('z', "zero-terminated")})},
		"join": {opts: opts(helpVersion(), []option{
			val('a'), val('e'), flag('i', "ignore-case"), val('j'), val('o'), val('t'), val('v'), val('1'), val('2'),
			flag(0, "check-order"), flag(0, "nocheck-order"), flag(0, "header"), flag('z', "zero-terminated"),
		})},
		"seq": {stopAtOperand: true, negativeNumbers: true, opts: opts(helpVersion(), []option{
			val('f', "format"), val('s', "separator"), flag('w', "equal-width"),
		})},
		"uname": {opts: opts(helpVersion(), []option{
			flag('a', "all"), flag('s', "kernel-name", "sysname"), flag('n', "nodename"), flag('r', "kernel-release", "release"),
			flag('v', "kernel-version"), flag('m', "machine"), flag('p', "processor"), flag('i', "hardware-platform"),
			flag('o', "operating-system"),
		})},
		"whoami": {opts: helpVersion()},
		"printf": {pattern: true, syntax: printfSyntax},
		"tree": {recursive: true, syntax: exactSyntax, opts: []option{
			flag(0, "help"), flag(0, "version"), flag('a'), flag('d'), flag('f'), flag('x'), val('L'), flag(0, "noreport"),
			val('P'), val('I'), flag(0, "ignore-case"), flag(0, "matchdirs"), flag(0, "metafirst"), flag(0, "prune"),
			flag(0, "info"), flag(0, "gitignore"), val(0, "filelimit"), val(0, "charset"), val(0, "timefmt"),
			flag('q'), flag('N'), flag('Q'), flag('p'), flag('u'), flag('g'), flag('s'), flag('h'), flag(0, "si"), flag(0, "du"),
			flag('D'), flag('F'), flag(0, "inodes"), flag(0, "device"), flag('v'), flag('t'), flag('c'), flag('U'), flag('r'),
			flag(0, "dirsfirst"), flag(0, "filesfirst"), val(0, "sort").oneOf("name", "version", "size", "mtime", "ctime", "none"),
			flag('i'), flag('A'), flag('S'), flag('n'), flag('C'), flag('X'), flag('J'), flag(0, "noindent"),
			deny(whyFollow, 'l'), deny(whyWrite, 'o'), deny(whyWrite, 'R'), deny(whyList, 0, "fromfile"),
			deny(whyUnused, 'H'), deny(whyUnused, 'T'), deny(whyUnused, 0, "nolinks"), deny(whyUnused, 0, "hyperlink"),
			deny(whyUnused, 0, "fflinks"), deny(whyUnused, 0, "fromtabfile"), deny(whyUnused, 0, "infofile"), deny(whyUnused, 0, "gitfile"),
		}},
		"cmp": {opts: []option{
			flag(0, "help"), flag('v', "version"), flag('b', "print-bytes"), val('i', "ignore-initial"), flag('l', "verbose"),
			val('n', "bytes"), flag('s', "quiet", "silent"),
		}},
		"od": {opts: opts(helpVersion(), []option{
			val('A', "address-radix").oneOf("d", "o", "x", "n"), val(0, "endian").oneOf("big", "little"), val('j', "skip-bytes"),
			val('N', "read-bytes"), val('S'), optval(0, "strings"), val('t', "format"), flag('v', "output-duplicates"),
			optval('w', "width"), flag(0, "traditional"), flag('a'), flag('b'), flag('c'), flag('d'), flag('D'), flag('e'),
			flag('f'), flag('F'), flag('h'), flag('H'), flag('i'), flag('I'), flag('l'), flag('L'), flag('o'), flag('O'),
			flag('s'), flag('x'), flag('X'),
		})},
		"strings": {atFiles: true, opts: opts(digits(), []option{
			flag('h', "help"), flag('v', "version"), flag('V'), flag('a', "all"), flag('d', "data"), flag('f', "print-file-name"),
			val('n', "bytes"), val('t', "radix").oneOf("o", "d", "x"), flag('o'), flag('w', "include-all-whitespace"),
			val('e', "encoding").oneOf("s", "S", "b", "l", "B", "L"), val('s', "output-separator"),
			val('U', "unicode").oneOf("default", "show", "invalid", "hex", "escape", "highlight", "d", "s", "i", "x", "e", "h"),
			deny(whyUnused, 'T', "target"), deny(whyUnused, 'H'),
		})},
		"numfmt": {opts: opts(helpVersion(), []option{
			flag(0, "debug"), val('d', "delimiter"), val(0, "field"), val(0, "format"), val(0, "from"), val(0, "from-unit"),
			flag(0, "grouping"), optval(0, "header"), val(0, "invalid").oneOf("abort", "fail", "warn", "ignore"),
			val(0, "padding"), val(0, "round").oneOf("up", "down", "from-zero", "towards-zero", "nearest"),
			val(0, "suffix"), val(0, "to"), val(0, "to-unit"), flag('z', "zero-terminated"),
		})},
	}
})

// withValue marks an option as taking a value (file -e TEST).
func (o option) withValue() option { o.arity = needsValue; return o }

// pair marks an option followed by two words, a name then the value (jq
// --arg NAME VALUE).
func (o option) pair() option { o.twoWords = true; return o }

// findPrimaries: find's expression words; everything else is refused.
func findPrimaries() map[string]findPrimary {
	m := map[string]findPrimary{}
	for _, n := range []string{"-daystart", "-depth", "-d", "-ignore_readdir_race", "-noignore_readdir_race", "-mount", "-noleaf",
		"-xdev", "-warn", "-nowarn", "-empty", "-executable", "-false", "-true", "-nogroup", "-nouser", "-readable", "-writable",
		"-ls", "-print", "-print0", "-prune", "-quit", "-help", "--help", "-version", "--version"} {
		m[n] = findPrimary{}
	}
	for _, n := range []string{"-maxdepth", "-mindepth", "-regextype", "-amin", "-atime", "-cmin", "-ctime", "-mmin", "-mtime",
		"-used", "-context", "-fstype", "-gid", "-uid", "-group", "-user", "-ilname", "-lname", "-iname", "-name", "-inum",
		"-ipath", "-path", "-iwholename", "-wholename", "-iregex", "-regex", "-links", "-perm", "-size", "-type", "-xtype", "-printf"} {
		m[n] = findPrimary{values: 1}
	}
	for _, n := range []string{"-anewer", "-cnewer", "-newer", "-samefile"} {
		m[n] = findPrimary{values: 1, kind: pathValue}
	}
	for _, n := range []string{"-exec", "-execdir", "-ok", "-okdir"} {
		m[n] = findPrimary{deny: whyExec}
	}
	for _, n := range []string{"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"} {
		m[n] = findPrimary{deny: whyWrite}
	}
	m["-files0-from"] = findPrimary{deny: whyList}
	m["-follow"] = findPrimary{follow: true}
	return m
}

// dateOperand: date's only operand is +FORMAT; MMDDhhmm… would set the
// clock.
func dateOperand(name, v string) error {
	if !strings.HasPrefix(v, "+") {
		return refuse("%s %s is not allowed: an operand that is not +FORMAT sets the clock", name, v)
	}
	return nil
}

// jqFilter refuses module directives: `import`/`include` and modulemeta
// load files from jq's search path, which the path policy cannot see.
func jqFilter(name, v string) error {
	for _, w := range []string{"import", "include", "modulemeta", "get_search_list"} {
		for i := strings.Index(v, w); i >= 0; {
			before := byte(' ')
			if i > 0 {
				before = v[i-1]
			}
			end := i + len(w)
			after := byte(' ')
			if end < len(v) {
				after = v[end]
			}
			if !isWordByte(before) && before != '.' && before != '$' && !isWordByte(after) {
				return refuse("%s filter uses %s, which loads files the path policy cannot see; use shell_exec, which asks the user", name, w)
			}
			next := strings.Index(v[end:], w)
			if next < 0 {
				break
			}
			i = end + next
		}
	}
	return nil
}

func isWordByte(c byte) bool {
	return c == '_' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// Allowed lists the allow-listed program names.
func Allowed() []string {
	out := make([]string, 0, len(allowed()))
	for n := range allowed() {
		out = append(out, n)
	}
	return out
}
