package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/tools"
)

// Tools returns shell_run (allow-listed, read-only) and shell_exec (any
// program, always approved by the user).
func (r *Runner) Tools() []tools.Tool {
	r.defaults()
	return []tools.Tool{&runTool{r: r}, &execTool{r: r}}
}

type runTool struct{ r *Runner }

func (t *runTool) Spec() tools.Spec {
	return tools.Spec{
		Name: "shell_run",
		Description: "Run a read-only command line such as `grep -ril invoice ~/Documents | head -20` or `find ~/Downloads -size +100M`. " +
			"It is parsed, not given to a shell: only allow-listed programs (" + strings.Join(sortedAllowed(), ", ") + "), pipes with |, quotes, ~ and globs inside the allowed folders, " +
			"and redirection to /dev/null. No $(…), backticks, $VARS, ;, &&, || or file output. Each program accepts a known set of options " +
			"(a refusal lists them; options that write, run programs or follow links are refused). Paths pass the sensitive-path policy.",
		Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","minLength":1,"maxLength":4096,"description":"The command line"}},"required":["command"],"additionalProperties":false}`),
		Risk:   tools.RiskLow, ReadOnly: true, UntrustedOutput: true, MaxResult: 80_000,
	}
}

func (t *runTool) Available(context.Context) error { return nil }

func (t *runTool) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	a, err := tools.ParseArgs(c.Args)
	if err != nil {
		return tools.Result{}, err
	}
	line := a.String("command", "")
	p, err := Parse(line)
	if err != nil {
		return refusal(err), nil
	}
	prep, err := t.r.Prepare(p)
	if err != nil {
		return refusal(err), nil
	}
	res, err := t.r.Run(ctx, prep)
	if err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, nil
	}
	return tools.Result{Content: format(res, t.r.Timeout), IsError: res.TimedOut}, nil
}

func refusal(err error) tools.Result {
	msg := err.Error()
	if errors.Is(err, ErrRefused) {
		msg = "refused: " + strings.TrimSuffix(strings.TrimSuffix(msg, "\n"+ErrRefused.Error()), ": "+ErrRefused.Error())
	}
	return tools.Result{Content: msg + " (nothing was run)", IsError: true}
}

func format(res *Result, timeout fmt.Stringer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit: %s", strings.Join(res.Exit, " | "))
	if res.TimedOut {
		fmt.Fprintf(&b, " (stopped after the %s timeout)", timeout)
	}
	b.WriteString("\n")
	if res.Stdout != "" {
		b.WriteString(res.Stdout)
		if !strings.HasSuffix(res.Stdout, "\n") {
			b.WriteString("\n")
		}
	} else {
		b.WriteString("[no output]\n")
	}
	if res.Truncated > 0 {
		fmt.Fprintf(&b, "[output cut: %d more bytes not shown; narrow the command, e.g. with | head]\n", res.Truncated)
	}
	if res.Stderr != "" {
		fmt.Fprintf(&b, "[stderr]\n%s\n", strings.TrimRight(res.Stderr, "\n"))
	}
	if res.Sandbox != "" {
		fmt.Fprintf(&b, "[sandbox: %s]\n", res.Sandbox)
	}
	return b.String()
}

type execTool struct{ r *Runner }

func (t *execTool) Spec() tools.Spec {
	return tools.Spec{
		Name:        "shell_exec",
		Description: "Run one program that shell_run does not allow, with an exact argument list (no shell). Always needs the user's approval; the card shows the exact argv.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"argv":{"type":"array","items":{"type":"string","maxLength":4096},"minItems":1,"maxItems":64,"description":"Program and arguments"},"network":{"type":"boolean","description":"true only if the program needs the network (a download, a git fetch); the card says so"}},"required":["argv"],"additionalProperties":false}`),
		Risk:        tools.RiskHigh, Egress: true, UntrustedOutput: true, MaxResult: 80_000,
	}
}

func (t *execTool) Available(context.Context) error { return nil }

// wantsNetwork reports whether a shell_exec call asks for the network.
func wantsNetwork(args json.RawMessage) bool {
	var a struct {
		Network bool `json:"network"`
	}
	return json.Unmarshal(args, &a) == nil && a.Network
}

func argvOf(args json.RawMessage) ([]string, error) {
	var a struct {
		Argv []string `json:"argv"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	if len(a.Argv) == 0 || a.Argv[0] == "" {
		return nil, refuse("argv is empty")
	}
	return a.Argv, nil
}

// Preview is the approval card's line: the exact argv, quoted.
func (t *execTool) Preview(_ context.Context, args json.RawMessage) string {
	argv, err := argvOf(args)
	if err != nil {
		return "refused: " + err.Error()
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	dir, _ := t.r.Paths.Expand(".")
	net := "no network"
	if wantsNetwork(args) || t.r.ExecNetwork {
		net = "WITH network access"
	}
	return fmt.Sprintf("run [%s] in %s (no shell, clean environment, %s)", strings.Join(q, " "), dir, net)
}

// Target is the program, for trust-rule patterns.
func (t *execTool) Target(args json.RawMessage) string {
	argv, err := argvOf(args)
	if err != nil {
		return ""
	}
	if wantsNetwork(args) {
		// A rule written for the program does not also grant it the
		// network: the pattern must say so.
		return strings.Join(argv, " ") + " [network]"
	}
	return strings.Join(argv, " ")
}

func (t *execTool) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	argv, err := argvOf(c.Args)
	if err != nil {
		return refusal(err), nil
	}
	exe := argv[0]
	if !strings.ContainsRune(exe, '/') {
		if exe, err = t.r.lookPath(exe); err != nil {
			return refusal(err), nil
		}
	} else if _, err := t.r.checkPath(exe); err != nil {
		return refusal(err), nil
	}
	// Arguments that name sensitive paths are refused even here: an
	// approval is for a program, not for handing it the user's keys.
	for _, a := range argv[1:] {
		v := a
		if i := strings.IndexByte(a, '='); strings.HasPrefix(a, "-") && i > 0 {
			v = a[i+1:]
		}
		if looksLikePath(v) {
			if _, err := t.r.checkPath(v); err != nil {
				return refusal(err), nil
			}
		}
	}
	dir, _ := t.r.Paths.Expand(".")
	res, err := t.r.Run(ctx, &Prepared{Argv: [][]string{append([]string{exe}, argv[1:]...)}, cmds: []Command{{}}, Dir: dir, exec: true, net: wantsNetwork(c.Args)})
	if err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, nil
	}
	return tools.Result{Content: format(res, t.r.Timeout), IsError: res.TimedOut}, nil
}
