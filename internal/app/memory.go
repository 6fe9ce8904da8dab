package app

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"time"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/chat/recalltools"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/memory"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

// MemoryDir is the profile memory folder, DATA/memory.
func (a *App) MemoryDir() string { return filepath.Join(a.Paths.Data, "memory") }

// OpenMemory opens the profile files and the promotion queue (closed with
// the App).
func (a *App) OpenMemory(ctx context.Context) (*memory.Queue, error) {
	p, err := memory.OpenProfile(a.MemoryDir())
	if err != nil {
		return nil, err
	}
	db, err := a.OpenStore(ctx, memory.Schema)
	if err != nil {
		return nil, err
	}
	return memory.NewQueue(db, p, a.Now), nil
}

// memoryWiring is what the agent takes from profile memory.
type memoryWiring struct {
	prompt    func() (string, string)
	onCompact func(chatID string)
}

// registerMemory wires profile memory and chat recall: the memory,
// chat_search and chat_read tools, the system-prompt parts, the proposer
// (idle chats and compaction) and the queue routes.
func (a *App) registerMemory(ctx context.Context, reg *tools.Registry, chats *chat.Store) (memoryWiring, error) {
	q, err := a.OpenMemory(ctx)
	if err != nil {
		return memoryWiring{}, err
	}
	if err := reg.Register(memory.Tool(q.Profile())); err != nil {
		return memoryWiring{}, err
	}
	for _, t := range recalltools.Tools(chats) {
		if err := reg.Register(t); err != nil {
			return memoryWiring{}, err
		}
	}
	// Idle reviews send chats to the model: only with consent (consent.go).
	var reviewLLM llm.Client
	if a.Chat != nil {
		reviewLLM = consentClient{inner: a.Chat, a: a}
	}
	prop := memory.NewProposer(memory.Proposer{Queue: q, Chats: chats, LLM: reviewLLM, Tier: llm.Tier2, Log: a.Log.With("component", "memory"), Now: a.Now, Idle: 15 * time.Minute})
	a.AddWorker("memory.propose", func(ctx context.Context) error { return prop.Run(ctx, 5*time.Minute) })
	if a.Server != nil {
		memoryRoutes(a.Server.API(), q)
		reviewRoute(a.Server.API(), prop, a.Chat != nil)
	}
	return memoryWiring{prompt: q.Profile().PromptParts, onCompact: prop.Kick}, nil
}

func memoryRoutes(mux *http.ServeMux, q *memory.Queue) {
	p := q.Profile()
	mux.HandleFunc("GET /api/memory", func(w http.ResponseWriter, r *http.Request) {
		out := map[string]any{}
		for _, t := range []string{memory.Agent, memory.User, memory.Memory} {
			c, err := p.Read(t)
			if err != nil {
				httpjson.Respond(w, r, 0, nil, err)
				return
			}
			out[t] = map[string]any{"content": c, "limit": memory.Limit(t)}
		}
		httpjson.Write(w, http.StatusOK, map[string]any{"files": out})
	})
	mux.HandleFunc("PUT /api/memory/{target}", func(w http.ResponseWriter, r *http.Request) {
		t, err := memory.Target(r.PathValue("target"))
		if err != nil {
			httpjson.Error(w, http.StatusNotFound, "not_found", err.Error())
			return
		}
		var b struct {
			Content string `json:"content"`
		}
		if err := httpjson.Decode(w, r, &b); err != nil {
			httpjson.BadRequest(w, err)
			return
		}
		res, err := p.Set(t, b.Content)
		writeMemory(w, res, err)
	})
	mux.HandleFunc("GET /api/memory/queue", func(w http.ResponseWriter, r *http.Request) {
		cs, err := q.List(r.Context(), r.URL.Query().Get("status"), 0)
		writeMemory(w, map[string]any{"candidates": cs}, err)
	})
	mux.HandleFunc("POST /api/memory/queue/{id}/accept", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Text string `json:"text"`
		}
		if r.ContentLength != 0 {
			if err := httpjson.Decode(w, r, &b); err != nil {
				httpjson.BadRequest(w, err)
				return
			}
		}
		res, err := q.Accept(r.Context(), r.PathValue("id"), b.Text)
		writeMemory(w, res, err)
	})
	mux.HandleFunc("POST /api/memory/queue/{id}/reject", func(w http.ResponseWriter, r *http.Request) {
		err := q.Reject(r.Context(), r.PathValue("id"))
		writeMemory(w, map[string]any{"ok": err == nil}, err)
	})
}

// reviewRoute lets the user ask for a review of one chat now instead of
// waiting for it to go idle: the proposer's one model call, its candidates
// queued for the user like any others (source "manual").
func reviewRoute(mux *http.ServeMux, prop *memory.Proposer, haveModel bool) {
	mux.HandleFunc("POST /api/memory/review", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			ChatID string `json:"chat_id"`
		}
		if err := httpjson.Decode(w, r, &b); err != nil {
			httpjson.BadRequest(w, err)
			return
		}
		if b.ChatID == "" {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "chat_id: is required")
			return
		}
		if !haveModel {
			httpjson.Error(w, http.StatusServiceUnavailable, "no_model", "no model is configured to review chats")
			return
		}
		cs, err := prop.Review(r.Context(), b.ChatID, "manual")
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			httpjson.Error(w, http.StatusBadGateway, "review_failed", err.Error())
			return
		}
		if cs == nil {
			cs = []memory.Candidate{}
		}
		writeMemory(w, map[string]any{"candidates": cs}, err)
	})
}

func writeMemory(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, memory.ErrDuplicate), errors.Is(err, memory.ErrRefused):
		httpjson.Error(w, http.StatusConflict, "refused", err.Error())
	case err != nil:
		httpjson.Error(w, http.StatusBadRequest, "bad_request", err.Error())
	default:
		httpjson.Write(w, http.StatusOK, v)
	}
}
