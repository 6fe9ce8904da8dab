// Package recalltools gives the agent recall over past conversations:
// chat_search (full-text over the user and assistant messages of every
// other chat) and chat_read (a window around a hit). Both are read-only.
//
// A past chat that had read outside content (mail, web, documents) may
// carry that content's instructions in its text, so results from such a
// chat are wrapped as untrusted and taint the turn.
package recalltools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/untrusted"
)

// Tools returns chat_search and chat_read over chats.
func Tools(chats *chat.Store) []tools.Tool {
	spec := func(name, desc, schema string) tools.Spec {
		return tools.Spec{Name: name, Description: desc, Schema: json.RawMessage(schema), Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, MaxResult: 20000}
	}
	return []tools.Tool{
		&tools.Func{S: spec("chat_search", "Search earlier conversations with the user (not this one) for words: when did we discuss X, what did we decide about Y. Returns chat ids and message numbers; open one with chat_read.", searchSchema),
			Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
				var a struct {
					Query string `json:"query"`
					Limit int    `json:"limit"`
				}
				if err := json.Unmarshal(c.Args, &a); err != nil {
					return tools.Result{Content: err.Error(), IsError: true}, nil
				}
				hits, err := chats.Recall(ctx, a.Query, c.ChatID, a.Limit)
				if err != nil {
					return fail(err)
				}
				from := ""
				for _, h := range hits {
					if h.Untrusted {
						from = h.ChatID
						break
					}
				}
				return result(ctx, c, "chat_search", map[string]any{"hits": hits}, from)
			}},
		&tools.Func{S: spec("chat_read", "Read a window of an earlier conversation around a message number from chat_search (user and assistant messages only).", readSchema),
			Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
				var a struct {
					ChatID string `json:"chat_id"`
					Seq    int    `json:"seq"`
					Radius int    `json:"radius"`
				}
				if err := json.Unmarshal(c.Args, &a); err != nil {
					return tools.Result{Content: err.Error(), IsError: true}, nil
				}
				if a.ChatID == c.ChatID && c.ChatID != "" {
					return tools.Result{Content: "chat_read is for earlier conversations; this one is already in your context", IsError: true}, nil
				}
				w, err := chats.RecallRead(ctx, a.ChatID, a.Seq, a.Radius)
				if err != nil {
					return fail(err)
				}
				from := ""
				if w.Untrusted {
					from = w.ChatID
				}
				return result(ctx, c, "chat_read", w, from)
			}},
	}
}

func fail(err error) (tools.Result, error) {
	if errors.Is(err, context.Canceled) {
		return tools.Result{}, err
	}
	return tools.Result{Content: err.Error(), IsError: true}, nil
}

func result(ctx context.Context, c tools.Call, name string, v any, untrustedChat string) (tools.Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return tools.Result{}, err
	}
	if untrustedChat == "" {
		return tools.Result{Content: string(b)}, nil
	}
	if tr := taint.From(ctx); tr != nil {
		tr.Mark(taint.Source{Tool: name, Detail: "chat " + untrustedChat, CallID: c.ID})
	}
	bd, err := untrusted.NewBoundary(nil)
	if err != nil {
		return tools.Result{}, err
	}
	wrapped, _ := bd.Wrap(name, tools.Cap(string(b), 20000))
	return tools.Result{Content: wrapped}, nil
}

const searchSchema = `{"type":"object","additionalProperties":false,"required":["query"],"properties":{
"query":{"type":"string","minLength":1,"maxLength":300},"limit":{"type":"integer","minimum":1,"maximum":20}}}`

const readSchema = `{"type":"object","additionalProperties":false,"required":["chat_id","seq"],"properties":{
"chat_id":{"type":"string","minLength":1,"maxLength":100},"seq":{"type":"integer","minimum":0},"radius":{"type":"integer","minimum":1,"maximum":10}}}`
