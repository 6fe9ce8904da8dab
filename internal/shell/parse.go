// Package shell runs the agent's command lines without a shell.
//
// shell_run takes a familiar pipeline ("grep -ri invoice ~/Documents | head
// -20"), parses it with mvdan.cc/sh into argument arrays and starts each
// program directly: never sh -c. Only allow-listed read-only programs run,
// every path-like argument passes the path policy (symlinks resolved),
// directories handed to recursive programs are walked first so a sensitive
// file inside them is refused rather than read, and command substitution,
// variable expansion, redirection (other than to /dev/null), && / || / ;
// and background jobs are refused with the reason. Programs get a clean
// environment (no provider keys, no HESTIA_*), a timeout that kills their
// process group, and capped output.
//
// shell_exec is the escape hatch for everything else: an exact argv, high
// risk, never read-only, so policy always puts it in front of the user.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// `shell_run`: a command line parsed with `mvdan.cc/sh` into argv arrays and run directly (never
// `sh -c`): allow-listed read-only programs, each with a table of the options it accepts (default
// deny, `allow.go`), parsed as that program parses them (`options.go`: getopt_long prefixes
// resolved against the program's real long options and handed on spelled out, bundles, attached /
// next-word / optional values, enum values as argmatch, `--`; find's expression, echo, printf, jq,
// rg and tree by their own rules); a refused (`sort --compress-program`, `find -exec`, `grep
// -R`…), unknown or ambiguous option is refused naming the program and the allowed options; option
// values that name files, operands, and values that look like paths go through the path policy;
// recursion is decided on the resolved option (`grep --direc=rec`), directories given to recursive
// programs are walked first, and `diff -r` gets `--no-dereference`, no
// `$(…)`/backticks/`$VAR`/`;`/`&&`/redirection except to /dev/null, clean environment, timeout
// killing the process group, capped output. `shell_exec`: any program with an exact argv, high
// risk, always a card. Every program runs under `sandbox`.
package shell

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ErrRefused is wrapped by every refusal of a command line.
var ErrRefused = errors.New("command refused")

func refuse(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrRefused)
}

// Word is one parsed argument before expansion.
type Word struct {
	Text string
	// Glob is set when the word has unquoted glob characters.
	Glob bool
	// Tilde is set when the word starts with an unquoted ~.
	Tilde bool
}

// Command is one program of a pipeline.
type Command struct {
	Args []Word
	// StderrNull / StdoutNull record the allowed redirections.
	StdoutNull, StderrNull, StderrToStdout bool
}

// Pipeline is a parsed command line: one or more commands joined by |.
type Pipeline struct {
	Commands []Command
}

// MaxCommandLine bounds the command text; MaxPipeline the commands in it.
const (
	MaxCommandLine = 4096
	MaxPipeline    = 8
)

// Parse turns a command line into a pipeline or says exactly why not.
func Parse(line string) (*Pipeline, error) {
	if strings.TrimSpace(line) == "" {
		return nil, refuse("the command is empty")
	}
	if len(line) > MaxCommandLine {
		return nil, refuse("the command is %d bytes; at most %d", len(line), MaxCommandLine)
	}
	if strings.ContainsRune(line, 0) {
		return nil, refuse("the command contains a NUL byte")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, refuse("the command does not parse: %v", err)
	}
	if len(f.Stmts) != 1 {
		return nil, refuse("only one pipeline per call: ';', '&' and newlines between commands are not supported (found %d commands)", len(f.Stmts))
	}
	p := &Pipeline{}
	if err := p.stmt(f.Stmts[0]); err != nil {
		return nil, err
	}
	if len(p.Commands) > MaxPipeline {
		return nil, refuse("the pipeline has %d commands; at most %d", len(p.Commands), MaxPipeline)
	}
	return p, nil
}

func (p *Pipeline) stmt(s *syntax.Stmt) error {
	switch {
	case s.Background || s.Disown:
		return refuse("background jobs ('&') are not supported")
	case s.Coprocess:
		return refuse("coprocesses are not supported")
	case s.Negated:
		return refuse("'!' negation is not supported")
	}
	switch c := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe:
		case syntax.AndStmt, syntax.OrStmt:
			return refuse("'%s' is not supported: run one pipeline per call and decide on the next one yourself", c.Op)
		default:
			return refuse("'%s' is not supported; use '|' (and 2>&1 to merge stderr)", c.Op)
		}
		if len(s.Redirs) > 0 {
			return refuse("redirections must follow a single command")
		}
		if err := p.stmt(c.X); err != nil {
			return err
		}
		return p.stmt(c.Y)
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 {
			return refuse("variable assignments (%s=…) are not supported; programs run with a fixed environment", c.Assigns[0].Name.Value)
		}
		if len(c.Args) == 0 {
			return refuse("the command has no program")
		}
		cmd := Command{}
		for _, w := range c.Args {
			pw, err := word(w)
			if err != nil {
				return err
			}
			cmd.Args = append(cmd.Args, pw)
		}
		for _, r := range s.Redirs {
			if err := cmd.redirect(r); err != nil {
				return err
			}
		}
		p.Commands = append(p.Commands, cmd)
		return nil
	case nil:
		return refuse("the command is empty")
	default:
		return refuse("%s is not supported: only simple commands joined by '|' run", kind(c))
	}
}

func kind(c syntax.Command) string {
	switch c.(type) {
	case *syntax.Subshell:
		return "a subshell '( … )'"
	case *syntax.Block:
		return "a block '{ … }'"
	case *syntax.IfClause:
		return "'if'"
	case *syntax.WhileClause:
		return "a loop"
	case *syntax.ForClause:
		return "'for'"
	case *syntax.CaseClause:
		return "'case'"
	case *syntax.FuncDecl:
		return "a function definition"
	case *syntax.ArithmCmd:
		return "arithmetic '(( … ))'"
	case *syntax.TestClause:
		return "'[[ … ]]'"
	case *syntax.DeclClause:
		return "a declaration (export, declare, local)"
	case *syntax.LetClause:
		return "'let'"
	case *syntax.TimeClause:
		return "'time'"
	case *syntax.CoprocClause:
		return "'coproc'"
	}
	return fmt.Sprintf("%T", c)
}

// redirect allows only >/dev/null, 2>/dev/null, &>/dev/null and 2>&1.
func (c *Command) redirect(r *syntax.Redirect) error {
	fd := ""
	if r.N != nil {
		fd = r.N.Value
	}
	target := ""
	if r.Word != nil {
		w, err := word(r.Word)
		if err != nil {
			return err
		}
		target = w.Text
	}
	switch {
	case (r.Op == syntax.RdrOut || r.Op == syntax.AppOut || r.Op == syntax.RdrClob) && target == "/dev/null" && (fd == "" || fd == "1"):
		c.StdoutNull = true
	case (r.Op == syntax.RdrOut || r.Op == syntax.AppOut) && target == "/dev/null" && fd == "2":
		c.StderrNull = true
	case (r.Op == syntax.RdrAll || r.Op == syntax.AppAll) && target == "/dev/null":
		c.StdoutNull, c.StderrNull = true, true
	case r.Op == syntax.DplOut && fd == "2" && target == "1":
		c.StderrToStdout = true
	case r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut || r.Op == syntax.DplIn:
		return refuse("input redirection '%s' is not supported; pass the file as an argument", r.Op)
	case r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc:
		return refuse("here-documents and here-strings are not supported")
	default:
		return refuse("redirection '%s%s %s' is not allowed: output can only be discarded to /dev/null (files are never written)", fd, r.Op, target)
	}
	return nil
}

// word flattens a shell word made only of literals and quotes.
func word(w *syntax.Word) (Word, error) {
	var out Word
	var b strings.Builder
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v := x.Value
			// An unquoted backslash escapes the next character.
			lit, glob, err := unescape(v)
			if err != nil {
				return Word{}, err
			}
			if glob {
				out.Glob = true
			}
			if i == 0 && strings.HasPrefix(v, "~") {
				out.Tilde = true
			}
			b.WriteString(lit)
		case *syntax.SglQuoted:
			if x.Dollar {
				return Word{}, refuse("$'…' strings are not supported; use plain quotes")
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			if x.Dollar {
				return Word{}, refuse("$\"…\" strings are not supported; use plain quotes")
			}
			for _, in := range x.Parts {
				lit, ok := in.(*syntax.Lit)
				if !ok {
					return Word{}, expansionRefusal(in)
				}
				b.WriteString(unescapeDouble(lit.Value))
			}
		default:
			return Word{}, expansionRefusal(part)
		}
	}
	out.Text = b.String()
	return out, nil
}

func expansionRefusal(p syntax.WordPart) error {
	switch x := p.(type) {
	case *syntax.CmdSubst:
		if x.Backquotes {
			return refuse("command substitution with backticks is not allowed")
		}
		return refuse("command substitution '$(…)' is not allowed")
	case *syntax.ParamExp:
		name := ""
		if x.Param != nil {
			name = x.Param.Value
		}
		return refuse("variable expansion ($%s) is not allowed; write the value itself", name)
	case *syntax.ArithmExp:
		return refuse("arithmetic expansion '$((…))' is not allowed")
	case *syntax.ProcSubst:
		return refuse("process substitution '<(…)' is not allowed")
	case *syntax.ExtGlob:
		return refuse("extended globs are not allowed")
	case *syntax.BraceExp:
		return refuse("brace expansion is not allowed")
	}
	return refuse("%T in a word is not allowed", p)
}

// unescape removes backslash escapes from an unquoted literal and reports
// whether an unescaped glob character remains.
func unescape(v string) (string, bool, error) {
	var b strings.Builder
	glob := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
		case c == '*' || c == '?' || c == '[':
			glob = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), glob, nil
}

// unescapeDouble handles the escapes bash honours inside double quotes.
func unescapeDouble(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.ContainsRune("$`\"\\\n", rune(v[i+1])) {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
