package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// oaMessage is the subset of an OpenAI chat message the server parses.
type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type oaRequest struct {
	Model               string          `json:"model"`
	Stream              bool            `json:"stream"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	Messages            []oaMessage     `json:"messages"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	Tools               []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Options struct {
		NumCtx int `json:"num_ctx"`
	} `json:"options"`
}

// contentText flattens OpenAI content (a string or an array of parts).
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		out := ""
		for _, p := range parts {
			out += p.Text
		}
		return out
	}
	return string(raw)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	rq := readRequest(r)
	var in oaRequest
	parseErr := json.Unmarshal(rq.Body, &in)
	if parseErr == nil {
		rq.Model, rq.Stream, rq.NumCtx = in.Model, in.Stream, in.Options.NumCtx
		rq.ToolChoice = string(in.ToolChoice)
		rq.MaxTokens = in.MaxTokens
		if in.MaxCompletionTokens != 0 {
			rq.MaxTokens = in.MaxCompletionTokens
		}
		for _, m := range in.Messages {
			msg := Message{Role: m.Role, Content: contentText(m.Content), ToolCallID: m.ToolCallID}
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			rq.Messages = append(rq.Messages, msg)
		}
		for _, t := range in.Tools {
			rq.Tools = append(rq.Tools, t.Function.Name)
		}
	}
	if parseErr == nil && s.overWindow(w, rq.Body) {
		s.record(rq, false) // rejected before generation: no turn used
		return
	}
	turn, seq, ok := s.record(rq, true)
	if parseErr != nil {
		writeJSON(w, http.StatusBadRequest, errorObject(400, "llmtest: request body is not JSON: "+parseErr.Error()))
		return
	}
	if !ok {
		s.exhausted(w)
		return
	}
	if !wait(r, turn.FirstByteDelay) {
		return
	}
	if failTurn(w, turn, false) {
		return
	}
	id := fmt.Sprintf("chatcmpl-llmtest-%d", seq)
	model := in.Model
	if model == "" {
		model = "llmtest-model"
	}
	if in.Stream {
		s.streamOpenAI(w, r, turn, id, model)
		return
	}
	if turn.Malformed {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"`+id+`","choices":[{"message":{"content":"trunc`)
		return
	}
	text := ""
	for _, d := range turn.Text {
		text += d
	}
	reasoning := ""
	for _, d := range turn.Reasoning {
		reasoning += d
	}
	msg := map[string]any{"role": "assistant", "content": text}
	if reasoning != "" {
		msg["reasoning_content"] = reasoning
	}
	if len(turn.ToolCalls) > 0 {
		var calls []any
		for _, tc := range turn.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		msg["tool_calls"] = calls
		if text == "" {
			msg["content"] = nil
		}
	}
	out := map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": turn.finish(), "logprobs": nil}},
	}
	if !turn.NoUsage {
		out["usage"] = oaUsage(turn.usage())
	}
	writeJSON(w, http.StatusOK, out)
}

func oaUsage(u Usage) map[string]any {
	m := map[string]any{"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion}
	if u.Cached > 0 {
		m["prompt_tokens_details"] = map[string]any{"cached_tokens": u.Cached}
	}
	if u.Reasoning > 0 {
		m["completion_tokens_details"] = map[string]any{"reasoning_tokens": u.Reasoning}
	}
	return m
}

func (s *Server) streamOpenAI(w http.ResponseWriter, r *http.Request, turn Turn, id, model string) {
	startSSE(w)
	e := &sse{w: w, r: r, turn: turn}
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		}
	}
	if !e.send("", chunk(map[string]any{"role": "assistant", "content": nil}, nil)) {
		return
	}
	if !wait(r, turn.FirstTokenDelay) {
		return
	}
	for _, d := range turn.Reasoning {
		if !e.send("", chunk(map[string]any{"reasoning_content": d}, nil)) {
			return
		}
	}
	for _, d := range turn.Text {
		if !e.send("", chunk(map[string]any{"content": d}, nil)) {
			return
		}
	}
	if turn.Malformed {
		e.send("", `{"id":"`+id+`","choices":[{"delta":{"content":"bro`)
		return
	}
	if turn.Loop != "" {
		n := turn.LoopMax
		if n <= 0 {
			n = 100_000
		}
		for range n {
			if !e.send("", chunk(map[string]any{"content": turn.Loop}, nil)) {
				return
			}
		}
		turn.Finish = "length"
	}
	for i, tc := range turn.ToolCalls {
		parts := splitArgs(tc.Arguments, turn.ArgChunks)
		first := map[string]any{"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}
		if !e.send("", chunk(map[string]any{"tool_calls": []any{first}}, nil)) {
			return
		}
		for _, p := range parts {
			d := map[string]any{"index": i, "function": map[string]any{"arguments": p}}
			if !e.send("", chunk(map[string]any{"tool_calls": []any{d}}, nil)) {
				return
			}
		}
	}
	if !e.send("", chunk(map[string]any{}, turn.finish())) {
		return
	}
	if !turn.NoUsage {
		u := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": []any{}, "usage": oaUsage(turn.usage())}
		if !e.send("", u) {
			return
		}
	}
	e.send("", "[DONE]")
}
