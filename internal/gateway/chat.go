package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hestia-dev/hestia/internal/llm"
)

type inToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type inMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []inToolCall    `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatReq struct {
	Model    string      `json:"model"`
	Messages []inMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// content flattens OpenAI message content: a string, null, or an array of
// text parts. Other part types (images, audio) are refused by name.
func content(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported (text only)", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// toRequest validates an OpenAI chat request and converts it.
func toRequest(in chatReq, r *http.Request) (llm.Request, int, string, error) {
	tier := llm.Tier(in.Model)
	if !llm.ValidTier(tier) || tier == llm.LocalEmbed {
		return llm.Request{}, http.StatusNotFound, "model_not_found", fmt.Errorf("model %q is not a Hestia chat tier; use tier-1 (weakest) to tier-6 (strongest)", in.Model)
	}
	if in.N != nil && *in.N != 1 {
		return llm.Request{}, http.StatusBadRequest, "bad_request", errors.New("n must be 1")
	}
	if len(in.Messages) == 0 {
		return llm.Request{}, http.StatusBadRequest, "bad_request", errors.New("messages must not be empty")
	}
	req := llm.Request{
		Tier: tier, MaxTokens: in.MaxTokens, Temperature: in.Temperature,
		Service: r.Header.Get(HeaderService), Action: r.Header.Get(HeaderAction),
	}
	if in.MaxCompletionTokens > 0 {
		req.MaxTokens = in.MaxCompletionTokens
	}
	if req.MaxTokens < 0 {
		return llm.Request{}, http.StatusBadRequest, "bad_request", errors.New("max_tokens must not be negative")
	}
	for i, m := range in.Messages {
		text, err := content(m.Content)
		if err != nil {
			return llm.Request{}, http.StatusBadRequest, "bad_request", fmt.Errorf("messages[%d]: %w", i, err)
		}
		msg := llm.Message{Content: text, Name: m.Name, ToolCallID: m.ToolCallID}
		switch m.Role {
		case "system", "developer":
			msg.Role = llm.RoleSystem
		case "user":
			msg.Role = llm.RoleUser
		case "assistant":
			msg.Role = llm.RoleAssistant
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		case "tool":
			msg.Role = llm.RoleTool
			if m.ToolCallID == "" {
				return llm.Request{}, http.StatusBadRequest, "bad_request", fmt.Errorf("messages[%d]: a tool message needs tool_call_id", i)
			}
		default:
			return llm.Request{}, http.StatusBadRequest, "bad_request", fmt.Errorf("messages[%d]: role %q is not system, developer, user, assistant or tool", i, m.Role)
		}
		req.Messages = append(req.Messages, msg)
	}
	if choice, err := toolChoice(in.ToolChoice); err != nil {
		return llm.Request{}, http.StatusBadRequest, "bad_request", err
	} else {
		req.ToolChoice = choice
	}
	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "function" {
			return llm.Request{}, http.StatusBadRequest, "bad_request", fmt.Errorf("tools[%d]: type %q is not function", i, t.Type)
		}
		if t.Function.Name == "" {
			return llm.Request{}, http.StatusBadRequest, "bad_request", fmt.Errorf("tools[%d]: function.name is empty", i)
		}
		req.Tools = append(req.Tools, llm.ToolDef{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return req, 0, "", nil
}

type outToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type outUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func usageOut(u llm.Usage) *outUsage {
	o := &outUsage{
		PromptTokens:     u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens,
		CompletionTokens: u.OutputTokens,
	}
	o.TotalTokens = o.PromptTokens + o.CompletionTokens
	o.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	o.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
	return o
}

func finishOut(f llm.FinishReason) string {
	if f == llm.FinishUnknown {
		return "stop"
	}
	return string(f)
}

func (g *Gateway) handleChat(w http.ResponseWriter, r *http.Request) {
	var in chatReq
	if err := decode(w, r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	req, status, code, err := toRequest(in, r)
	if err != nil {
		writeError(w, status, code, err.Error())
		return
	}
	id := newID("chatcmpl-")
	created := g.now().Unix()
	if in.Stream {
		g.stream(w, r, req, in, id, created)
		return
	}
	resp, err := g.opts.Chat.Complete(r.Context(), req)
	if err != nil {
		writeLLMError(w, err)
		return
	}
	msg := map[string]any{"role": "assistant", "content": resp.Text}
	if resp.Reasoning != "" {
		msg["reasoning_content"] = resp.Reasoning
	}
	if len(resp.ToolCalls) > 0 {
		calls := make([]outToolCall, len(resp.ToolCalls))
		for i, tc := range resp.ToolCalls {
			calls[i].ID, calls[i].Type = tc.ID, "function"
			calls[i].Function.Name, calls[i].Function.Arguments = tc.Name, tc.Arguments
		}
		msg["tool_calls"] = calls
		if resp.Text == "" {
			msg["content"] = nil
		}
	}
	w.Header().Set("x-hestia-target", resp.Provider+"/"+resp.Model)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": in.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishOut(resp.FinishReason), "logprobs": nil}},
		"usage":   usageOut(resp.Usage),
	})
}

type chunkChoice struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	FinishReason *string        `json:"finish_reason"`
	Logprobs     *struct{}      `json:"logprobs"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *outUsage     `json:"usage,omitempty"`
}

// stream answers with SSE. Nothing is written until the first event, so a
// request that fails before any output (after the router's fallback) gets
// a proper HTTP error status; once output has started, a failure ends the
// stream with an error event and no [DONE].
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request, req llm.Request, in chatReq, id string, created int64) {
	flusher, _ := w.(http.Flusher)
	started := false
	seen := map[int]bool{} // tool call indexes already announced
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	send := func(v any) error {
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
		}
		buf.Reset()
		buf.WriteString("data: ")
		if s, ok := v.(string); ok {
			buf.WriteString(s)
			buf.WriteByte('\n')
		} else if err := enc.Encode(v); err != nil {
			return err
		}
		buf.WriteByte('\n')
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	mk := func(delta map[string]any, finish *string) chunk {
		if !started {
			delta["role"] = "assistant"
		}
		return chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: in.Model, Choices: []chunkChoice{{Delta: delta, FinishReason: finish}}}
	}
	resp, err := g.opts.Chat.Stream(r.Context(), req, func(ev llm.Event) error {
		switch ev.Kind {
		case llm.EventText:
			return send(mk(map[string]any{"content": ev.Text}, nil))
		case llm.EventReasoning:
			return send(mk(map[string]any{"reasoning_content": ev.Text}, nil))
		case llm.EventToolCallDelta:
			idx := ev.Index
			tc := outToolCall{Index: &idx}
			tc.Function.Arguments = ev.ToolCall.Arguments
			if !seen[idx] && (ev.ToolCall.ID != "" || ev.ToolCall.Name != "") {
				// id, type and name go out once, on the first fragment;
				// clients append every later fragment's fields.
				seen[idx] = true
				tc.ID, tc.Type, tc.Function.Name = ev.ToolCall.ID, "function", ev.ToolCall.Name
			}
			if tc.ID == "" && tc.Function.Arguments == "" {
				return nil
			}
			return send(mk(map[string]any{"tool_calls": []outToolCall{tc}}, nil))
		case llm.EventDone:
			f := finishOut(ev.FinishReason)
			return send(mk(map[string]any{}, &f))
		}
		return nil
	})
	if err != nil {
		if !started {
			writeLLMError(w, err)
			return
		}
		if r.Context().Err() != nil {
			return // the client went away
		}
		var e apiError
		e.Error.Type, e.Error.Code = "server_error", string(llm.CodeOf(err))
		e.Error.Message = "The model stream failed."
		var le *llm.Error
		if errors.As(err, &le) {
			e.Error.Message = le.Message
		}
		_ = send(e)
		return
	}
	if in.StreamOptions != nil && in.StreamOptions.IncludeUsage {
		_ = send(chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: in.Model, Choices: []chunkChoice{}, Usage: usageOut(resp.Usage)})
	}
	_ = send("[DONE]")
}

// toolChoice converts OpenAI tool_choice: "auto", "none", "required", or
// {"type":"function","function":{"name":…}}.
func toolChoice(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s, nil
		}
		return "", fmt.Errorf("tool_choice %q is not auto, none or required", s)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
		return "", errors.New(`tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name":"…"}}`)
	}
	return obj.Function.Name, nil
}
