package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/fetch"
	"github.com/hestia-dev/hestia/internal/files"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
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
	sh := &shell.Runner{Paths: paths, Home: home, TZ: os.Getenv("TZ"), Sandbox: ShellSandbox(exe), Read: paths.Roots(), Hide: paths.Hidden()}
	if len(sh.Read) == 0 {
		sh.Read = []string{home}
	}
	// The sandbox's workers (long-lived bubblewrap, see internal/sandbox)
	// also die with the daemon; closing stops them at once.
	a.OnClose(sh.Sandbox.Close)
	a.AddCheck(SandboxCheck(sh.Sandbox))
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

// ShellSandbox is the OS confinement of the shell tools' programs:
// bubblewrap (shell_run's programs started by a long-lived worker, this
// binary as `sandbox-exec --worker`), or this binary's `sandbox-exec`
// helper (Landlock, rlimits).
func ShellSandbox(exe string) *sandbox.Sandbox {
	return &sandbox.Sandbox{Helper: []string{exe, "sandbox-exec"}}
}

// SandboxCheck reports which confinement the shell tools get here.
func SandboxCheck(sb *sandbox.Sandbox) doctor.Check {
	return doctor.Check{Name: "shell.sandbox", Run: func(ctx context.Context) (doctor.Status, string) {
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
		if st.Mode == sandbox.Bubblewrap || st.Mode == sandbox.Landlock {
			return doctor.OK, st.String()
		}
		return doctor.Warn, st.String() + "; shell_run relies on its argument checks alone"
	}}
}
