package adversarial

import (
	"context"
	"fmt"
	"sync"

	"github.com/hestia-dev/hestia/internal/llm"
)

// Step is one scripted model reply: text, tool calls, or both.
type Step struct {
	Text  string
	Calls []Call
}

// Call is one scripted tool call.
type Call struct {
	ID   string
	Name string
	Args string // raw JSON as the model would produce it
}

// Model is the attacker-controlled model. It returns the client the agent
// calls and a function listing every message the model was sent (to check
// that no secret ever reached it).
type Model func(script []Step) (llm.Client, func() []llm.Message, error)

// ScriptedModel is the in-process fully compromised model: it answers with
// the script, step by step, whatever it is sent. Once the script is spent
// it answers with plain text so a turn always ends.
func ScriptedModel(script []Step) (llm.Client, func() []llm.Message, error) {
	m := &scripted{script: script}
	return m, m.seen, nil
}

type scripted struct {
	mu     sync.Mutex // guards the fields below
	script []Step
	next   int
	sent   []llm.Message
}

func (m *scripted) seen() []llm.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Message(nil), m.sent...)
}

func (m *scripted) step(req llm.Request) Step {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, req.Messages...)
	if m.next >= len(m.script) {
		return Step{Text: "done"}
	}
	s := m.script[m.next]
	m.next++
	return s
}

func (m *scripted) Stream(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	s := m.step(req)
	resp := llm.Response{Text: s.Text, Provider: "adversary", Model: "compromised", Tier: req.Tier, Attempts: 1, FinishReason: llm.FinishStop}
	if s.Text != "" {
		if err := fn(llm.Event{Kind: llm.EventText, Text: s.Text}); err != nil {
			return resp, err
		}
	}
	for i, c := range s.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		tc := llm.ToolCall{ID: id, Name: c.Name, Arguments: c.Args}
		resp.ToolCalls = append(resp.ToolCalls, tc)
		if err := fn(llm.Event{Kind: llm.EventToolCall, Index: i, ToolCall: &tc}); err != nil {
			return resp, err
		}
	}
	if len(s.Calls) > 0 {
		resp.FinishReason = llm.FinishToolCalls
	}
	resp.Usage = llm.Usage{InputTokens: 10, OutputTokens: 10}
	err := fn(llm.Event{Kind: llm.EventDone, FinishReason: resp.FinishReason, Usage: &resp.Usage})
	return resp, err
}

func (m *scripted) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return m.Stream(ctx, req, func(llm.Event) error { return nil })
}
