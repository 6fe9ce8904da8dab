package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

type anRequest struct {
	Model      string          `json:"model"`
	Stream     bool            `json:"stream"`
	MaxTokens  int             `json:"max_tokens"`
	System     json.RawMessage `json:"system"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Messages   []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// blocks parses Anthropic content: a string or an array of blocks.
func blocks(raw json.RawMessage) []anBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anBlock{{Type: "text", Text: s}}
	}
	var bs []anBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

func blockText(raw json.RawMessage) string {
	out := ""
	for _, b := range blocks(raw) {
		out += b.Text
	}
	return out
}

var anStop = map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}

func (s *Server) handleAnthropic(w http.ResponseWriter, r *http.Request) {
	rq := readRequest(r)
	var in anRequest
	parseErr := json.Unmarshal(rq.Body, &in)
	if parseErr == nil {
		rq.Model, rq.Stream, rq.MaxTokens = in.Model, in.Stream, in.MaxTokens
		rq.ToolChoice = string(in.ToolChoice)
		if len(in.System) > 0 {
			rq.System = blockText(in.System)
		}
		for _, m := range in.Messages {
			msg := Message{Role: m.Role}
			for _, b := range blocks(m.Content) {
				switch b.Type {
				case "text":
					msg.Content += b.Text
				case "tool_use":
					msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
				case "tool_result":
					msg.ToolCallID = b.ToolUseID
					msg.Content += blockText(b.Content)
				}
			}
			rq.Messages = append(rq.Messages, msg)
		}
		for _, t := range in.Tools {
			rq.Tools = append(rq.Tools, t.Name)
		}
	}
	turn, seq, ok := s.record(rq, true)
	if parseErr != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "llmtest: body is not JSON"}})
		return
	}
	if !ok {
		s.exhausted(w)
		return
	}
	if !wait(r, turn.FirstByteDelay) {
		return
	}
	if failTurn(w, turn, true) {
		return
	}
	id := fmt.Sprintf("msg_llmtest_%d", seq)
	stop := anStop[turn.finish()]
	if stop == "" {
		stop = turn.finish()
	}
	u := turn.usage()
	usage := map[string]any{"input_tokens": u.Prompt, "output_tokens": u.Completion, "cache_read_input_tokens": u.Cached, "cache_creation_input_tokens": u.CacheWrite}
	if !in.Stream {
		if turn.Malformed {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"`+id+`","content":[{"type":"text","text":"tru`)
			return
		}
		content := []any{}
		thinking, text := "", ""
		for _, d := range turn.Reasoning {
			thinking += d
		}
		for _, d := range turn.Text {
			text += d
		}
		if thinking != "" {
			content = append(content, map[string]any{"type": "thinking", "thinking": thinking, "signature": "sig"})
		}
		if text != "" {
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		for _, tc := range turn.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.Arguments)})
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message", "role": "assistant", "model": in.Model, "content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}

	startSSE(w)
	e := &sse{w: w, r: r, turn: turn, event: true}
	startUsage := map[string]any{"input_tokens": u.Prompt, "output_tokens": 1, "cache_read_input_tokens": u.Cached, "cache_creation_input_tokens": u.CacheWrite}
	if !e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": in.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage}}) {
		return
	}
	idx := 0
	block := func(start map[string]any, deltas []map[string]any) bool {
		if !e.send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": start}) {
			return false
		}
		for _, d := range deltas {
			if !e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d}) {
				return false
			}
		}
		ok := e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
		return ok
	}
	if len(turn.Reasoning) > 0 {
		var ds []map[string]any
		for _, d := range turn.Reasoning {
			ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": d})
		}
		ds = append(ds, map[string]any{"type": "signature_delta", "signature": "sig"})
		if !block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, ds) {
			return
		}
	}
	if len(turn.Text) > 0 {
		var ds []map[string]any
		for _, d := range turn.Text {
			ds = append(ds, map[string]any{"type": "text_delta", "text": d})
		}
		if !block(map[string]any{"type": "text", "text": ""}, ds) {
			return
		}
	}
	if turn.Malformed {
		e.send("content_block_delta", `{"type":"content_block_delta","index":`)
		return
	}
	for _, tc := range turn.ToolCalls {
		var ds []map[string]any
		for _, p := range splitArgs(tc.Arguments, turn.ArgChunks) {
			ds = append(ds, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		if !block(map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}, ds) {
			return
		}
	}
	if !e.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": u.Completion}}) {
		return
	}
	e.send("message_stop", map[string]any{"type": "message_stop"})
}
