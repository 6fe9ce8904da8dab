package app

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/wiki"
	"github.com/hestia-dev/hestia/internal/wiki/wikitools"
)

// serviceEmbedder lets a domain store use the router's local-embed tier,
// attributing usage to its service.
type serviceEmbedder struct {
	e       llm.Embedder
	service string
}

func (s serviceEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := s.e.Embed(ctx, llm.EmbedRequest{Tier: llm.LocalEmbed, Inputs: texts, Service: s.service, Action: "embed"})
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

func (s serviceEmbedder) Dimension() int { return 0 }

// WikiPath is the wiki folder: [wiki] path, or DATA/wiki.
func (a *App) WikiPath() string { return a.Config.Wiki.Root(a.Paths) }

// OpenWiki opens the wiki folder and its index (closed with the App). CLI
// commands use it directly; the daemon wires it in registerWiki.
func (a *App) OpenWiki(ctx context.Context) (*wiki.Wiki, error) {
	var emb llm.Embedder = a.LLM
	if a.LLM == nil {
		r, err := llm.NewRouter(llm.RouterConfig{Tiers: llm.TiersFromConfig(a.Config.LLM), Timeout: a.Config.LLM.Timeout.D(), Logger: a.Log.With("component", "llm"), Now: a.Now})
		if err != nil {
			return nil, err
		}
		emb = r
	}
	return a.openWiki(ctx, serviceEmbedder{emb, "wiki"})
}

func (a *App) openWiki(ctx context.Context, emb search.Embedder) (*wiki.Wiki, error) {
	w, err := wiki.Open(ctx, wiki.Options{Root: a.WikiPath(), DBPath: a.Paths.DB(wiki.Schema.Name), Logger: a.Log.With("component", "wiki"), Now: a.Now,
		Embedder: emb})
	if err != nil {
		return nil, err
	}
	a.OnClose(w.Close)
	return w, nil
}

// registerWiki wires the wiki into the daemon: its tools, its routes, a
// reconcile on start followed by the watcher, and the embedding worker.
func (a *App) registerWiki(ctx context.Context, reg *tools.Registry) (*wiki.Wiki, error) {
	w, err := a.OpenWiki(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range wikitools.Tools(w) {
		if err := reg.Register(t); err != nil {
			return nil, err
		}
	}
	if a.Server != nil {
		wikiRoutes(a.Server.API(), w)
	}
	if err := a.registerMailPromoter(ctx, w); err != nil {
		return nil, err
	}
	log := a.Log.With("component", "wiki")
	a.AddWorker("wiki.index", func(ctx context.Context) error {
		st, err := w.Reconcile(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		log.Info("wikiReconciled", "seen", st.Seen, "indexed", st.Indexed, "removed", st.Removed, "failed", st.Failed)
		if !a.Config.Wiki.Watch {
			<-ctx.Done()
			return nil
		}
		return w.Watch(ctx, 0, nil)
	})
	a.AddWorker("wiki.embed", func(ctx context.Context) error {
		for {
			if _, err := w.EmbedPending(ctx, 32, 512); err != nil && ctx.Err() == nil {
				log.Debug("wikiEmbed", "err", err)
			}
			t := time.NewTimer(time.Minute)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	})
	a.AddCheck(doctor.Check{Name: "wiki.folder", Run: func(ctx context.Context) (doctor.Status, string) {
		if _, err := w.List(ctx, "", 1); err != nil {
			return doctor.Fail, err.Error()
		}
		return doctor.OK, w.Root()
	}})
	return w, nil
}

// wikiRoutes serves the read side of the wiki to the UI; writes go through
// the agent's gated tools or the user's own editor.
func wikiRoutes(mux *http.ServeMux, w *wiki.Wiki) {
	mux.HandleFunc("GET /api/wiki/search", func(rw http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		res, err := w.Search(r.Context(), r.URL.Query().Get("q"), n)
		if err != nil {
			httpjson.Error(rw, http.StatusBadRequest, "bad_query", err.Error())
			return
		}
		httpjson.Write(rw, http.StatusOK, res)
	})
	mux.HandleFunc("GET /api/wiki/page", func(rw http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		off, _ := strconv.ParseInt(q.Get("offset"), 10, 64)
		n, _ := strconv.Atoi(q.Get("limit"))
		res, err := w.Read(r.Context(), q.Get("path"), off, n)
		writeWiki(rw, res, err)
	})
	mux.HandleFunc("GET /api/wiki/links", func(rw http.ResponseWriter, r *http.Request) {
		res, err := w.PageLinks(r.Context(), r.URL.Query().Get("path"))
		writeWiki(rw, res, err)
	})
	mux.HandleFunc("GET /api/wiki/pages", func(rw http.ResponseWriter, r *http.Request) {
		res, err := w.List(r.Context(), r.URL.Query().Get("prefix"), 500)
		writeWiki(rw, map[string]any{"pages": res}, err)
	})
	mux.HandleFunc("GET /api/wiki/lint", func(rw http.ResponseWriter, r *http.Request) {
		res, err := w.Lint(r.Context())
		writeWiki(rw, map[string]any{"findings": res}, err)
	})
}

func writeWiki(rw http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, wiki.ErrNotFound):
		httpjson.Error(rw, http.StatusNotFound, "not_found", err.Error())
	case err != nil:
		httpjson.Error(rw, http.StatusBadRequest, "bad_request", err.Error())
	default:
		httpjson.Write(rw, http.StatusOK, v)
	}
}
