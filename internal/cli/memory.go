package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hestia-dev/hestia/internal/memory"
)

const memoryUsage = `usage: hestia memory COMMAND
  show [user|memory|agent] [--json]     print the profile files
  add user|memory|agent TEXT            add an entry (duplicates are refused)
  rm user|memory|agent TEXT             remove the one entry containing TEXT
  edit user|memory|agent                open the file in $VISUAL / $EDITOR (a .bak is kept)
  queue [--json]                        list proposed facts waiting for review
  queue accept ID [--text EDITED]       write a proposal (optionally edited) into its file
  queue reject ID                       drop a proposal`

func runMemory(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("%s", memoryUsage)
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	q, err := a.OpenMemory(ctx)
	if err != nil {
		return err
	}
	p := q.Profile()
	sub, rest := args[0], args[1:]
	switch sub {
	case "show":
		fs := env.flags("memory show")
		asJSON := fs.Bool("json", false, "print as JSON")
		if err := parseInterleaved(fs, rest); err != nil {
			return err
		}
		targets := []string{memory.Agent, memory.User, memory.Memory}
		if fs.NArg() > 0 {
			t, err := memory.Target(fs.Arg(0))
			if err != nil {
				return usagef("%v", err)
			}
			targets = []string{t}
		}
		out := map[string]string{}
		for _, t := range targets {
			c, err := p.Read(t)
			if err != nil {
				return err
			}
			out[t] = c
			if !*asJSON {
				fmt.Fprintf(env.Stdout, "== %s (%d/%d characters)\n%s\n", t, len([]rune(c)), memory.Limit(t), c)
			}
		}
		if *asJSON {
			return printJSON(env.Stdout, out)
		}
		return nil
	case "add", "rm":
		if len(rest) < 2 {
			return usagef("usage: hestia memory %s user|memory|agent TEXT", sub)
		}
		t, err := memory.Target(rest[0])
		if err != nil {
			return usagef("%v", err)
		}
		text := strings.Join(rest[1:], " ")
		var res memory.Result
		if sub == "add" {
			res, err = p.Add(t, text)
		} else {
			res, err = p.Remove(t, text)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s (%d/%d characters)\n%s", res.Target, res.Chars, res.Limit, res.Content)
		return nil
	case "edit":
		if len(rest) != 1 {
			return usagef("usage: hestia memory edit user|memory|agent")
		}
		t, err := memory.Target(rest[0])
		if err != nil {
			return usagef("%v", err)
		}
		editor := env.Getenv("VISUAL")
		if editor == "" {
			editor = env.Getenv("EDITOR")
		}
		if editor == "" {
			return fmt.Errorf("set $VISUAL or $EDITOR, or edit %s directly", p.Path(t))
		}
		cur, err := p.Read(t)
		if err != nil {
			return err
		}
		tmp := filepath.Join(os.TempDir(), fmt.Sprintf("hestia-%s-%d.md", strings.TrimSuffix(t, ".md"), os.Getpid()))
		if err := os.WriteFile(tmp, []byte(cur), 0o600); err != nil {
			return err
		}
		defer os.Remove(tmp)
		parts := strings.Fields(editor)
		cmd := exec.CommandContext(ctx, parts[0], append(parts[1:], tmp)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, env.Stdout, env.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("running %s: %w", editor, err)
		}
		b, err := os.ReadFile(tmp)
		if err != nil {
			return err
		}
		res, err := p.Set(t, string(b))
		if err != nil {
			return fmt.Errorf("%w (your text is unchanged in %s until this command exits)", err, tmp)
		}
		fmt.Fprintf(env.Stdout, "%s saved (%d/%d characters)\n", res.Target, res.Chars, res.Limit)
		return nil
	case "queue":
		return memoryQueue(ctx, env, q, rest)
	}
	return usagef("unknown memory command %q\n%s", sub, memoryUsage)
}

func memoryQueue(ctx context.Context, env *Env, q *memory.Queue, args []string) error {
	if len(args) > 0 && (args[0] == "accept" || args[0] == "reject") {
		fs := env.flags("memory queue " + args[0])
		text := fs.String("text", "", "the fact as you want it remembered (accept only)")
		if err := parseInterleaved(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("usage: hestia memory queue %s ID", args[0])
		}
		if args[0] == "reject" {
			if err := q.Reject(ctx, fs.Arg(0)); err != nil {
				return err
			}
			fmt.Fprintln(env.Stdout, "rejected", fs.Arg(0))
			return nil
		}
		res, err := q.Accept(ctx, fs.Arg(0), *text)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "accepted into %s (%d/%d characters)\n", res.Target, res.Chars, res.Limit)
		return nil
	}
	fs := env.flags("memory queue")
	asJSON := fs.Bool("json", false, "print as JSON")
	status := fs.String("status", "pending", "pending, accepted, rejected or expired")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	cs, err := q.List(ctx, *status, 0)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, map[string]any{"candidates": cs})
	}
	if len(cs) == 0 {
		fmt.Fprintf(env.Stdout, "no %s proposals\n", *status)
	}
	for _, c := range cs {
		fmt.Fprintf(env.Stdout, "%s  %-9s %-6s %s\n", c.ID, c.Target, c.Confidence, c.Text)
		for _, w := range c.Warnings {
			fmt.Fprintf(env.Stdout, "          ! %s\n", w)
		}
	}
	return nil
}
