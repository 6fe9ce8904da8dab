package shell

import (
	"errors"
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
