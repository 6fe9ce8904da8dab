package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/policy"

	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/tools"
)

const docsUsage = `usage: hestia docs COMMAND
  info PATH                 format, pages, characters, headings (JSON, as the assistant sees it)
  read PATH [--page N]      one page of text (JSON)
  search PATH QUERY...      up to 10 excerpts with page and cursor (JSON)`

// runDocs runs the document tools from the command line, through the same
// path policy and extraction child the assistant uses, so what a user
// sees (and times) is what the model gets.
func runDocs(ctx context.Context, env *Env, args []string) error {
	if len(args) < 2 {
		return usagef("%s", docsUsage)
	}
	sub, path, rest := args[0], args[1], args[2:]
	fs := env.flags("docs " + sub)
	page := fs.Int("page", 0, "page to read (from 1)")
	if err := parseInterleaved(fs, rest); err != nil {
		return err
	}
	call := map[string]any{"path": path}
	tool := 0
	switch sub {
	case "info":
	case "read":
		tool = 1
		if *page > 0 {
			call["page"] = *page
		}
	case "search":
		tool = 2
		q := strings.Join(fs.Args(), " ")
		if strings.TrimSpace(q) == "" {
			return usagef("usage: hestia docs search PATH QUERY")
		}
		call["query"] = q
	default:
		return usagef("unknown docs command %q\n%s", sub, docsUsage)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the hestia binary for extraction: %w", err)
	}
	paths, cfg, err := env.load()
	if err != nil {
		return err
	}
	// The extraction child starts while the policy is built and the file
	// is read.
	lim := docs.Limits{MaxInputBytes: int64(cfg.Docs.MaxBytes), Timeout: cfg.Docs.ExtractTimeout.D()}
	x := &docs.Extractor{Exe: exe, Args: []string{"extract"}, Limits: lim}
	go x.Warm()
	defer x.Close()
	home, err := os.UserHomeDir()
	if err != nil {
		return fmt.Errorf("finding the home directory: %w", err)
	}
	roots := cfg.Agent.FileRoots
	if len(roots) == 0 {
		roots = []string{home}
	}
	pp, err := pathpolicy.New(pathpolicy.Options{Home: home, Roots: roots, Protected: []string{paths.Data, paths.Config, paths.Logs}})
	if err != nil {
		return err
	}
	svc := docs.NewService(pp, x, nil, lim)
	b, _ := json.Marshal(call)
	// The same authority path as every other origin: the user's deny
	// prefixes and threshold apply; nobody is asked (the tools only read).
	reg := tools.NewRegistry()
	for _, t := range svc.Tools() {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	threshold, err := policy.ParseThreshold(cfg.Policy.AutoApprove)
	if err != nil {
		return err
	}
	engine, err := policy.New(policy.Config{AutoApprove: threshold, DenyPrefixes: cfg.Policy.DenyPrefixes}, nil, policy.NewModes(nil), nil)
	if err != nil {
		return err
	}
	name := svc.Tools()[tool].Spec().Name
	out := authority.New(authority.Deps{Tools: reg, Policy: engine, Paths: pp}).
		Invoke(ctx, authority.CommandOrigin("hestia docs"), authority.Call{Tool: name, Args: string(b)})
	switch {
	case out.ArgErr != nil:
		return out.ArgErr
	case !out.Ran:
		return fmt.Errorf("%s was not run (%s): %s", name, out.Decision, out.Policy.Reason)
	case out.Err != nil:
		return out.Err
	}
	res := out.Result
	if res.IsError {
		return fmt.Errorf("%s", res.Content)
	}
	fmt.Fprintln(env.Stdout, res.Content)
	return nil
}
