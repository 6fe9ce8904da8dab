package agent

import (
	"context"

	"github.com/hestia-dev/hestia/internal/llm"
)

// This file holds the agent's side of issue 31's model-client items: the
// context budget from the discovered window, and the stream events the
// client shows (reasoning, the wait for the first token).

// contextBudget is the prompt budget in tokens: the model's window when
// known (Deps.Window) less room for the reply, else Config.ContextTokens,
// less the safety margin.
func (a *Agent) contextBudget(ctx context.Context) int {
	window := a.cfg.ContextTokens
	if a.d.Window != nil {
		if w := a.d.Window(ctx, a.cfg.Tier); w > 0 {
			reply := a.cfg.MaxTokens
			if reply <= 0 {
				reply = llm.DefaultMaxTokens("agent", "chat-turn")
			}
			window = w - min(reply, w/4)
		}
	}
	return int(float64(window) * (1 - a.cfg.SafetyMargin))
}

// publishModelEvent turns a model stream event into client protocol
// events: visible text, reasoning (shown collapsed, never sent back to the
// model) and the wait while the model reads the prompt.
func (a *Agent) publishModelEvent(st *turnState, step int, ev llm.Event) {
	switch ev.Kind {
	case llm.EventText:
		if ev.Text != "" {
			a.publish("message.delta", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "step": step, "text": ev.Text})
		}
	case llm.EventReasoning:
		if ev.Text != "" {
			a.publish("message.reasoning", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "step": step, "text": ev.Text})
		}
	case llm.EventWaiting:
		if w := ev.Waiting; w != nil {
			a.publish("model.waiting", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "step": step, "prompt_tokens": w.PromptTokens,
				"local": w.Local, "provider": w.Provider, "model": w.Model, "first_token_timeout_s": int(w.FirstTokenTimeout.Seconds())})
		}
	}
}

// shrank reports whether reducing the context made the request smaller;
// a request that did not shrink would be rejected again.
func shrank(before, after []llm.Message, defs []llm.ToolDef) bool {
	return estimate(after, defs) < estimate(before, defs)
}

// FixedPromptTokens estimates the part of every chat's first request that
// does not depend on the conversation: the system prompt and the tools
// offered before any is loaded. Doctor compares it with the model's window.
func (a *Agent) FixedPromptTokens(ctx context.Context) int {
	sys := []llm.Message{{Role: llm.RoleSystem, Content: a.systemPrompt(ctx)}}
	return estimate(sys, a.offer(ctx, nil).defs)
}
