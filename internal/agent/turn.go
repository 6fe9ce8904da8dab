package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/budget"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/untrusted"
)

// wrapUpNote is sent, tools off, when the step limit is reached so the work
// gathered so far becomes an answer instead of being lost.
// maxHistory bounds how many stored messages a turn loads.
const maxHistory = 500

const wrapUpNote = "The step limit for this turn has been reached and tools are now unavailable. Reply to the user now: summarise what was done, what was found, and what is still open. Do not claim any action that a tool result did not confirm."

type turnState struct {
	t         *Turn
	compacted bool            // OnCompact already called this turn
	ctx       context.Context // cancelled on abort
	bg        context.Context // not cancelled: bookkeeping after an abort
	msgs      []llm.Message   // model-facing history, including the system prompt
	boundary  untrusted.Boundary
	taint     *taint.Tracker
	reduce    int // reducer tier applied so far
	steps     int
	loads     loads // tool groups the chat has loaded (offer.go)
	// thought spans the current model call's reasoning deltas, first to
	// last, for the "thought for N s" shown with the stored message.
	thought struct{ first, last time.Time }
}

// reasoningMS is how long the last model call streamed reasoning.
func (st *turnState) reasoningMS() int64 {
	if st.thought.first.IsZero() {
		return 0
	}
	return st.thought.last.Sub(st.thought.first).Milliseconds()
}

func (a *Agent) runTurn(t *Turn) (res Result) {
	res = Result{TurnID: t.ID, ChatID: t.ChatID}
	// Each turn starts clean; the tracker records untrusted reads so policy
	// can tighten for the rest of the turn (internal/taint).
	tracker := taint.NewTracker()
	ctx := taint.WithTracker(t.ctx, tracker)
	// Restrictions (a loaded skill's manifest) hold for the turn; see
	// replay for those carried over from earlier turns.
	ctx = policy.WithScope(ctx, policy.NewScope())
	ctx = a.budgetContext(ctx, t.opts) // budget.go
	bg := context.WithoutCancel(ctx)
	defer func() {
		if p := recover(); p != nil {
			a.d.Log.Error("agent turn panicked", "chat", t.ChatID, "turn", t.ID, "panic", fmt.Sprint(p))
			res = Result{TurnID: t.ID, ChatID: t.ChatID, Error: &ErrorInfo{Code: CodeInternal, Message: "the turn failed unexpectedly"}}
		}
		if !res.OK && res.Error != nil {
			a.audit(bg, audit.Entry{Type: audit.TypeTurnError, ChatID: t.ChatID, TurnID: t.ID, Summary: res.Error.Code + ": " + res.Error.Message, Data: res})
		}
		a.publish("turn.finished", t.ChatID, map[string]any{"result": res})
	}()
	if err := context.Cause(t.ctx); err != nil {
		return a.aborted(res, err)
	}
	if t.opts.Retry {
		return a.retryTurn(t, ctx, bg, tracker, res)
	}
	user := &chat.Message{Role: chat.RoleUser, Content: t.text, TurnID: t.ID}
	if err := a.d.Chats.Append(bg, t.ChatID, user); err != nil {
		if isNotFound(err) {
			res.Error = &ErrorInfo{Code: CodeChatNotFound, Message: "the chat no longer exists"}
			return res
		}
		a.d.Log.Error("storing user message", "chat", t.ChatID, "err", err)
		res.Error = &ErrorInfo{Code: CodeInternal, Message: "the message could not be stored"}
		return res
	}
	a.publish("turn.started", t.ChatID, map[string]any{"turn_id": t.ID, "user_message_id": user.ID})
	a.publish("message.created", t.ChatID, map[string]any{"message": user})
	a.audit(bg, audit.Entry{Type: audit.TypeUserMessage, ChatID: t.ChatID, TurnID: t.ID, Summary: snippet(t.text, 120), Data: map[string]any{"message_id": user.ID, "text": t.text}})

	// The model never needs more than the newest maxHistory messages; the
	// budget reducer shortens further when they do not fit.
	return a.continueTurn(t, ctx, bg, tracker, res)
}

// retryTurn re-runs an unfinished turn on the stored history. The history
// is checked again here because it may have changed while the retry queued.
func (a *Agent) retryTurn(t *Turn, ctx, bg context.Context, tracker *taint.Tracker, res Result) Result {
	last, err := a.d.Chats.Messages(bg, t.ChatID, 1)
	if err != nil || !retryable(last) {
		res.Error = &ErrorInfo{Code: CodeNothingToRetry, Message: ErrNothingToRetry.Error()}
		return res
	}
	a.publish("turn.started", t.ChatID, map[string]any{"turn_id": t.ID, "retry": true})
	a.audit(bg, audit.Entry{Type: audit.TypeUserMessage, ChatID: t.ChatID, TurnID: t.ID, Summary: "retry of the unfinished turn", Data: map[string]any{"retry": true}})
	return a.continueTurn(t, ctx, bg, tracker, res)
}

// continueTurn loads the history and runs the model/tool loop on it.
func (a *Agent) continueTurn(t *Turn, ctx, bg context.Context, tracker *taint.Tracker, res Result) Result {
	history, err := a.d.Chats.Messages(bg, t.ChatID, maxHistory)
	if err != nil {
		a.d.Log.Error("loading chat history", "chat", t.ChatID, "err", err)
		res.Error = &ErrorInfo{Code: CodeInternal, Message: "the chat history could not be read"}
		return res
	}
	b, err := untrusted.NewBoundary(nil)
	if err != nil {
		res.Error = &ErrorInfo{Code: CodeInternal, Message: "could not start the turn"}
		return res
	}
	st := &turnState{t: t, ctx: ctx, bg: bg, boundary: b, taint: tracker, loads: loads{reg: a.d.Tools}}
	st.ctx = a.withTaint(st.ctx, history) // see taint.go
	a.replay(st.ctx, history)
	st.loads.fromHistory(history)
	st.msgs = append([]llm.Message{{Role: llm.RoleSystem, Content: a.systemPrompt(st.ctx)}}, toLLM(history)...)
	st.msgs = withContext(st.msgs, a.contextNote())
	return a.loop(st, res)
}

// systemPrompt is the profile memory's AGENT.md, the base instructions,
// USER.md and MEMORY.md, then SystemNotes (the installed skills' index):
// the same bytes turn after turn and chat after chat while none of them
// changes, so provider prompt caches keep hitting. The time is volatile
// and goes with the latest user message instead (contextNote).
func (a *Agent) systemPrompt(ctx context.Context) string {
	before, after := "", ""
	if a.d.Profile != nil {
		before, after = a.d.Profile()
	}
	if a.d.SystemNotes != nil {
		if n := a.d.SystemNotes(ctx); n != "" {
			after += "\n\n" + n
		}
	}
	return before + a.cfg.SystemPrompt + after
}

// compacted tells OnCompact, once per turn, that the reducer summarised
// older history away (tier 2 or beyond): facts worth keeping may be in it.
func (a *Agent) compacted(st *turnState, tier int) {
	if tier < tierSummarise || st.compacted || a.d.OnCompact == nil {
		return
	}
	st.compacted = true
	a.d.OnCompact(st.t.ChatID)
}

// replay re-applies earlier successful calls of tools that set up state
// for the rest of the chat (tools.Replayer: a loaded skill's manifest
// restricts every later turn, not only the one that loaded it).
func (a *Agent) replay(ctx context.Context, history []chat.Message) {
	for _, m := range history {
		if m.Role != chat.RoleTool || m.Tool == nil || m.Tool.Status != StatusOK {
			continue
		}
		t, err := a.d.Tools.Get(m.ToolName)
		if err != nil {
			continue
		}
		if r, ok := t.(tools.Replayer); ok {
			args := m.Tool.EffectiveInput
			if len(args) == 0 {
				args = m.Tool.Input
			}
			r.Replay(ctx, args)
		}
	}
}

func (a *Agent) aborted(res Result, cause error) Result {
	code, ok := abortCode(cause)
	if !ok {
		code = CodeCancelled
	}
	res.OK, res.Aborted = false, true
	res.Error = &ErrorInfo{Code: code, Message: cause.Error()}
	return res
}

func (a *Agent) loop(st *turnState, res Result) Result {
	for {
		if err := context.Cause(st.ctx); err != nil {
			res.Steps = st.steps
			return a.aborted(res, err)
		}
		wrapUp := st.steps >= a.cfg.StepLimit
		offer := stepOffer{names: []string{}}
		if !wrapUp {
			offer = a.offer(st.ctx, st.loads.groups)
		} else {
			st.msgs = append(st.msgs, llm.Message{Role: llm.RoleUser, Content: wrapUpNote})
		}
		resp, err := a.callModel(st, offer.defs)
		st.steps++
		res.Steps = st.steps
		if err != nil {
			if cause := context.Cause(st.ctx); cause != nil {
				a.savePartial(st, resp)
				return a.aborted(res, cause)
			}
			return a.modelFailed(res, err)
		}
		// The reasoning is kept for the user to read back; st.msgs below
		// (what the model gets next) and the audit entry leave it out.
		assistant := &chat.Message{Role: chat.RoleAssistant, Content: resp.Text, TurnID: st.t.ID, Reasoning: resp.Reasoning, ReasoningMS: st.reasoningMS()}
		calls := resp.ToolCalls
		if wrapUp {
			calls = nil // tools are off; a model ignoring that gets no calls run
		}
		prepared := make([]*prepared, len(calls))
		for i, c := range calls {
			prepared[i] = a.prepare(st, i, c, offer)
			assistant.ToolCalls = append(assistant.ToolCalls, chat.ToolCall{ID: prepared[i].id, Name: c.Name, Arguments: prepared[i].dispatched})
		}
		if n := len(prepared); n > 0 && resp.Truncated() && prepared[n-1].decision == DecInvalid {
			// Only the last call can have been cut by the output limit.
			prepared[n-1].refusal += " The reply was cut off at the output token limit while writing these arguments; send a shorter call."
		}
		if err := a.d.Chats.Append(st.bg, st.t.ChatID, assistant); err != nil {
			a.d.Log.Error("storing assistant message", "chat", st.t.ChatID, "err", err)
			res.Error = &ErrorInfo{Code: CodeInternal, Message: "the reply could not be stored"}
			if isNotFound(err) {
				res.Error = &ErrorInfo{Code: CodeChatNotFound, Message: "the chat was deleted during the turn"}
			}
			return res
		}
		a.publish("message.created", st.t.ChatID, map[string]any{"message": assistant})
		st.msgs = append(st.msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: dispatchedCalls(prepared)})
		if len(prepared) == 0 {
			a.audit(st.bg, audit.Entry{Type: audit.TypeAssistantMessage, ChatID: st.t.ChatID, TurnID: st.t.ID, Summary: snippet(resp.Text, 120), Data: map[string]any{"message_id": assistant.ID, "text": resp.Text, "steps": st.steps}})
			res.OK, res.MessageID, res.Text = true, assistant.ID, resp.Text
			res.StepLimitHit = wrapUp
			return res
		}
		results := a.execute(st, prepared, offer.names)
		st.loads.fromStep(prepared, results)
		toolMsgs := make([]*chat.Message, len(results))
		for i, r := range results {
			toolMsgs[i] = r.message(st.t.ID)
		}
		if err := a.d.Chats.Append(st.bg, st.t.ChatID, toolMsgs...); err != nil {
			a.d.Log.Error("storing tool results", "chat", st.t.ChatID, "err", err)
			res.Error = &ErrorInfo{Code: CodeInternal, Message: "tool results could not be stored"}
			return res
		}
		for i, m := range toolMsgs {
			a.publish("message.created", st.t.ChatID, map[string]any{"message": m})
			st.msgs = append(st.msgs, llm.Message{Role: llm.RoleTool, ToolCallID: results[i].id, Name: results[i].name, Content: results[i].modelContent})
		}
	}
}

// savePartial keeps streamed text (and its reasoning) the user already saw
// when a turn aborts.
func (a *Agent) savePartial(st *turnState, resp llm.Response) {
	if strings.TrimSpace(resp.Text) == "" {
		return
	}
	m := &chat.Message{Role: chat.RoleAssistant, Content: resp.Text + "\n[interrupted]", TurnID: st.t.ID, Reasoning: resp.Reasoning, ReasoningMS: st.reasoningMS()}
	if err := a.d.Chats.Append(st.bg, st.t.ChatID, m); err == nil {
		a.publish("message.created", st.t.ChatID, map[string]any{"message": m})
	}
}

func (a *Agent) modelFailed(res Result, err error) Result {
	code := llm.CodeOf(err)
	msg := "the model call failed"
	var le *llm.Error
	if errors.As(err, &le) && le.Message != "" {
		msg = le.Message
	}
	switch code {
	case llm.CodeContextTooLarge:
		res.Error = &ErrorInfo{Code: CodeContextTooLarge, Message: "the conversation is too large for the model even after shortening it: " + msg}
	case llm.CodeModelUnavailable, llm.CodeNetwork, llm.CodeAuth, llm.CodeBilling:
		res.Error = &ErrorInfo{Code: CodeModelUnavailable, Message: msg}
	case budget.CodeExceeded: // the client offers "continue over budget" (over_budget)
		res.Error = &ErrorInfo{Code: CodeBudgetExceeded, Message: msg}
	default:
		res.Error = &ErrorInfo{Code: CodeModelError, Message: msg}
	}
	switch code {
	case llm.CodeNetwork, llm.CodeRateLimited, llm.CodeModelUnavailable, llm.CodeTimeout, llm.CodeUnknown:
		res.Error.Retryable = true
	}
	return res
}

// callModel budgets the context, streams one reply, and on a
// context-too-large rejection reduces further and retries (bounded).
func (a *Agent) callModel(st *turnState, defs []llm.ToolDef) (llm.Response, error) {
	budget := a.contextBudget(st.ctx)
	// Tiers forced by earlier rejections stay applied for the whole turn;
	// further tiers run only while the estimate is over budget.
	for tier := 1; tier <= st.reduce; tier++ {
		st.msgs = reduceContext(st.msgs, tier)
	}
	applied := st.reduce
	for tier := st.reduce + 1; tier <= maxTier && estimate(st.msgs, defs) > budget; tier++ {
		st.msgs = reduceContext(st.msgs, tier)
		applied = tier
	}
	a.compacted(st, applied)
	for attempt := 0; ; attempt++ {
		step := st.steps
		st.thought.first, st.thought.last = time.Time{}, time.Time{}
		resp, err := a.d.LLM.Stream(st.ctx, llm.Request{
			Tier: a.cfg.Tier, Messages: st.msgs, Tools: defs, MaxTokens: a.cfg.MaxTokens,
			Service: "agent", Action: "chat-turn",
		}, func(ev llm.Event) error {
			if ev.Kind == llm.EventReasoning && ev.Text != "" {
				now := a.d.Clock()
				if st.thought.first.IsZero() {
					st.thought.first = now
				}
				st.thought.last = now
			}
			a.publishModelEvent(st, step, ev)
			return nil
		})
		if err == nil || llm.CodeOf(err) != llm.CodeContextTooLarge || attempt >= a.cfg.OverflowRetries || st.reduce >= maxTier {
			return resp, err
		}
		sent := st.msgs
		st.reduce++
		for tier := 1; tier <= st.reduce; tier++ {
			st.msgs = reduceContext(st.msgs, tier)
		}
		for !shrank(sent, st.msgs, defs) && st.reduce < maxTier {
			st.reduce++
			st.msgs = reduceContext(st.msgs, st.reduce)
		}
		if !shrank(sent, st.msgs, defs) {
			// Nothing left to shorten: the same request would fail the same
			// way (the fixed prompt alone does not fit the window).
			return resp, err
		}
		a.compacted(st, st.reduce)
		a.d.Log.Info("context too large, reduced and retrying", "chat", st.t.ChatID, "tier", st.reduce)
	}
}

func (a *Agent) deniedByPrefix(name string) bool {
	for _, p := range a.d.Policy.Config().DenyPrefixes {
		if p != "" && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func dispatchedCalls(ps []*prepared) []llm.ToolCall {
	if len(ps) == 0 {
		return nil
	}
	out := make([]llm.ToolCall, len(ps))
	for i, p := range ps {
		out[i] = llm.ToolCall{ID: p.id, Name: p.name, Arguments: string(p.dispatched)}
	}
	return out
}

// toLLM converts a stored transcript into model messages. Each assistant
// message is followed by exactly one result per call, in call order: a
// missing one gets a stub (so a crash mid-turn cannot poison later turns)
// and a result whose call fell outside the history window is dropped.
//
// A call's result is looked for only among the tool messages stored right
// after its assistant message (they are appended together, one turn at a
// time per chat). Call ids are not unique across a chat: servers that omit
// them get "call_0"-style ids in every step, and a model may repeat one.
func toLLM(ms []chat.Message) []llm.Message {
	out := make([]llm.Message, 0, len(ms))
	for i := 0; i < len(ms); i++ {
		m := ms[i]
		switch m.Role {
		case chat.RoleUser:
			out = append(out, llm.Message{Role: llm.RoleUser, Content: m.Content})
		case chat.RoleAssistant:
			lm := llm.Message{Role: llm.RoleAssistant, Content: m.Content}
			for _, c := range m.ToolCalls {
				args := string(c.Arguments)
				if args == "" {
					args = "{}"
				}
				lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
			}
			out = append(out, lm)
			end := i + 1
			for end < len(ms) && ms[end].Role == chat.RoleTool {
				end++
			}
			results := ms[i+1 : end]
			used := make([]bool, len(results))
			for _, c := range m.ToolCalls {
				r, ok := takeResult(results, used, c.ID)
				if ok {
					out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: r.ToolName, Content: modelContentOf(r)})
				} else {
					out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "NOT done: this call never completed (the turn ended before it ran)."})
				}
			}
			i = end - 1 // results not claimed by a call are dropped
		}
	}
	return out
}

// takeResult returns the first unused result for the call id and marks it
// used, so two calls sharing an id each get their own result in order.
func takeResult(results []chat.Message, used []bool, id string) (chat.Message, bool) {
	for j, r := range results {
		if !used[j] && r.ToolCallID == id {
			used[j] = true
			return r, true
		}
	}
	return chat.Message{}, false
}

// modelContentOf is what the model saw for a stored tool message. The stored
// content is already the model-facing text.
func modelContentOf(m chat.Message) string { return m.Content }

func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
