package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// anthropicVersion is the Messages API version header we speak.
const anthropicVersion = "2023-06-01"

// anthropicDefaultMaxTokens is used when neither the request nor the target
// bounds the reply: the Messages API requires max_tokens.
const anthropicDefaultMaxTokens = 4096

// Anthropic is a client for one Anthropic Messages API target.
//
// It speaks the wire format directly instead of through anthropic-sdk-go:
// the subset Hestia needs (text, thinking, tool use, usage, stop reasons) is
// small and stable, the SDK's root package costs minutes of compile time on
// a two-core CI machine, and, as for the OpenAI client, the router needs to
// see exactly when output first reached the caller and to read error
// bodies bounded.
type Anthropic struct {
	t  Target
	hc *http.Client
}

// NewAnthropic returns a client for t (BaseURL like
// https://api.anthropic.com/v1); hc nil uses NewHTTPClient().
func NewAnthropic(t Target, hc *http.Client) *Anthropic {
	if hc == nil {
		hc = NewHTTPClient()
	}
	t.BaseURL = strings.TrimRight(t.BaseURL, "/")
	if t.BaseURL == "" {
		t.BaseURL = "https://api.anthropic.com/v1"
	}
	t.Kind = KindAnthropic
	return &Anthropic{t: t, hc: hc}
}

func (c *Anthropic) target() Target { return c.t }

type anBlockOut struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type anMsgOut struct {
	Role    string       `json:"role"`
	Content []anBlockOut `json:"content"`
}

type anToolOut struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anReqOut struct {
	Model       string      `json:"model"`
	MaxTokens   int         `json:"max_tokens"`
	System      string      `json:"system,omitempty"`
	Messages    []anMsgOut  `json:"messages"`
	Tools       []anToolOut `json:"tools,omitempty"`
	ToolChoice  any         `json:"tool_choice,omitempty"`
	Temperature *float64    `json:"temperature,omitempty"`
	Stream      bool        `json:"stream,omitempty"`
}

// toolInput returns arguments as a JSON object, as tool_use.input must be.
// Malformed arguments from an earlier turn are wrapped rather than dropped
// so the model can see what it sent.
func toolInput(args string) json.RawMessage {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) == nil {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(map[string]string{"_unparsed_arguments": args})
	return b
}

func (c *Anthropic) body(req Request, stream bool) ([]byte, error) {
	out := anReqOut{Model: c.t.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stream: stream}
	if out.MaxTokens == 0 {
		out.MaxTokens = c.t.MaxTokens
	}
	if out.MaxTokens == 0 {
		out.MaxTokens = anthropicDefaultMaxTokens
	}
	var system []string
	add := func(role string, b anBlockOut) {
		// The API wants alternating roles: merge consecutive same-role
		// messages (several tool results become one user message).
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, b)
			return
		}
		out.Messages = append(out.Messages, anMsgOut{Role: role, Content: []anBlockOut{b}})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			system = append(system, m.Content)
		case RoleUser:
			add("user", anBlockOut{Type: "text", Text: m.Content})
		case RoleAssistant:
			if m.Content != "" {
				add("assistant", anBlockOut{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				add("assistant", anBlockOut{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)})
			}
		case RoleTool:
			add("user", anBlockOut{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		default:
			return nil, fmt.Errorf("message role %q is not supported", m.Role)
		}
	}
	out.System = strings.Join(system, "\n\n")
	switch req.ToolChoice {
	case "", "auto":
	case "none":
		out.ToolChoice = map[string]string{"type": "none"}
	case "required":
		out.ToolChoice = map[string]string{"type": "any"}
	default:
		out.ToolChoice = map[string]string{"type": "tool", "name": req.ToolChoice}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		}
		out.Tools = append(out.Tools, anToolOut{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return json.Marshal(out)
}

func (c *Anthropic) fill(e *Error) *Error {
	e.Provider, e.Model = c.t.Provider, c.t.Model
	if e.Body != "" {
		e.Body = Redact(e.Body, c.t.APIKey)
	}
	return e
}

func (c *Anthropic) post(ctx context.Context, body []byte, stream bool) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.t.BaseURL+"/messages", bytes.NewReader(body))
	if err != nil {
		return nil, c.fill(&Error{Code: CodeBadRequest, Message: "The model target's base URL is invalid.", Err: err})
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("anthropic-version", anthropicVersion)
	if c.t.APIKey != "" {
		hr.Header.Set("x-api-key", c.t.APIKey)
	}
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	replayable(hr)
	resp, err := c.hc.Do(hr)
	if err != nil {
		return nil, c.fill(classifyTransport(ctx, err))
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, c.fill(classifyHTTP(resp.StatusCode, resp.Header, Redact(readBoundedBody(resp.Body), c.t.APIKey)))
	}
	return resp, nil
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

type anBlockIn struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
}

func anFinish(s string) FinishReason {
	switch s {
	case "end_turn", "stop_sequence", "pause_turn":
		return FinishStop
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "tool_use":
		return FinishToolCalls
	case "refusal":
		return FinishFiltered
	}
	return FinishReason(s)
}

func anError(body string) *Error {
	// Errors inside a 200 stream carry their type, which maps to a status.
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &e)
	status := map[string]int{
		"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403, "billing_error": 402,
		"not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529,
	}[e.Error.Type]
	if status == 0 {
		status = 500
	}
	return classifyHTTP(status, nil, Redact(body))
}

// Complete implements Client.
func (c *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	resp := Response{Provider: c.t.Provider, Model: c.t.Model, Tier: req.Tier, Attempts: 1}
	body, err := c.body(req, false)
	if err != nil {
		return resp, c.fill(&Error{Code: CodeBadRequest, Message: "The request could not be encoded for Anthropic.", Err: err})
	}
	hr, err := c.post(ctx, body, false)
	if err != nil {
		return resp, err
	}
	defer hr.Body.Close()
	var out struct {
		Content    []anBlockIn `json:"content"`
		StopReason string      `json:"stop_reason"`
		Usage      anUsage     `json:"usage"`
	}
	if err := json.NewDecoder(capReply(hr.Body)).Decode(&out); err != nil {
		var le *Error
		if errors.As(err, &le) { // the reply size cap
			return resp, c.fill(le)
		}
		if ctx.Err() != nil {
			return resp, c.fill(classifyTransport(ctx, err))
		}
		return resp, c.fill(malformed(err))
	}
	for _, b := range out.Content {
		switch b.Type {
		case "text":
			resp.Text += b.Text
		case "thinking":
			resp.Reasoning += b.Thinking
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	resp.FinishReason = anFinish(out.StopReason)
	resp.Usage = Usage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens, CacheReadTokens: out.Usage.CacheReadInputTokens, CacheWriteTokens: out.Usage.CacheCreationInputTokens}
	resp.Duration = time.Since(start)
	return resp, nil
}

type anEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Usage anUsage `json:"usage"`
	} `json:"message"`
	ContentBlock anBlockIn `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage `json:"usage"`
}

// Stream implements Client.
func (c *Anthropic) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	start := time.Now()
	resp := Response{Provider: c.t.Provider, Model: c.t.Model, Tier: req.Tier, Attempts: 1}
	body, err := c.body(req, true)
	if err != nil {
		return resp, c.fill(&Error{Code: CodeBadRequest, Message: "The request could not be encoded for Anthropic.", Err: err})
	}
	hr, err := c.post(ctx, body, true)
	if err != nil {
		return resp, err
	}
	defer hr.Body.Close()

	var (
		text, reasoning strings.Builder
		calls           []ToolCall
		blockTool       = map[int]int{} // content block index → tool call index
		stopped         bool
	)
	partial := func() {
		resp.Text, resp.Reasoning = text.String(), reasoning.String()
		resp.ToolCalls = append([]ToolCall(nil), calls...)
		for i := range resp.ToolCalls {
			if resp.ToolCalls[i].Arguments == "" {
				resp.ToolCalls[i].Arguments = "{}"
			}
		}
		resp.Duration = time.Since(start)
	}
	fail := func(e *Error) (Response, error) {
		partial()
		e.Partial = text.Len() > 0 || reasoning.Len() > 0 || len(calls) > 0
		return resp, c.fill(e)
	}
	sr := &sseReader{r: bufio.NewReaderSize(capReply(hr.Body), 64<<10)}
	for !stopped {
		data, err := sr.next()
		if err != nil {
			if resp.FinishReason != FinishUnknown && !errors.As(err, new(*Error)) {
				break // complete reply; only message_stop was lost
			}
			if errors.Is(err, io.EOF) {
				return fail(&Error{Code: CodeNetwork, Message: "The model's reply stream ended before it was complete.", Err: io.ErrUnexpectedEOF})
			}
			var le *Error
			if errors.As(err, &le) {
				return fail(le)
			}
			return fail(classifyTransport(ctx, err))
		}
		var ev anEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return fail(malformed(fmt.Errorf("decoding stream event: %w", err)))
		}
		var out *Event
		switch ev.Type {
		case "message_start":
			u := ev.Message.Usage
			resp.Usage = Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				blockTool[ev.Index] = len(calls)
				calls = append(calls, ToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
				idx := len(calls) - 1
				out = &Event{Kind: EventToolCallDelta, Index: idx, ToolCall: &ToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}}
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				text.WriteString(ev.Delta.Text)
				out = &Event{Kind: EventText, Text: ev.Delta.Text}
			case "thinking_delta":
				reasoning.WriteString(ev.Delta.Thinking)
				out = &Event{Kind: EventReasoning, Text: ev.Delta.Thinking}
			case "input_json_delta":
				idx, ok := blockTool[ev.Index]
				if !ok {
					return fail(malformed(fmt.Errorf("input_json_delta for block %d that is not a tool_use", ev.Index)))
				}
				calls[idx].Arguments += ev.Delta.PartialJSON
				out = &Event{Kind: EventToolCallDelta, Index: idx, ToolCall: &ToolCall{ID: calls[idx].ID, Name: calls[idx].Name, Arguments: ev.Delta.PartialJSON}}
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				resp.FinishReason = anFinish(ev.Delta.StopReason)
			}
			if ev.Usage != nil {
				// Output tokens here are cumulative for the message.
				resp.Usage.OutputTokens = ev.Usage.OutputTokens
				if ev.Usage.InputTokens > 0 {
					resp.Usage.InputTokens = ev.Usage.InputTokens
				}
			}
		case "message_stop":
			stopped = true
		case "error":
			return fail(anError(string(data)))
		}
		if out != nil && (out.Text != "" || out.Kind == EventToolCallDelta) {
			if err := fn(*out); err != nil {
				partial()
				return resp, err
			}
		}
	}
	partial()
	return resp, emitEnd(fn, &resp)
}

// Embed implements Embedder; Anthropic has no embeddings API.
func (c *Anthropic) Embed(context.Context, EmbedRequest) (EmbedResponse, error) {
	return EmbedResponse{}, c.fill(&Error{Code: CodeModelUnavailable, Message: "Anthropic targets cannot serve embeddings."})
}
