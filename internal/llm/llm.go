// Package llm is Hestia's model access layer: provider clients
// (OpenAI-compatible chat completions and Anthropic Messages), capability
// tiers with fallback across provider targets, error classification, and
// embeddings including the offline local-embed embedder.
//
// Callers never name a vendor. They ask for a capability tier (tier-1, the
// weakest, … tier-6, the strongest, or local-embed for embeddings) and the
// Router maps it to an ordered list of provider targets from configuration.
//
// The agent loop uses exactly one method, Client.Stream:
//
//	resp, err := client.Stream(ctx, llm.Request{
//		Tier:     llm.Tier5,
//		Messages: msgs,
//		Tools:    defs,
//		Service:  "agent", Action: "chat-turn",
//	}, func(ev llm.Event) error {
//		switch ev.Kind {
//		case llm.EventText:      // ev.Text is a visible text delta
//		case llm.EventReasoning: // ev.Text is a reasoning delta
//		case llm.EventToolCall:  // ev.ToolCall is one complete call
//		case llm.EventWaiting:   // ev.Waiting: sent, the model reads the prompt
//		}
//		return nil // a non-nil error aborts the stream and is returned
//	})
//
// resp holds the assembled reply (text, reasoning, complete tool calls in
// order, finish reason, usage). When err is non-nil resp still holds what
// was received before the failure, so a caller can tell a cut-off reply
// from an empty one. Errors from providers are *Error with a stable Code.
//
// The daemon builds one Router (app.LLM) from configuration with
// NewRouter(RouterConfig{Tiers: TiersFromConfig(cfg.LLM), Recorder: ledger});
// it implements Client and Embedder and records one usage row per request.
// Tests point a client at the scripted server in llmtest:
//
//	srv := llmtest.New(t, llmtest.Text("hello"))
//	c := llm.NewOpenAI(llm.Target{Provider: "test", BaseURL: srv.URL, Model: "m"}, nil)
//
// or wrap such targets in a Router to exercise fallback.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `llm/llmtest` too:
//
// provider clients (OpenAI-compatible, Anthropic Messages), tiers `tier-1`…`tier-6` +
// `local-embed` with fallback (streams only before the first byte), error classification, the
// offline hashed embedder. Per call: budgets for connect, first token (longer on loopback/private
// endpoints), silence between chunks and the whole call, each error naming its `llm.*_timeout`
// key, and an `EventWaiting` with the prompt estimate before the first token; `max_tokens` always
// sent (`DefaultMaxTokens` per service/action); a stream whose tail loops is stopped
// (`FinishRepetition`); tool calls written as text (Hermes/Qwen `<tool_call>`, Llama 3
// `<|python_tag|>`, Mistral `[TOOL_CALLS]`, a bare JSON call) are recovered when they name an
// offered tool, the markup held back from the visible text; `Window` discovers the context window
// (llama.cpp `/props`, Ollama `/api/show` — then `options.num_ctx` is sent —, LM Studio
// `/api/v0/models`, else `llm.context_window`) and context errors say what does not fit; on local
// endpoints background calls wait for foreground ones and are stopped and resent when one starts
// (`gate.go`). `llmtest`: the scripted server (also llama.cpp/Ollama/LM Studio window routes and
// llama-server's context error, first-token delays, looping output).
package llm

import (
	"context"
	"encoding/json"
	"time"
)

// Tier is a capability level a caller asks for instead of a vendor model.
type Tier string

// The tiers, weakest to strongest, and the embedding tier.
const (
	Tier1      Tier = "tier-1"
	Tier2      Tier = "tier-2"
	Tier3      Tier = "tier-3"
	Tier4      Tier = "tier-4"
	Tier5      Tier = "tier-5"
	Tier6      Tier = "tier-6"
	LocalEmbed Tier = "local-embed"
)

// ChatTiers lists the chat tiers weakest first.
func ChatTiers() []Tier { return []Tier{Tier1, Tier2, Tier3, Tier4, Tier5, Tier6} }

// Role is the author of a message.
type Role string

// Message roles. RoleTool carries the result of one tool call.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation sent to the model.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message made (RoleAssistant only).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a RoleTool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool name for RoleTool messages (Anthropic ignores it;
	// some OpenAI-compatible servers want it).
	Name string `json:"name,omitempty"`
}

// ToolDef describes a tool the model may call.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is a JSON Schema object describing the arguments. Nil
	// means "no arguments" and is sent as an empty object schema.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is one complete tool call the model made.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model produced, unvalidated: it may be
	// malformed, and the tool layer must check it against the schema.
	Arguments string `json:"arguments"`
}

// FinishReason says why the model stopped.
type FinishReason string

// Finish reasons, normalised across providers.
const (
	FinishStop      FinishReason = "stop"       // natural end of the reply
	FinishLength    FinishReason = "length"     // cut at the output token limit
	FinishToolCalls FinishReason = "tool_calls" // stopped to have tools run
	FinishFiltered  FinishReason = "content_filter"
	// FinishRepetition: the router stopped a stream whose tail had become
	// one short piece repeated (a runaway loop).
	FinishRepetition FinishReason = "repetition"
	FinishUnknown    FinishReason = "" // stream ended without a reason
)

// Usage counts tokens for one request. InputTokens excludes cached tokens
// where the provider reports them separately.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"` // part of OutputTokens
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + o.ReasoningTokens,
	}
}

// Request is one chat call.
type Request struct {
	Tier     Tier
	Messages []Message
	Tools    []ToolDef
	// ToolChoice is "" or "auto" (the model decides), "none" (no tool),
	// "required" (some tool) or the name of the one tool to call.
	ToolChoice string
	// MaxTokens bounds the reply; 0 uses the target's max_tokens, else
	// DefaultMaxTokens for Service/Action (a reply is always bounded: a
	// looping local model would otherwise stream until the deadline).
	MaxTokens int
	// Temperature is optional; nil leaves the provider default.
	Temperature *float64
	// Service and Action attribute the spend in the usage ledger
	// (e.g. "agent"/"chat-turn"). Empty is recorded as "unknown".
	Service string
	Action  string

	// numCtx, when > 0, is sent to Ollama as options.num_ctx (set by the
	// router from the discovered window).
	numCtx int
}

// EventKind tells what an Event carries.
type EventKind int

// Event kinds, in the order a stream usually produces them. EventDone is
// delivered exactly once at the end of a successful stream.
const (
	EventText          EventKind = iota + 1 // Text: visible text delta
	EventReasoning                          // Text: reasoning/thinking delta
	EventToolCallDelta                      // Index, ToolCall (partial): argument text arriving
	EventToolCall                           // Index, ToolCall: one complete call
	EventDone                               // FinishReason, Usage
	// EventWaiting: the request was sent and the model is reading the
	// prompt (Waiting). It comes before each attempt's first token, does
	// not count as output (fallback stays possible), and lets a UI say
	// "the model is reading N tokens…" while a local model works.
	EventWaiting
)

// Waiting describes a request the model is reading.
type Waiting struct {
	PromptTokens int // estimate (EstimateTokens)
	Local        bool
	Provider     string
	Model        string
	// FirstTokenTimeout is how long the router waits for the first token.
	FirstTokenTimeout time.Duration
}

// Event is one streamed piece of a reply.
type Event struct {
	Kind EventKind
	Text string
	// Index is the position of the tool call within this reply (parallel
	// calls have distinct indexes).
	Index int
	// ToolCall: for EventToolCallDelta, ID/Name are set once known and
	// Arguments holds only the new fragment; for EventToolCall it is the
	// complete call.
	ToolCall     *ToolCall
	FinishReason FinishReason
	Usage        *Usage
	Waiting      *Waiting
}

// Response is a complete (or, alongside an error, partial) reply.
type Response struct {
	Text         string
	Reasoning    string
	ToolCalls    []ToolCall
	FinishReason FinishReason
	Usage        Usage
	// Provider and Model name the target that answered, e.g. "ollama",
	// "qwen3:8b". Tier is the tier asked for.
	Provider string
	Model    string
	Tier     Tier
	// Attempts is how many targets were tried (1 when the first answered).
	Attempts int
	Duration time.Duration
}

// Truncated reports whether the reply was cut at the output token limit.
func (r *Response) Truncated() bool { return r.FinishReason == FinishLength }

// Client is what the agent loop and services call. The Router implements it
// over configured targets; tests can implement it directly.
type Client interface {
	// Stream runs one chat request, calling fn for each event as it
	// arrives. fn runs on the caller's goroutine, never concurrently; a
	// non-nil error from fn aborts the request and is returned as is.
	// Fallback to another target happens only before fn was first called.
	Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error)
	// Complete runs one chat request without streaming; failures fall
	// through to the next target of the tier.
	Complete(ctx context.Context, req Request) (Response, error)
}

// EmbedRequest asks for one vector per input.
type EmbedRequest struct {
	Tier    Tier // normally LocalEmbed
	Inputs  []string
	Service string
	Action  string
}

// EmbedResponse holds one vector per input, in input order.
type EmbedResponse struct {
	Vectors   [][]float32
	Dimension int
	Provider  string
	Model     string
	Usage     Usage
	// Errors is nil when every input was embedded; otherwise it has one
	// entry per input, non-nil where that input failed (its vector is nil).
	Errors []error
}

// Embedder turns texts into vectors.
type Embedder interface {
	Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error)
}
