package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Window is a model's context window: prompt and reply together.
type Window struct {
	// Tokens is 0 when the window is unknown (a remote OpenAI-compatible
	// provider without context_window configured).
	Tokens int
	// Source says where Tokens came from: "llama.cpp /props",
	// "ollama /api/show", "lmstudio /api/v0/models", "config",
	// "anthropic default" or "" when unknown.
	Source string
	// Server is "llama.cpp", "ollama" or "lmstudio" when discovery
	// recognised the server, else "".
	Server string
}

// DefaultOllamaContext is the num_ctx sent to Ollama when neither
// llm.context_window nor the model's own parameters set one: Ollama
// otherwise silently cuts prompts at its small default (2,048–4,096 tokens),
// while the model's full context_length (often 32k–128k) could allocate more
// KV cache than a small machine has.
const DefaultOllamaContext = 16384

// anthropicWindow is the window of current Claude models.
const anthropicWindow = 200_000

// windowProbeTimeout bounds each discovery request.
const windowProbeTimeout = 5 * time.Second

// windowTTL is how long a discovered window is trusted (the server may be
// restarted with another -c); failures are retried sooner.
const (
	windowTTL     = 10 * time.Minute
	windowFailTTL = time.Minute
)

type windowEntry struct {
	w   Window
	at  time.Time
	ttl time.Duration
}

// windowCache memoises discovery per target.
type windowCache struct {
	mu sync.Mutex // guards m
	m  map[string]windowEntry
}

// Window returns the context window of tier's first target: the
// configured llm.context_window, else what the server reports (llama.cpp
// GET /props, Ollama POST /api/show, LM Studio GET /api/v0/models; only
// local endpoints are asked), else the Anthropic default, else Tokens 0.
// The agent plans every request within it.
func (r *Router) Window(ctx context.Context, tier Tier) (Window, error) {
	bs, err := r.backends(tier)
	if err != nil {
		return Window{}, err
	}
	return r.window(ctx, bs[0].target()), nil
}

// WindowTokens is Window's size, 0 when unknown or on error (the agent's
// Deps.Window).
func (r *Router) WindowTokens(ctx context.Context, tier Tier) int {
	w, err := r.Window(ctx, tier)
	if err != nil {
		return 0
	}
	return w.Tokens
}

func (r *Router) window(ctx context.Context, t Target) Window {
	if t.Kind == KindLocal {
		return Window{}
	}
	key := t.key()
	now := r.now()
	r.win.mu.Lock()
	if e, ok := r.win.m[key]; ok && now.Sub(e.at) < e.ttl {
		r.win.mu.Unlock()
		return e.w
	}
	r.win.mu.Unlock()
	w := r.discover(ctx, t)
	ttl := windowTTL
	if w.Server == "" && w.Source == "" {
		ttl = windowFailTTL
	}
	r.win.mu.Lock()
	if r.win.m == nil {
		r.win.m = map[string]windowEntry{}
	}
	r.win.m[key] = windowEntry{w: w, at: now, ttl: ttl}
	r.win.mu.Unlock()
	return w
}

func (r *Router) discover(ctx context.Context, t Target) Window {
	cfg := r.contextWindow
	if t.Kind == KindAnthropic {
		if cfg > 0 {
			return Window{Tokens: cfg, Source: "config"}
		}
		return Window{Tokens: anthropicWindow, Source: "anthropic default"}
	}
	var found Window
	if IsLocal(t.BaseURL) {
		found = discoverServer(ctx, r.hc, t)
	}
	switch {
	case found.Server == "ollama":
		// What we send as num_ctx is the window: the configured one, else
		// the model's own (capped by DefaultOllamaContext unless its
		// Modelfile sets num_ctx).
		if cfg > 0 {
			found.Tokens, found.Source = cfg, "config"
		}
		return found
	case cfg > 0:
		found.Tokens, found.Source = cfg, "config"
		return found
	}
	if found.Tokens > 0 {
		return found
	}
	r.log.Debug("context window unknown", "provider", t.Provider, "model", t.Model)
	return Window{Server: found.Server}
}

// serverRoot strips the OpenAI-compatible /v1 suffix.
func serverRoot(base string) string {
	base = strings.TrimRight(base, "/")
	return strings.TrimSuffix(base, "/v1")
}

// discoverServer asks, in order, llama.cpp, Ollama and LM Studio.
func discoverServer(ctx context.Context, hc *http.Client, t Target) Window {
	root := serverRoot(t.BaseURL)
	if n, ok := llamaProps(ctx, hc, t, root); ok {
		return Window{Tokens: n, Source: "llama.cpp /props", Server: "llama.cpp"}
	}
	if n, ok := ollamaShow(ctx, hc, t, root); ok {
		return Window{Tokens: n, Source: "ollama /api/show", Server: "ollama"}
	}
	if n, ok := lmStudioModels(ctx, hc, t, root); ok {
		return Window{Tokens: n, Source: "lmstudio /api/v0/models", Server: "lmstudio"}
	}
	return Window{}
}

// probe sends one discovery request and decodes a 2xx JSON answer.
func probe(ctx context.Context, hc *http.Client, t Target, method, url string, body any, out any) bool {
	ctx, cancel := context.WithTimeout(ctx, windowProbeTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return false
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return false
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(out) == nil
}

// llamaProps reads llama-server's GET /props: the per-slot window is
// default_generation_settings.n_ctx (older builds also put n_ctx at the
// top level).
func llamaProps(ctx context.Context, hc *http.Client, t Target, root string) (int, bool) {
	var p struct {
		NCtx    int `json:"n_ctx"`
		Default struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if !probe(ctx, hc, t, http.MethodGet, root+"/props", nil, &p) {
		return 0, false
	}
	n := p.Default.NCtx
	if n <= 0 {
		n = p.NCtx
	}
	return n, n > 0
}

// ollamaShow reads Ollama's POST /api/show: model_info's
// "<arch>.context_length" is the model's own limit, and a num_ctx line in
// parameters is what its Modelfile sets.
func ollamaShow(ctx context.Context, hc *http.Client, t Target, root string) (int, bool) {
	var s struct {
		ModelInfo  map[string]json.RawMessage `json:"model_info"`
		Parameters string                     `json:"parameters"`
	}
	if !probe(ctx, hc, t, http.MethodPost, root+"/api/show", map[string]string{"model": t.Model}, &s) {
		return 0, false
	}
	if s.ModelInfo == nil {
		return 0, false
	}
	model := 0
	for k, v := range s.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			if n, err := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && n > 0 {
				model = n
			}
		}
	}
	if n := modelfileNumCtx(s.Parameters); n > 0 {
		if model > 0 {
			return min(n, model), true
		}
		return n, true
	}
	if model <= 0 {
		return DefaultOllamaContext, true
	}
	return min(model, DefaultOllamaContext), true
}

// modelfileNumCtx finds "num_ctx N" in /api/show's parameters text.
func modelfileNumCtx(params string) int {
	sc := bufio.NewScanner(strings.NewReader(params))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// lmStudioModels reads LM Studio's GET /api/v0/models: the loaded
// context length when the model is loaded, else its maximum.
func lmStudioModels(ctx context.Context, hc *http.Client, t Target, root string) (int, bool) {
	var l struct {
		Data []struct {
			ID                  string `json:"id"`
			MaxContextLength    int    `json:"max_context_length"`
			LoadedContextLength int    `json:"loaded_context_length"`
		} `json:"data"`
	}
	if !probe(ctx, hc, t, http.MethodGet, root+"/api/v0/models", nil, &l) {
		return 0, false
	}
	for _, m := range l.Data {
		if m.ID != t.Model && !(len(l.Data) == 1 && t.Model == "") {
			continue
		}
		if m.LoadedContextLength > 0 {
			return m.LoadedContextLength, true
		}
		return m.MaxContextLength, m.MaxContextLength > 0
	}
	return 0, false
}

// contextError rewrites a context-length rejection into a message that
// says what does not fit and what to change.
func contextError(e *Error, w Window, promptTokens int) {
	nPrompt, nCtx := parseContextNumbers(e.Body)
	if nCtx == 0 {
		nCtx = w.Tokens
	}
	if nPrompt == 0 {
		nPrompt = promptTokens
	}
	if nCtx <= 0 {
		return
	}
	src := w.Source
	if src == "" || w.Tokens != nCtx {
		src = "reported by the server"
	}
	e.Message = fmt.Sprintf("The prompt (about %s tokens) does not fit the model's %s-token context window (%s). Start a new chat, or give the model a larger window (llama-server -c, Ollama num_ctx or llm.context_window).",
		groupThousands(nPrompt), groupThousands(nCtx), src)
}

// parseContextNumbers reads llama.cpp's n_prompt_tokens and n_ctx from an
// exceed_context_size_error body.
func parseContextNumbers(body string) (prompt, ctx int) {
	var b struct {
		Error struct {
			NPrompt int `json:"n_prompt_tokens"`
			NCtx    int `json:"n_ctx"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &b) != nil {
		return 0, 0
	}
	return b.Error.NPrompt, b.Error.NCtx
}
