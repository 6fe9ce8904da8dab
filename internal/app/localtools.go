package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/fetch"
	"github.com/hestia-dev/hestia/internal/files"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/sandbox"
	"github.com/hestia-dev/hestia/internal/shell"
	"github.com/hestia-dev/hestia/internal/tools"
)

// docsEmbedder attributes document-search embeddings to their own usage
// service, so the ledger tells them apart from mail's.
type docsEmbedder struct{ e llm.Embedder }

func (d docsEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := d.e.Embed(ctx, llm.EmbedRequest{Tier: llm.LocalEmbed, Inputs: texts, Service: "documents", Action: "search-embed"})
	if err != nil {
		return nil, err
	}
	for _, e := range res.Errors {
		if e != nil {
			return nil, e
		}
	}
	return res.Vectors, nil
}

func (docsEmbedder) Dimension() int { return 0 }

// registerLocalTools wires the document tools, find_files, the shell
// tools and web_fetch/web_search. Extraction re-executes this binary as `hestia extract` so a
// hostile file cannot take the daemon down.
func (a *App) registerLocalTools(_ context.Context, reg *tools.Registry, paths *pathpolicy.Policy) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the hestia binary for document extraction: %w", err)
	}
	var emb docsEmbedder
	if a.LLM != nil {
		emb = docsEmbedder{a.LLM}
	}
	lim := docs.Limits{MaxInputBytes: int64(a.Config.Docs.MaxBytes), Timeout: a.Config.Docs.ExtractTimeout.D()}
	// One child waits, started, for the next document: a cold search then
	// skips the process start (see internal/docs).
	extractor := &docs.Extractor{Exe: exe, Args: []string{"extract"}, Limits: lim, Prestart: true}
	go extractor.Warm()
	svc := docs.NewService(paths, extractor, nil, lim)
	if emb.e != nil {
		svc.Embedder = emb
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return fmt.Errorf("finding the home directory for the shell tools: %w", err)
	}
	sh := shellRunner(paths, home, exe)
	// The sandbox's workers (long-lived bubblewrap, see internal/sandbox)
	// also die with the daemon; closing stops them at once.
	a.OnClose(sh.Sandbox.Close)
	a.AddCheck(SandboxCheck(sh))
	all := append(svc.Tools(), files.FindTool(paths, a.Now))
	all = append(all, sh.Tools()...)
	web := fetch.New(fetch.Fetcher{Guard: &fetch.Guard{Allow: a.Config.Web.AllowHosts}, PDF: extractor})
	all = append(all, web.Tools(a.Config.Web.SearchURL)...)
	for _, t := range all {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	return nil
}

// shellRunner is the shell tools' runner: programs confined by
// ShellSandbox, reading the file roots, with the policy's hidden paths
// covered.
func shellRunner(paths *pathpolicy.Policy, home, exe string) *shell.Runner {
	sh := &shell.Runner{Paths: paths, Home: home, TZ: os.Getenv("TZ"), Sandbox: ShellSandbox(exe), Read: paths.Roots(), Hide: paths.Hidden()}
	if len(sh.Read) == 0 {
		sh.Read = []string{home}
	}
	return sh
}

// pathPolicy is the file tools' path policy: the configured file roots
// (the home without any), Hestia's own folders protected except the
// channel inbox, which the read tools may read (a file sent on a channel
// is named in the turn by its path there) and no tool may write.
func (a *App) pathPolicy() (*pathpolicy.Policy, string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, "", fmt.Errorf("finding the home directory for file tools: %w", err)
	}
	roots := a.Config.Agent.FileRoots
	if len(roots) == 0 {
		roots = []string{home}
	}
	paths, err := pathpolicy.New(pathpolicy.Options{Home: home, Roots: roots, Protected: []string{a.Paths.Data, a.Paths.Config, a.Paths.Logs},
		ReadOnly: []string{a.Paths.InboxDir()}})
	return paths, home, err
}

// ShellCheck is the shell.sandbox check for `hestia doctor` run without
// the daemon: the same runner, mounts and hidden paths as the daemon's
// shell tools, with its own sandbox (closed when the App closes).
func (a *App) ShellCheck(exe string) (doctor.Check, error) {
	paths, home, err := a.pathPolicy()
	if err != nil {
		return doctor.Check{}, err
	}
	sh := shellRunner(paths, home, exe)
	a.OnClose(sh.Sandbox.Close)
	return SandboxCheck(sh), nil
}

// ShellSandbox is the OS confinement of the shell tools' programs:
// bubblewrap (shell_run's programs started by a long-lived worker, this
// binary as `sandbox-exec --worker`), or this binary's `sandbox-exec`
// helper (Landlock, rlimits).
func ShellSandbox(exe string) *sandbox.Sandbox {
	// Cgroups: each call's memory and processes bounded together, and
	// what it leaves behind killed, where a cgroup v2 can be written.
	return &sandbox.Sandbox{Helper: []string{exe, "sandbox-exec"}, Cgroups: true}
}

// SandboxCheck reports which confinement the shell tools get here, and
// which limits really bind. It runs true(1) through shell_run and
// shell_exec themselves (the runner's spec: its roots, hidden paths and
// working folder), so it fails whenever the tools would.
func SandboxCheck(sh *shell.Runner) doctor.Check {
	return doctor.Check{Name: "shell.sandbox", Run: func(ctx context.Context) (doctor.Status, string) {
		sb := sh.Sandbox
		// Detection runs trial programs; on a machine too busy to finish
		// them within the check's time this says so instead of failing.
		done := make(chan sandbox.Status, 1)
		go func() { done <- sb.Status(context.WithoutCancel(ctx)) }()
		var st sandbox.Status
		select {
		case st = <-done:
		case <-time.After(2 * time.Second):
			return doctor.Warn, "the sandbox trial runs have not finished yet (a busy machine); run doctor again"
		}
		tl := sh.Tools()
		for _, c := range []struct {
			tool tools.Tool
			args string
		}{{tl[0], `{"command":"true"}`}, {tl[1], `{"argv":["true"]}`}} {
			name := c.tool.Spec().Name
			// The daemon's own fixed check, through the one path like every
			// call: threshold high, nobody asked.
			reg := tools.NewRegistry()
			if err := reg.Register(c.tool); err != nil {
				return doctor.Fail, err.Error()
			}
			engine, err := policy.New(policy.Config{AutoApprove: policy.ThresholdHigh}, nil, policy.NewModes(nil), nil)
			if err != nil {
				return doctor.Fail, err.Error()
			}
			out := authority.New(authority.Deps{Tools: reg, Policy: engine}).
				Invoke(ctx, authority.CommandOrigin("hestia doctor"), authority.Call{Tool: name, Args: c.args})
			res, err := out.Result, out.Err
			if !out.Ran && err == nil {
				err = fmt.Errorf("not run (%s): %s", out.Decision, out.Policy.Reason)
			}
			switch {
			case ctx.Err() != nil:
				return doctor.Warn, fmt.Sprintf("%s; %s did not finish within the check's time (a busy machine); run doctor again", st, name)
			case err != nil:
				return doctor.Fail, fmt.Sprintf("%s; %s cannot run a program: %v", st, name, err)
			case res.IsError || !strings.HasPrefix(res.Content, "exit: 0\n"):
				return doctor.Fail, fmt.Sprintf("%s; %s cannot run a program: %s", st, name, strings.TrimSpace(res.Content))
			}
		}
		if st.Mode == sandbox.Bubblewrap || st.Mode == sandbox.Landlock {
			return doctor.OK, st.String()
		}
		return doctor.Warn, st.String() + "; shell_run relies on its argument checks alone"
	}}
}
