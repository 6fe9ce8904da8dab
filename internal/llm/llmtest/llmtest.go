// Package llmtest is a scripted model server for tests. It speaks the
// OpenAI chat completions wire format (streaming SSE and not), the
// /v1/embeddings and /v1/models routes, and, from NewAnthropic, the
// Anthropic Messages format, so any Hestia client can be pointed at it.
//
// A test scripts the server turn by turn; each chat request consumes the
// next Turn in order and the server records every request it received:
//
//	srv := llmtest.New(t,
//		llmtest.ToolCalls(llmtest.Call("call_1", "mail_search", `{"q":"invoice"}`)),
//		llmtest.Text("Found ", "two invoices."),
//	)
//	client := ... point at srv.URL (the base URL, ending in /v1), any API key ...
//	// run the code under test
//	reqs := srv.Requests()           // one Request per chat call, in order
//	reqs[1].Messages[2].ToolCallID   // "call_1": the tool result went back
//
// Turns describe the reply (Text deltas, Reasoning deltas, ToolCalls —
// several make parallel calls —, Finish, Usage) or a failure: Status with
// an error Body (429, 500, …), Malformed JSON, FirstByteDelay (slow first
// byte), DropAfter (connection cut after n SSE chunks). Helpers Text,
// ToolCalls, Fail and Cut build the common cases; a Turn literal covers the
// rest. A request arriving after the script is exhausted gets HTTP 500 and
// fails the test. The server is closed by t.Cleanup.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Turn is the scripted answer to one chat request.
type Turn struct {
	// Text is the visible reply, one SSE chunk per element when streaming.
	Text []string
	// Reasoning is sent as reasoning_content deltas before the text.
	Reasoning []string
	// ToolCalls are streamed after the text; several make parallel calls.
	// Each call's arguments are split into ArgChunks fragments (default 2).
	ToolCalls []ToolCall
	ArgChunks int
	// Finish is the finish reason; default "tool_calls" when ToolCalls is
	// set, else "stop". Use "length" for a reply cut at the token limit.
	Finish string
	// Usage is reported in the final chunk; nil reports a small default.
	Usage *Usage
	// NoUsage omits the usage block entirely.
	NoUsage bool

	// Status, when not 0 or 200, fails the request with this HTTP status
	// and Body (default: an OpenAI-style error object naming the status).
	Status     int
	Body       string
	RetryAfter string // Retry-After header value for failures
	// Malformed sends a syntactically broken JSON reply with status 200
	// (streaming: one broken data: line after any Text chunks).
	Malformed bool
	// FirstByteDelay waits before sending anything (headers included).
	FirstByteDelay time.Duration
	// ChunkDelay waits between SSE chunks.
	ChunkDelay time.Duration
	// DropAfter, when > 0, cuts the connection after that many SSE chunks
	// (the role chunk counts as the first), without a final [DONE].
	DropAfter int
	// FirstTokenDelay sends the headers and the role chunk at once, then
	// waits before the first content, as llama-server and Ollama do while
	// they read the prompt.
	FirstTokenDelay time.Duration
	// Loop, after Text, streams this delta again and again (a runaway
	// model) until the client goes away or LoopMax deltas were sent
	// (default 100,000), then finishes with "length".
	Loop    string
	LoopMax int
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Usage is the token usage a Turn reports.
type Usage struct {
	Prompt     int
	Completion int
	Cached     int // prompt tokens served from cache (OpenAI) / cache reads (Anthropic)
	CacheWrite int // Anthropic cache_creation_input_tokens
	Reasoning  int
}

// Text is a turn replying with the given text deltas.
func Text(deltas ...string) Turn { return Turn{Text: deltas} }

// ToolCalls is a turn calling the given tools in parallel.
func ToolCalls(calls ...ToolCall) Turn { return Turn{ToolCalls: calls} }

// Call builds a ToolCall.
func Call(id, name, args string) ToolCall { return ToolCall{ID: id, Name: name, Arguments: args} }

// Fail is a turn failing with the HTTP status (body defaults to an
// OpenAI-style error object).
func Fail(status int, body string) Turn { return Turn{Status: status, Body: body} }

// Cut is a streaming turn that sends the text deltas, then drops the
// connection before finishing.
func Cut(deltas ...string) Turn { return Turn{Text: deltas, DropAfter: 1 + len(deltas)} }

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte // raw body as received

	// Parsed from chat requests (both formats); zero for other routes.
	Model     string
	Stream    bool
	MaxTokens int
	System    string // Anthropic top-level system prompt
	Messages  []Message
	Tools     []string // tool names offered, in order
	// ToolChoice is the raw JSON of tool_choice, empty when absent.
	ToolChoice string
	// Inputs is set for embedding requests.
	Inputs []string
	// NumCtx is options.num_ctx (Ollama), 0 when absent.
	NumCtx int
}

// PromptTokens is the scripted server's token count of a chat request: a
// quarter of its body's bytes (deterministic, not a tokenizer).
func PromptTokens(body []byte) int { return len(body) / 4 }

// Message is one conversation entry as the server parsed it. For the
// Anthropic format, content blocks are flattened: text into Content,
// tool_use into ToolCalls, tool_result into ToolCallID + Content.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Server is a running scripted model server.
type Server struct {
	// URL is the base URL to configure clients with, ending in /v1.
	URL string
	// Models is what GET /v1/models lists.
	Models []string
	// EmbedDim is the dimension of embedding vectors (default 8).
	EmbedDim int
	// EmbedReject makes any embedding request containing an input with
	// this substring fail with HTTP 400 (to test per-item retry).
	EmbedReject string

	// Window, when > 0, is the server's context window in tokens. Flavor
	// decides how it is reported and enforced:
	//   - "llama.cpp": GET /props answers n_ctx, and a chat request whose
	//     prompt (PromptTokens) exceeds Window fails with llama-server's
	//     HTTP 400 exceed_context_size_error body, without consuming a turn;
	//   - "ollama": POST /api/show answers model_info.<arch>.context_length
	//     = Window (requests carry options.num_ctx, see Request.NumCtx);
	//   - "lmstudio": GET /api/v0/models answers max_context_length.
	Window int
	Flavor string

	t         testing.TB
	srv       *httptest.Server
	anthropic bool

	mu    sync.Mutex // guards the fields below
	turns []Turn
	reqs  []Request
	disc  []Request // window discovery, kept apart from reqs
	seq   int
}

// New starts an OpenAI-compatible server scripted with turns.
func New(t testing.TB, turns ...Turn) *Server { return start(t, false, turns) }

// NewAnthropic starts a server speaking the Anthropic Messages API
// (POST /v1/messages) scripted with turns.
func NewAnthropic(t testing.TB, turns ...Turn) *Server { return start(t, true, turns) }

func start(t testing.TB, anthropic bool, turns []Turn) *Server {
	t.Helper()
	s := &Server{t: t, anthropic: anthropic, turns: append([]Turn(nil), turns...), Models: []string{"llmtest-model"}, EmbedDim: 8}
	mux := http.NewServeMux()
	if anthropic {
		mux.HandleFunc("POST /v1/messages", s.handleAnthropic)
	} else {
		mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
		mux.HandleFunc("POST /v1/embeddings", s.handleEmbed)
	}
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /props", s.handleProps)
	mux.HandleFunc("POST /api/show", s.handleShow)
	mux.HandleFunc("GET /api/v0/models", s.handleLMStudio)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server; it is also called by t.Cleanup.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Pending returns how many scripted turns have not been consumed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Discovery returns the context-window discovery requests received so far
// (llama.cpp /props, Ollama /api/show, LM Studio /api/v0/models), which
// Requests leaves out: they are the client asking about the model, not
// using it, and tests count model calls.
func (s *Server) Discovery() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.disc...)
}

func (s *Server) discovered(rq Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disc = append(s.disc, rq)
}

// ChatRequests returns only the chat requests received so far.
func (s *Server) ChatRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Path == "/v1/chat/completions" || r.Path == "/v1/messages" {
			out = append(out, r)
		}
	}
	return out
}

// record stores the request and pops the next turn (ok=false when the
// script is exhausted).
func (s *Server) record(rq Request, chat bool) (turn Turn, seq int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, rq)
	s.seq++
	if !chat {
		return Turn{}, s.seq, true
	}
	if len(s.turns) == 0 {
		return Turn{}, s.seq, false
	}
	turn = s.turns[0]
	s.turns = s.turns[1:]
	return turn, s.seq, true
}

func readRequest(r *http.Request) Request {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	return Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
}

func (s *Server) exhausted(w http.ResponseWriter) {
	s.t.Errorf("llmtest: chat request received but no scripted turn is left")
	writeJSON(w, http.StatusInternalServerError, errorObject(http.StatusInternalServerError, "llmtest: no scripted turn left"))
}

// wait sleeps d unless the client goes away; it reports whether to go on.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	s.record(readRequest(r), false)
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range s.Models {
		out.Data = append(out.Data, model{ID: m, Object: "model", Created: 1700000000, OwnedBy: "llmtest"})
	}
	writeJSON(w, http.StatusOK, out)
}

// window returns the window to report for flavor, 0 when none.
func (s *Server) window(flavor string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Flavor != flavor {
		return 0
	}
	return s.Window
}

// SetWindow changes Window and Flavor while the server runs.
func (s *Server) SetWindow(flavor string, tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Flavor, s.Window = flavor, tokens
}

// handleProps answers like llama-server's GET /props.
func (s *Server) handleProps(w http.ResponseWriter, r *http.Request) {
	s.discovered(readRequest(r))
	n := s.window("llama.cpp")
	if n == 0 {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": n, "params": map[string]any{"n_predict": -1}},
		"total_slots":                 1,
		"model_path":                  "/models/llmtest.gguf",
		"chat_template":               "{{ messages }}",
		"build_info":                  "llmtest",
	})
}

// handleShow answers like Ollama's POST /api/show.
func (s *Server) handleShow(w http.ResponseWriter, r *http.Request) {
	s.discovered(readRequest(r))
	n := s.window("ollama")
	if n == 0 {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":  "FROM llmtest",
		"parameters": "stop \"<|im_end|>\"",
		"details":    map[string]any{"format": "gguf", "family": "qwen3"},
		"model_info": map[string]any{"general.architecture": "qwen3", "qwen3.context_length": n, "qwen3.embedding_length": 1024},
	})
}

// handleLMStudio answers like LM Studio's GET /api/v0/models.
func (s *Server) handleLMStudio(w http.ResponseWriter, r *http.Request) {
	s.discovered(readRequest(r))
	n := s.window("lmstudio")
	if n == 0 {
		http.NotFound(w, r)
		return
	}
	var data []any
	for _, m := range s.Models {
		data = append(data, map[string]any{"id": m, "object": "model", "type": "llm", "state": "not-loaded", "max_context_length": n})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// overWindow answers a chat request whose prompt exceeds a llama.cpp
// window with llama-server's own error, and reports whether it did.
func (s *Server) overWindow(w http.ResponseWriter, body []byte) bool {
	n := s.window("llama.cpp")
	p := PromptTokens(body)
	if n == 0 || p <= n {
		return false
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
		"code": 400, "message": "the request exceeds the available context size, try increasing it",
		"type": "exceed_context_size_error", "n_prompt_tokens": p, "n_ctx": n,
	}})
	return true
}

func (s *Server) handleEmbed(w http.ResponseWriter, r *http.Request) {
	rq := readRequest(r)
	var in struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(rq.Body, &in); err != nil {
		s.record(rq, false)
		writeJSON(w, http.StatusBadRequest, errorObject(400, "invalid JSON: "+err.Error()))
		return
	}
	rq.Model = in.Model
	var one string
	if json.Unmarshal(in.Input, &one) == nil {
		rq.Inputs = []string{one}
	} else if err := json.Unmarshal(in.Input, &rq.Inputs); err != nil {
		s.record(rq, false)
		writeJSON(w, http.StatusBadRequest, errorObject(400, "input must be a string or an array of strings"))
		return
	}
	s.record(rq, false)
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []item `json:"data"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: in.Model, Data: []item{}}
	for i, text := range rq.Inputs {
		if s.EmbedReject != "" && strings.Contains(text, s.EmbedReject) {
			writeJSON(w, http.StatusBadRequest, errorObject(400, fmt.Sprintf("input %d rejected", i)))
			return
		}
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: FakeVector(text, s.EmbedDim)})
		out.Usage.PromptTokens += len(strings.Fields(text)) + 1
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	writeJSON(w, http.StatusOK, out)
}

// FakeVector is the deterministic vector the server returns for text: the
// same text always gives the same vector. It has no semantic meaning.
func FakeVector(text string, dim int) []float32 {
	v := make([]float32, dim)
	var h uint32 = 2166136261
	for i := 0; i < len(text); i++ {
		h ^= uint32(text[i])
		h *= 16777619
	}
	for i := range v {
		h ^= uint32(i + 1)
		h *= 16777619
		v[i] = float32(h%2001)/1000 - 1
	}
	return v
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func errorObject(status int, msg string) any {
	typ := "server_error"
	switch {
	case status == 429:
		typ = "rate_limit_error"
	case status >= 400 && status < 500:
		typ = "invalid_request_error"
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}}
}

// fail writes the scripted failure of a turn and reports whether it did.
func failTurn(w http.ResponseWriter, turn Turn, anthropic bool) bool {
	if turn.Status == 0 || turn.Status == http.StatusOK {
		return false
	}
	if turn.RetryAfter != "" {
		w.Header().Set("Retry-After", turn.RetryAfter)
	}
	body := turn.Body
	if body == "" {
		var b []byte
		if anthropic {
			b, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": fmt.Sprintf("scripted HTTP %d", turn.Status)}})
		} else {
			b, _ = json.Marshal(errorObject(turn.Status, fmt.Sprintf("scripted HTTP %d", turn.Status)))
		}
		body = string(b)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(turn.Status)
	_, _ = io.WriteString(w, body)
	return true
}

func (t Turn) finish() string {
	switch {
	case t.Finish != "":
		return t.Finish
	case len(t.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (t Turn) usage() Usage {
	if t.Usage != nil {
		return *t.Usage
	}
	n := 0
	for _, s := range t.Text {
		n += len(strings.Fields(s))
	}
	return Usage{Prompt: 10, Completion: n + 2*len(t.ToolCalls) + 1}
}

// splitArgs cuts s into n roughly equal fragments (at least one).
func splitArgs(s string, n int) []string {
	if n <= 0 {
		n = 2
	}
	if len(s) < n {
		n = 1
	}
	if n == 1 {
		return []string{s}
	}
	var out []string
	size := (len(s) + n - 1) / n
	for len(s) > size {
		out = append(out, s[:size])
		s = s[size:]
	}
	return append(out, s)
}

// sse writes SSE frames and applies the turn's pacing and drop rules.
type sse struct {
	w     http.ResponseWriter
	r     *http.Request
	turn  Turn
	sent  int
	event bool // write "event:" lines (Anthropic)
}

// send writes one frame; it returns false once the stream must stop (the
// client went away, or the turn drops the connection here, in which case
// it panics with http.ErrAbortHandler to cut the connection).
func (e *sse) send(name string, v any) bool {
	if e.sent > 0 && !wait(e.r, e.turn.ChunkDelay) {
		return false
	}
	var buf bytes.Buffer
	if e.event {
		fmt.Fprintf(&buf, "event: %s\n", name)
	}
	switch d := v.(type) {
	case string:
		fmt.Fprintf(&buf, "data: %s\n\n", d)
	default:
		b, _ := json.Marshal(v)
		fmt.Fprintf(&buf, "data: %s\n\n", b)
	}
	if _, err := e.w.Write(buf.Bytes()); err != nil {
		return false
	}
	e.w.(http.Flusher).Flush()
	e.sent++
	if e.turn.DropAfter > 0 && e.sent >= e.turn.DropAfter {
		// Abort without the terminating chunk: the client sees the body
		// end unexpectedly, as when a provider connection drops.
		panic(http.ErrAbortHandler)
	}
	return true
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}
