package app

import (
	"context"
	"fmt"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/llm"
)

// addWindowCheck registers llm.window: the chat tier's context window
// against the part of every request that does not depend on the
// conversation (issue 31 item 3: a 4,096-token server failed every
// message while doctor said OK).
func (a *App) addWindowCheck(ag *agent.Agent) {
	a.AddCheck(doctor.Memo(windowCheck(a.LLM, llm.Tier(a.Config.Agent.Tier), ag.FixedPromptTokens), systemCheckTTL, a.Now))
}

// minConversationRoom is the least room, in tokens, the fixed prompt and
// the reply reserve should leave for the conversation itself.
const minConversationRoom = 1024

func windowCheck(r *llm.Router, tier llm.Tier, fixed func(context.Context) int) doctor.Check {
	return doctor.Check{Name: "llm.window", Run: func(ctx context.Context) (doctor.Status, string) {
		w, err := r.Window(ctx, tier)
		if err != nil {
			return doctor.Warn, fmt.Sprintf("%s: %v", tier, err)
		}
		n := fixed(ctx)
		if w.Tokens == 0 {
			return doctor.OK, fmt.Sprintf("%s: context window unknown (the server does not say; set llm.context_window); system prompt and tools take about %d tokens", tier, n)
		}
		reserve := min(llm.DefaultMaxTokens("agent", "chat-turn"), w.Tokens/4)
		room := w.Tokens - n - reserve
		detail := fmt.Sprintf("%s: %d-token window (%s); system prompt and tools take about %d tokens and replies keep %d, leaving %d for the conversation",
			tier, w.Tokens, w.Source, n, reserve, room)
		switch {
		case room <= 0:
			return doctor.Warn, detail + "; every message will fail: give the model a larger window (llama-server -c, Ollama num_ctx or llm.context_window)"
		case room < minConversationRoom:
			return doctor.Warn, detail + "; too little for a conversation: give the model a larger window (llama-server -c, Ollama num_ctx or llm.context_window)"
		}
		return doctor.OK, detail
	}}
}
