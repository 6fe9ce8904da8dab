package shell

import (
	"fmt"
	"slices"
	"strings"
)

// Option parsing, per program, the way the program itself parses them.
//
// A refusal list is bypassed by spelling: GNU getopt_long accepts any
// unambiguous prefix of a long option (`sort --compress-prog=sh`), values
// may be attached or the next word, short options bundle (`-rR`). So each
// program has a table of the options it accepts; an option the table does
// not allow is refused, whatever its spelling, and a long option given as a
// prefix is handed to the program spelled out in full, so the program runs
// exactly the option that was checked even where the table misses one of
// its hidden options.
//
// One direction of disagreement with the program is dangerous: a word the
// table takes for an option's text value while the program opens it as a
// file. Values that look like paths are therefore checked too (run.go).

// arity says whether an option takes a value.
type arity uint8

const (
	noValue       arity = iota
	needsValue          // attached (-k2, --key=2) or the next word (-k 2, --key 2)
	optionalValue       // only attached (-I2, --color=never): the next word is not taken
)

// valueKind says what a value is to the program.
type valueKind uint8

const (
	textValue valueKind = iota // a pattern, number or format; checked as a path only when it looks like one
	pathValue                  // a file the program opens or stats: through the path policy
)

// option is one option of a program's table.
type option struct {
	short byte     // 0: no short form
	long  []string // long names; aliases (--quiet, --silent) share the option
	arity arity
	kind  valueKind
	// enum lists the accepted values; like argmatch, an unambiguous prefix
	// is accepted and handed on in full.
	enum []string
	// deny, when set, says why the option is refused (it exists, so a
	// prefix of it is not taken for another option).
	deny string
	// recurse: the program walks directory operands; recurseIf: only with
	// this value (grep --directories=recurse).
	recurse   bool
	recurseIf string
	// pattern: the option supplies the pattern (grep -e/-f), so the first
	// operand is a file.
	pattern bool
	// follows: symbolic links are followed while recursing, out of the
	// walked tree.
	follows bool
	// twoWords: the option is followed by a name and then the value (jq
	// --arg NAME VALUE); never attached.
	twoWords bool
}

func flag(short byte, long ...string) option { return option{short: short, long: long} }
func val(short byte, long ...string) option {
	return option{short: short, long: long, arity: needsValue}
}
func optval(short byte, long ...string) option {
	return option{short: short, long: long, arity: optionalValue}
}
func file(short byte, long ...string) option {
	return option{short: short, long: long, arity: needsValue, kind: pathValue}
}
func deny(why string, short byte, long ...string) option {
	return option{short: short, long: long, deny: why}
}

func (o option) oneOf(v ...string) option    { o.enum = v; return o }
func (o option) recursive() option           { o.recurse = true; return o }
func (o option) recursiveIf(v string) option { o.recurseIf = v; return o }
func (o option) givesPattern() option        { o.pattern = true; return o }
func (o option) followsLinks() option        { o.follows = true; return o }

// digits are the short options 0-9 as flags (grep -5, diff -3, strings -8).
func digits() []option {
	out := make([]option, 10)
	for i := range out {
		out[i] = flag(byte('0' + i))
	}
	return out
}

// helpVersion are GNU's --help and --version.
func helpVersion() []option { return []option{flag(0, "help"), flag(0, "version")} }

// argSyntax is how a program reads its arguments.
type argSyntax uint8

const (
	gnuSyntax    argSyntax = iota // getopt_long: long prefixes, bundles, permutation, "--"
	exactSyntax                   // like gnu, but long options only by their full name (jq, rg, tree)
	echoSyntax                    // GNU echo: leading clusters of -n/-e/-E, everything else is text
	printfSyntax                  // printf FORMAT [ARG]...: no options, an optional leading "--"
	findSyntax                    // find [-H|-L|-P|-D x|-Olevel] [starting points] [expression]
)

// parsed is a command's arguments as the program will read them.
type parsed struct {
	// args is what the program is given: the words as written, except
	// that abbreviated long options and enum values are spelled in full.
	args []string
	// operands are the positional words, in order; paths the values of
	// options that name files; texts the other option values.
	operands, paths, texts []string
	recursive              bool
	patternGiven           bool
	// followed names the option that follows links, when one was given.
	followed string
}

// parse reads args as program name does and refuses what its table does
// not allow.
func (p program) parse(name string, args []string) (*parsed, error) {
	var out *parsed
	var err error
	switch p.syntax {
	case echoSyntax:
		out, err = p.parseEcho(name, args)
	case printfSyntax:
		out, err = p.parsePrintf(name, args)
	case findSyntax:
		out, err = p.parseFind(name, args)
	default:
		out, err = p.parseGetopt(name, args)
	}
	if err != nil {
		return nil, err
	}
	out.recursive = out.recursive || p.recursive
	if out.recursive && out.followed != "" {
		return nil, refuse("%s %s is not allowed: %s (while recursing)", name, out.followed, whyFollow)
	}
	if p.operand != nil {
		for _, o := range out.operands {
			if err := p.operand(name, o); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// lookupShort finds a short option.
func (p program) lookupShort(c byte) (option, bool) {
	for _, o := range p.opts {
		if o.short == c && c != 0 {
			return o, true
		}
	}
	return option{}, false
}

// lookupLong resolves a long option name as getopt_long does: an exact
// name wins, else a prefix of exactly one option (aliases of one option
// count once). It returns the option and the full name matched.
func (p program) lookupLong(name, given string) (option, string, error) {
	type hit struct {
		o    option
		full string
		idx  int
	}
	var hits []hit
	for i, o := range p.opts {
		for _, l := range o.long {
			if l == given {
				return o, l, nil
			}
			if p.syntax != exactSyntax && given != "" && strings.HasPrefix(l, given) {
				hits = append(hits, hit{o, l, i})
			}
		}
	}
	if len(hits) == 0 {
		return option{}, "", refuse("%s: unknown option --%s; %s", name, given, p.allowedHint(name))
	}
	for _, h := range hits[1:] {
		if h.idx != hits[0].idx {
			names := make([]string, len(hits))
			for i, h := range hits {
				names[i] = "--" + h.full
			}
			return option{}, "", refuse("%s: option --%s is ambiguous (%s); spell the option out", name, given, strings.Join(names, ", "))
		}
	}
	return hits[0].o, hits[0].full, nil
}

// allowedHint lists the options a program accepts, for refusals.
func (p program) allowedHint(name string) string {
	var names []string
	for _, o := range p.opts {
		if o.deny != "" {
			continue
		}
		var forms []string
		if o.short != 0 {
			forms = append(forms, "-"+string(o.short))
		}
		for _, l := range o.long {
			forms = append(forms, "--"+l)
		}
		if len(forms) == 0 {
			continue
		}
		s := strings.Join(forms, "/")
		if o.arity == needsValue {
			s += " X"
		} else if o.arity == optionalValue {
			s += "[=X]"
		}
		names = append(names, s)
	}
	if len(names) == 0 {
		return fmt.Sprintf("%s takes no options here; use shell_exec (which asks the user) for anything else", name)
	}
	return fmt.Sprintf("allowed for %s: %s; use shell_exec (which asks the user) for anything else", name, strings.Join(names, ", "))
}

func refuseDenied(name, given, full string, o option) error {
	shown := given
	if full != "" && full != given {
		shown = fmt.Sprintf("%s (short for %s)", given, full)
	}
	return refuse("%s %s is not allowed: %s (use shell_exec, which asks the user)", name, shown, o.deny)
}

// matchEnum accepts an enum value or an unambiguous prefix of one.
func matchEnum(name, opt, v string, enum []string) (string, error) {
	if len(enum) == 0 {
		return v, nil
	}
	var hits []string
	for _, e := range enum {
		if e == v {
			return e, nil
		}
		if v != "" && strings.HasPrefix(e, v) {
			hits = append(hits, e)
		}
	}
	if len(hits) == 1 {
		return hits[0], nil
	}
	return "", refuse("%s %s: value %q is not one of %s", name, opt, v, strings.Join(enum, ", "))
}

// take records an option (and its value) in out, returning the value as
// the program will read it.
func (p program) take(out *parsed, name, shown string, o option, v string, hasValue bool) (string, error) {
	if o.deny != "" {
		return "", refuseDenied(name, shown, "", o)
	}
	if hasValue {
		var err error
		if v, err = matchEnum(name, shown, v, o.enum); err != nil {
			return "", err
		}
		switch {
		case len(o.enum) > 0:
		case o.kind == pathValue:
			out.paths = append(out.paths, v)
		default:
			out.texts = append(out.texts, v)
		}
	}
	if o.recurse || (o.recurseIf != "" && hasValue && v == o.recurseIf) {
		out.recursive = true
	}
	if o.pattern {
		out.patternGiven = true
	}
	if o.follows && out.followed == "" {
		out.followed = shown
	}
	return v, nil
}

// parseGetopt reads getopt_long-style arguments: options anywhere before
// "--" (GNU permutes them), unless stopAtOperand (getopt's "+").
func (p program) parseGetopt(name string, args []string) (*parsed, error) {
	out := &parsed{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			out.args = append(out.args, args[i:]...)
			out.operands = append(out.operands, args[i+1:]...)
			return out, nil
		case i == 0 && p.leadingNumber != "" && isLeadingNumber(a, p.leadingNumber):
			// head -20, tail -5c: the obsolete count, only as the first word.
			out.args = append(out.args, a)
			continue
		case p.negativeNumbers && len(a) > 1 && a[0] == '-' && (a[1] == '.' || isDigit(a[1])):
			// seq -5 5: a negative number ends the options.
			out.args = append(out.args, args[i:]...)
			out.operands = append(out.operands, args[i:]...)
			return out, nil
		case a == "-" || !strings.HasPrefix(a, "-"):
			if p.atFiles && strings.HasPrefix(a, "@") {
				return nil, refuse("%s %s is not allowed: %s reads more arguments from the file after '@', which the path policy cannot see; write ./%s for a file of that name", name, a, name, a)
			}
			if p.stopAtOperand {
				out.args = append(out.args, args[i:]...)
				out.operands = append(out.operands, args[i:]...)
				return out, nil
			}
			out.args = append(out.args, a)
			out.operands = append(out.operands, a)
		case strings.HasPrefix(a, "--"):
			given, v, hasEq := strings.Cut(a[2:], "=")
			o, full, err := p.lookupLong(name, given)
			if err != nil {
				return nil, err
			}
			if o.deny != "" {
				return nil, refuseDenied(name, "--"+given, "--"+full, o)
			}
			shown := "--" + full
			switch {
			case o.twoWords:
				if hasEq || i+2 >= len(args) {
					return nil, refuse("%s %s needs two words after it: a name and a value", name, shown)
				}
				v, err := p.take(out, name, shown, o, args[i+2], true)
				if err != nil {
					return nil, err
				}
				out.texts = append(out.texts, args[i+1])
				out.args = append(out.args, shown, args[i+1], v)
				i += 2
				continue
			case o.arity == noValue && hasEq:
				return nil, refuse("%s %s takes no value (%s)", name, shown, a)
			case o.arity == needsValue && !hasEq:
				if i+1 >= len(args) {
					return nil, refuse("%s %s needs a value", name, shown)
				}
				i++
				v, err = p.take(out, name, shown, o, args[i], true)
				if err != nil {
					return nil, err
				}
				out.args = append(out.args, shown, v)
				continue
			}
			v, err = p.take(out, name, shown, o, v, hasEq)
			if err != nil {
				return nil, err
			}
			if hasEq {
				shown += "=" + v
			}
			out.args = append(out.args, shown)
		default:
			if p.atFiles && strings.HasPrefix(a, "-@") {
				return nil, refuse("%s: option -@ is unknown", name)
			}
			word, consumed, err := p.shortCluster(out, name, a, args[i+1:])
			if err != nil {
				return nil, err
			}
			out.args = append(out.args, word...)
			i += consumed
		}
	}
	return out, nil
}

// shortCluster reads one word of bundled short options (-rn, -A3, -e PAT)
// and returns the words to hand on and how many following words it took.
func (p program) shortCluster(out *parsed, name, a string, rest []string) ([]string, int, error) {
	for j := 1; j < len(a); j++ {
		c := a[j]
		o, ok := p.lookupShort(c)
		shown := "-" + string(c)
		if len(a) > 2 {
			shown = fmt.Sprintf("-%c (in %s)", c, a)
		}
		if !ok {
			return nil, 0, refuse("%s: unknown option %s; %s", name, shown, p.allowedHint(name))
		}
		if o.deny != "" {
			return nil, 0, refuseDenied(name, shown, "", o)
		}
		switch o.arity {
		case noValue:
			if _, err := p.take(out, name, shown, o, "", false); err != nil {
				return nil, 0, err
			}
		case optionalValue:
			attached := a[j+1:]
			v, err := p.take(out, name, shown, o, attached, attached != "")
			if err != nil {
				return nil, 0, err
			}
			return []string{a[:j+1] + v}, 0, nil
		case needsValue:
			if attached := a[j+1:]; attached != "" {
				v, err := p.take(out, name, shown, o, attached, true)
				if err != nil {
					return nil, 0, err
				}
				return []string{a[:j+1] + v}, 0, nil
			}
			if len(rest) == 0 {
				return nil, 0, refuse("%s %s needs a value", name, shown)
			}
			v, err := p.take(out, name, shown, o, rest[0], true)
			if err != nil {
				return nil, 0, err
			}
			return []string{a, v}, 1, nil
		}
	}
	return []string{a}, 0, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isLeadingNumber: -NUM followed by letters from suffixes (head -20,
// head -5c, tail -3l).
func isLeadingNumber(a, suffixes string) bool {
	if len(a) < 2 || a[0] != '-' || !isDigit(a[1]) {
		return false
	}
	i := 1
	for i < len(a) && isDigit(a[i]) {
		i++
	}
	for ; i < len(a); i++ {
		if !strings.ContainsRune(suffixes, rune(a[i])) {
			return false
		}
	}
	return true
}

// parseEcho: GNU echo takes leading words made only of -n, -e and -E as
// options and prints everything else. Any other leading word that starts
// with '-' is refused rather than printed, so an option echo might gain is
// never passed through unseen.
func (p program) parseEcho(name string, args []string) (*parsed, error) {
	out := &parsed{args: args}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if strings.Trim(a[1:], "neE") != "" {
			return nil, refuse("%s: unknown option %s; %s. To print text that starts with '-', use printf '%%s\\n' %s", name, a, p.allowedHint(name), a)
		}
	}
	out.operands = args[i:]
	return out, nil
}

// parsePrintf: printf FORMAT [ARG]... ; a leading "--" is skipped. A
// format that starts with '-' is refused (write `printf -- -x`), so
// --help and the like never pass as one.
func (p program) parsePrintf(name string, args []string) (*parsed, error) {
	out := &parsed{args: args}
	rest := args
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	} else if len(rest) > 0 && len(rest[0]) > 1 && rest[0][0] == '-' {
		return nil, refuse("%s: unknown option %s; printf takes no options here: write `printf -- FORMAT` for a format that starts with '-'", name, rest[0])
	}
	out.operands = rest
	return out, nil
}

// findPrimaries are find's expression words: how many values each takes
// (0 or 1), what the value is, and which are refused.
type findPrimary struct {
	values int
	kind   valueKind
	deny   string
	follow bool
}

// isNewerXY matches find's -newerXY (X in aBcm, Y in aBcmt).
func isNewerXY(a string) bool {
	return len(a) == 8 && strings.HasPrefix(a, "-newer") && strings.ContainsRune("aBcm", rune(a[6])) && strings.ContainsRune("aBcmt", rune(a[7]))
}

// parseFind reads find's command line: leading options, starting points
// (until a word starting with '-', or "(", ")", "!", ","), then the
// expression, each primary taking a fixed number of values. Primaries are
// only ever exact words.
func (p program) parseFind(name string, args []string) (*parsed, error) {
	out := &parsed{args: args}
	i := 0
	// Leading options.
leading:
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-P":
		case a == "-H" || a == "-L":
			out.followed = a
		case a == "--":
			i++
			break leading
		case a == "-D" || strings.HasPrefix(a, "-O"):
			return nil, refuse("%s %s is not allowed: debugging and optimisation options are not needed here; %s", name, a, p.findHint())
		default:
			break leading
		}
	}
	isExpr := func(a string) bool {
		return (len(a) > 1 && a[0] == '-') || a == "(" || a == ")" || a == "!" || a == ","
	}
	for ; i < len(args) && !isExpr(args[i]); i++ {
		out.operands = append(out.operands, args[i])
	}
	for ; i < len(args); i++ {
		a := args[i]
		switch a {
		case "(", ")", "!", ",", "-not", "-a", "-and", "-o", "-or":
			continue
		}
		pr, ok := p.find[a]
		if !ok && isNewerXY(a) {
			pr = findPrimary{values: 1}
			if a[len(a)-1] != 't' {
				pr.kind = pathValue
			}
			ok = true
		}
		if !ok {
			if !strings.HasPrefix(a, "-") {
				return nil, refuse("%s: unexpected word %q in the expression (starting points come before it); %s", name, a, p.findHint())
			}
			return nil, refuse("%s: unknown or unsupported primary %s; %s", name, a, p.findHint())
		}
		if pr.deny != "" {
			return nil, refuse("%s %s is not allowed: %s (use shell_exec, which asks the user)", name, a, pr.deny)
		}
		if pr.follow {
			out.followed = a
		}
		if pr.values == 1 {
			if i+1 >= len(args) {
				return nil, refuse("%s %s needs a value", name, a)
			}
			i++
			if pr.kind == pathValue {
				out.paths = append(out.paths, args[i])
			} else {
				out.texts = append(out.texts, args[i])
			}
		}
	}
	return out, nil
}

func (p program) findHint() string {
	var names []string
	for n, pr := range p.find {
		if pr.deny == "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return "allowed for find: -P, starting points, then " + strings.Join(names, " ") + " -newerXY ( ) ! , -not -a -and -o -or; use shell_exec (which asks the user) for anything else"
}
