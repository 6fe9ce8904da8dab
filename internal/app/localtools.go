package app

import (
	"context"
	"fmt"
	"os"

	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/files"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
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

// registerLocalTools wires the document tools, find_files and the shell
// tools. Extraction re-executes this binary as `hestia extract` so a
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
	svc := docs.NewService(paths, &docs.Extractor{Exe: exe, Args: []string{"extract"}}, nil, docs.Limits{})
	if emb.e != nil {
		svc.Embedder = emb
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return fmt.Errorf("finding the home directory for the shell tools: %w", err)
	}
	sh := &shell.Runner{Paths: paths, Home: home, TZ: os.Getenv("TZ")}
	all := append(svc.Tools(), files.FindTool(paths, a.Now))
	all = append(all, sh.Tools()...)
	for _, t := range all {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	return nil
}
