package shell

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: any input either parses into non-empty argument arrays or is
// refused with ErrRefused; nothing that expands or chains survives.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"grep -ri invoice ~/Documents | head -20", "echo $(id)", "echo `id`", "ls; rm -rf /", "a && b",
		"cat <x", "ls >/dev/null 2>&1", "find . -exec sh -c 'x' \\;", `echo "a$b"`, "x=1 y", "{ ls; }", "ls |& cat",
		"echo \\$(id)", "echo '$(id)'", "cat ~/*.txt", "a | b | c | d | e | f | g | h | i",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		p, err := Parse(line)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("%q: error without ErrRefused: %v", line, err)
			}
			return
		}
		if len(p.Commands) == 0 || len(p.Commands) > MaxPipeline {
			t.Fatalf("%q: %d commands", line, len(p.Commands))
		}
		for _, c := range p.Commands {
			if len(c.Args) == 0 {
				t.Fatalf("%q: a command without arguments", line)
			}
		}
		// A literal "$(" can only survive when it was quoted or escaped in
		// the input; unquoted, it is always refused.
		if strings.Contains(line, "$(") && !strings.ContainsAny(line, `'\"`) {
			t.Fatalf("%q: command substitution parsed", line)
		}
	})
}

// FuzzOptions: the option parser reads model-controlled words. Whatever
// it is given, it refuses with ErrRefused or returns arguments that read
// back the same (long options are already spelled out in full, values stay
// values), and it never accepts link following while recursing.
func FuzzOptions(f *testing.F) {
	f.Fuzz(func(t *testing.T, name, line string) {
		prog, ok := allowed()[name]
		if !ok {
			return
		}
		words := strings.Split(line, "\x00")
		p, err := prog.parse(name, words)
		if err != nil {
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s %q: %v", name, words, err)
			}
			return
		}
		if p.recursive && p.followed != "" {
			t.Fatalf("%s %q: follows links (%s) while recursing", name, words, p.followed)
		}
		again, err := prog.parse(name, p.args)
		if err != nil {
			t.Fatalf("%s %q: the rewritten %q is refused: %v", name, words, p.args, err)
		}
		if !slices.Equal(again.args, p.args) || !slices.Equal(again.operands, p.operands) || !slices.Equal(again.paths, p.paths) ||
			!slices.Equal(again.texts, p.texts) || again.recursive != p.recursive || again.patternGiven != p.patternGiven {
			t.Fatalf("%s %q: reads back differently:\n%+v\n%+v", name, words, p, again)
		}
	})
}
