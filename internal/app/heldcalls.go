package app

import (
	"context"
	"fmt"

	"github.com/hestia-dev/hestia/internal/authority"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/heldcall"
)

// openHeldCalls opens the durable queue of background calls waiting for
// the user (user jobs' gated calls, watch calls outside their grants), so
// they survive a restart and run at most once. Its worker asks again, at
// start, about the calls a previous daemon left waiting.
func (a *App) openHeldCalls(ctx context.Context, auth *authority.Authority, chats *chat.Store, bus *events.Bus) (*heldcall.Queue, error) {
	q, err := heldcall.Open(ctx, a.Paths.DB(heldcall.Schema.Name), heldcall.Options{
		Log: a.Log.With("component", "heldcalls"), Now: a.Now, Authority: auth, ToolTimeout: a.Config.Agent.ToolTimeout.D(),
		Finished: func(ctx context.Context, c heldcall.Call) {
			if c.ChatID == "" {
				return
			}
			// Only the outcome, never the tool's output: this note is
			// assistant text, and the output may be outside content.
			msg := &chat.Message{Role: "assistant", Content: fmt.Sprintf("The %s call that waited for your approval (%s) is now %s.", c.Tool, c.Origin, c.State)}
			if c.State == heldcall.StateFailed || c.State == heldcall.StateDenied {
				msg.Content += " Not done."
			}
			if err := chats.Append(ctx, c.ChatID, msg); err != nil {
				a.Log.Warn("heldCallNote", "err", err)
				return
			}
			bus.Publish("message.created", c.ChatID, map[string]any{"message": msg})
		},
	})
	if err != nil {
		return nil, err
	}
	a.OnClose(q.Close)
	q.Routes(a.Server.API())
	a.AddWorker("heldcalls", q.Run)
	return q, nil
}

// heldAdapter lets the agent record its background calls in the queue.
type heldAdapter struct{ q *heldcall.Queue }

func (h heldAdapter) Hold(ctx context.Context, c agent.HeldCall) error {
	_, err := h.q.Hold(ctx, heldcall.Call{Key: c.Key, Origin: c.Origin, ChatID: c.ChatID, Tool: c.Tool, Args: c.Args, Reason: c.Reason, TaintedBy: c.TaintedBy})
	return err
}
func (h heldAdapter) Begin(ctx context.Context, key string) (bool, error) { return h.q.Begin(ctx, key) }
func (h heldAdapter) Finish(ctx context.Context, key, state, result string) error {
	return h.q.Finish(ctx, key, state, result)
}
func (h heldAdapter) Adopt(key string) { h.q.Adopt(key) }
