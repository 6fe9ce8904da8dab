package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/store"
)

// follower relays one Hestia chat's events to its Telegram chat: streamed
// replies, approval cards and their outcomes. Its subscription counts as
// an attached approver when the user may approve, so gated calls in the
// chat wait for a decision instead of being denied for want of one.
type follower struct {
	b      *Bot
	m      Mapping
	sub    *events.Subscription
	cancel context.CancelFunc

	mu       sync.Mutex // guards question and voice
	question string     // pending ask_user request id
	voice    bool       // the latest message was a voice note: speak the reply

	// Streaming state, touched only by run.
	turnID   string
	step     int
	msgID    int64
	buf      strings.Builder
	shown    string
	lastEdit time.Time
	// holdUntil is flood control: after a 429, no streaming edit is tried
	// before this (the final reply still is, waiting the time out).
	holdUntil time.Time
	// finished is the last turn whose final reply was written, so a
	// turn.finished seen twice (a replay after a shed) writes once.
	finished string
}

// setVoice records whether the message just submitted was a voice note.
func (f *follower) setVoice(v bool) {
	f.mu.Lock()
	f.voice = v
	f.mu.Unlock()
}

func (f *follower) wantsVoice() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.voice
}

func newFollower(b *Bot, m Mapping, cancel context.CancelFunc) *follower {
	approver := b.allowed(m.UserID, devices.Approve)
	sub := b.d.Bus.Subscribe(events.SubscribeOptions{ChatID: m.ChatID, Approver: approver})
	return &follower{b: b, m: m, sub: sub, cancel: cancel}
}

func (f *follower) pendingQuestion() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.question
}

// item is one queued event; adjacent deltas of one step are merged into
// one item, so the queue stays small however fast a model streams.
type item struct {
	ev    *events.Event
	delta *delta
}

type delta struct {
	TurnID string `json:"turn_id"`
	Step   int    `json:"step"`
	Text   string `json:"text"`
}

// inbox decouples reading the bus from talking to Telegram: the reader
// drains the subscription at once (so a slow Bot API never makes the bus
// shed this subscriber), the writer works through the queue in order.
type inbox struct {
	mu    sync.Mutex // guards items
	items []item
	wake  chan struct{}
}

func (in *inbox) push(it item) {
	in.mu.Lock()
	if n := len(in.items); n > 0 && it.delta != nil {
		if last := in.items[n-1].delta; last != nil && last.TurnID == it.delta.TurnID && last.Step == it.delta.Step {
			last.Text += it.delta.Text
			in.mu.Unlock()
			return
		}
	}
	in.items = append(in.items, it)
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *inbox) drain() []item {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := in.items
	in.items = nil
	return out
}

// read moves the subscription's events into the inbox until ctx ends.
// A subscription the bus shed anyway (a burst of thousands of deltas in a
// tight loop can outrun any reader) is resumed with Catchup: everything
// after the last event read is replayed from the bus's ring, so a turn's
// final text and approval cards are never lost to a resubscription.
func (f *follower) read(ctx context.Context, in *inbox) {
	sub := f.sub
	last := sub.Start
	defer func() { sub.Close() }()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C():
			if !ok {
				if !sub.Shed || ctx.Err() != nil {
					return
				}
				var missed []*events.Event
				sub, missed = f.b.d.Bus.Catchup(events.SubscribeOptions{ChatID: f.m.ChatID, After: last, Approver: f.b.allowed(f.m.UserID, devices.Approve)})
				if sub.Gap {
					f.b.d.Log.Warn("telegram follower fell behind the event ring; some updates may be missing", "chat", f.m.ChatID)
				}
				for _, ev := range missed {
					f.enqueue(in, ev)
				}
				last = sub.Start
				continue
			}
			last = ev.Seq
			f.enqueue(in, ev)
		}
	}
}

func (f *follower) enqueue(in *inbox, ev *events.Event) {
	if ev.ChatID != f.m.ChatID {
		return
	}
	it := item{ev: ev}
	if ev.Type == "message.delta" {
		var d delta
		if decodeData(ev, &d) != nil {
			return
		}
		it.delta = &d
	}
	in.push(it)
}

func (f *follower) run(ctx context.Context) {
	in := &inbox{wake: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.read(ctx, in)
	}()
	defer func() { <-done }()
	var flush *time.Timer
	var flushC <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-flushC:
			flushC = nil
			if wait := f.edit(ctx, false); wait > 0 {
				flush.Reset(wait)
				flushC = flush.C
			}
		case <-in.wake:
			for _, it := range in.drain() {
				if wait := f.event(ctx, it); wait > 0 && flushC == nil {
					if flush == nil {
						flush = time.NewTimer(wait)
					} else {
						flush.Reset(wait)
					}
					flushC = flush.C
				}
			}
		}
	}
}

// event handles one event; a positive result asks for an edit after it.
func (f *follower) event(ctx context.Context, it item) time.Duration {
	ev := it.ev
	switch ev.Type {
	case "message.delta":
		d := it.delta
		if d.TurnID == f.finished {
			return 0 // a late delta of a turn already written in full
		}
		if d.TurnID != f.turnID || d.Step != f.step {
			if f.msgID != 0 && d.TurnID == f.turnID {
				f.edit(ctx, true) // close the previous step's message as it stands
			}
			f.turnID, f.step, f.msgID, f.shown = d.TurnID, d.Step, 0, ""
			f.buf.Reset()
		}
		f.buf.WriteString(d.Text)
		if f.msgID == 0 {
			f.edit(ctx, true)
			return 0
		}
		now := f.b.d.Clock()
		next := f.lastEdit.Add(f.b.cfg.EditInterval)
		if f.holdUntil.After(next) {
			next = f.holdUntil
		}
		if now.Before(next) {
			return next.Sub(now)
		}
		return f.edit(ctx, false)
	case "turn.finished":
		var d struct {
			Result struct {
				TurnID  string `json:"turn_id"`
				OK      bool   `json:"ok"`
				Text    string `json:"text"`
				Aborted bool   `json:"aborted"`
				Error   *struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			} `json:"result"`
		}
		if decodeData(ev, &d) != nil {
			return 0
		}
		f.finish(ctx, d.Result.TurnID, d.Result.OK, d.Result.Text, d.Result.Aborted, d.Result.Error != nil, errMessage(d.Result.Error))
	case "approval.requested":
		var d struct {
			Approval approval.Request `json:"approval"`
		}
		if decodeData(ev, &d) == nil {
			f.card(ctx, d.Approval)
		}
	case "approval.resolved":
		var d struct {
			ID       string           `json:"id"`
			Decision approval.Outcome `json:"decision"`
		}
		if decodeData(ev, &d) == nil {
			f.mu.Lock()
			if f.question == d.ID {
				f.question = ""
			}
			f.mu.Unlock()
			f.b.withdraw(ctx, d.ID, outcomeLine(d.Decision))
		}
	}
	return 0
}

func errMessage(e *struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}) string {
	if e == nil {
		return ""
	}
	return e.Message
}

// edit shows the streaming text: a new message the first time, an edit
// after, never the same text twice. A streaming edit (final false) is not
// retried: under flood control it holds further edits back and returns
// how long to wait before trying again.
func (f *follower) edit(ctx context.Context, final bool) time.Duration {
	text := Truncate(f.buf.String(), chunkRunes)
	if strings.TrimSpace(text) == "" || text == f.shown {
		return 0
	}
	now := f.b.d.Clock()
	if !final && now.Before(f.holdUntil) {
		return f.holdUntil.Sub(now)
	}
	html := Render(text)
	f.lastEdit = now
	if f.msgID == 0 {
		m, err := f.b.send(ctx, f.m.TGChatID, html, nil)
		if err == nil {
			f.msgID = m.MessageID
			f.shown = text
		}
		return 0
	}
	var err error
	if final {
		err = f.b.d.API.EditMessageText(ctx, f.m.TGChatID, f.msgID, html, nil)
	} else {
		err = f.b.d.API.TryEditMessageText(ctx, f.m.TGChatID, f.msgID, html, nil)
	}
	if err != nil {
		if wait, flooded := Flooded(err); flooded && !final {
			f.holdUntil = f.b.d.Clock().Add(wait)
			f.b.d.Log.Info("telegram flood control: holding edits", "chat", f.m.TGChatID, "for", wait)
			return wait
		}
		f.b.d.Log.Warn("telegram edit failed", "err", err)
		return 0
	}
	f.shown = text
	return 0
}

// finish writes a turn's final reply, split into messages that fit. It
// always reaches the chat: the final edit waits out flood control, and a
// final edit that still fails is sent as a new message instead.
func (f *follower) finish(ctx context.Context, turnID string, ok bool, text string, aborted, failed bool, errMsg string) {
	if turnID != "" && turnID == f.finished {
		return
	}
	f.finished = turnID
	streaming := turnID == f.turnID && f.msgID != 0
	msgID := f.msgID
	f.turnID, f.msgID, f.shown = "", 0, ""
	f.buf.Reset()
	if !ok {
		switch {
		case aborted:
			// Interrupted by a newer message or cancelled: the next turn answers.
		case failed:
			f.b.send(ctx, f.m.TGChatID, "⚠️ "+Escape("The turn failed: "+errMsg), nil)
		}
		return
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	parts := Split(text)
	for i, p := range parts {
		if i == 0 && streaming {
			err := f.b.d.API.EditMessageText(ctx, f.m.TGChatID, msgID, Render(p), nil)
			if err == nil {
				continue
			}
			f.b.d.Log.Warn("telegram final edit failed; sending the reply anew", "err", err)
		}
		f.b.send(ctx, f.m.TGChatID, Render(p), nil)
	}
	if f.b.speaks(f.wantsVoice()) {
		f.b.speakReply(ctx, f.m.TGChatID, text)
	}
}

// Callback data is "a:<approval id>:<action>"; Telegram allows 64 bytes.
const (
	actApprove = "ok"
	actDeny    = "no"
	actAllow10 = "m10"
)

// card sends an approval or question card.
func (f *follower) card(ctx context.Context, r approval.Request) {
	if !f.b.allowed(f.m.UserID, devices.Approve) {
		return
	}
	var b strings.Builder
	var kb *InlineKeyboard
	if r.Kind == approval.KindQuestion {
		f.mu.Lock()
		f.question = r.ID
		f.mu.Unlock()
		b.WriteString("❓ <b>The assistant asks:</b>\n" + Escape(r.Question))
		if len(r.Choices) > 0 {
			b.WriteString("\n\nChoices: " + Escape(strings.Join(r.Choices, " · ")))
		}
		b.WriteString("\n\n<i>Reply with your answer.</i>")
		kb = &InlineKeyboard{Rows: [][]Button{{{Text: "Decline to answer", CallbackData: "a:" + r.ID + ":" + actDeny}}}}
	} else {
		b.WriteString("🔐 <b>Approval needed</b>: <code>" + Escape(r.Tool) + "</code>")
		if r.Risk != "" {
			b.WriteString(" (risk " + Escape(r.Risk) + ")")
		}
		if r.Reason != "" {
			b.WriteString("\n" + Escape(r.Reason))
		}
		preview := r.Preview
		if preview == "" {
			preview = string(r.Args)
		}
		b.WriteString("\n<pre>" + Escape(Truncate(preview, 1500)) + "</pre>")
		if len(r.TaintedBy) > 0 {
			b.WriteString("\n⚠️ This turn read untrusted content before proposing this.")
		}
		b.WriteString("\nExpires " + Escape(r.ExpiresAt.Local().Format("15:04")) + ".")
		rows := [][]Button{
			{{Text: "✅ Approve", CallbackData: "a:" + r.ID + ":" + actApprove}, {Text: "❌ Deny", CallbackData: "a:" + r.ID + ":" + actDeny}},
			{{Text: "⏱ Allow 10 min", CallbackData: "a:" + r.ID + ":" + actAllow10}},
		}
		if f.b.cfg.PublicURL != "" {
			rows = append(rows, []Button{{Text: "✏️ Edit in Hestia", URL: strings.TrimSuffix(f.b.cfg.PublicURL, "/") + "/chats/" + f.m.ChatID}})
		}
		kb = &InlineKeyboard{Rows: rows}
	}
	text := b.String()
	f.b.cards.RLock()
	defer f.b.cards.RUnlock()
	m, err := f.b.send(ctx, f.m.TGChatID, text, kb)
	if err != nil {
		return
	}
	if err := f.b.d.Store.AddCard(ctx, Card{ApprovalID: r.ID, TGChatID: f.m.TGChatID, MessageID: m.MessageID, Text: text}); err != nil {
		f.b.d.Log.Error("storing approval card", "err", err)
	}
}

func outcomeLine(o approval.Outcome) string {
	switch o {
	case approval.Approve:
		return "✅ Approved"
	case approval.Edit:
		return "✅ Approved with edits"
	case approval.Deny:
		return "❌ Denied"
	case approval.Revise:
		return "↩️ Sent back for revision"
	case approval.Answer:
		return "💬 Answered"
	case approval.Timeout:
		return "⌛ Timed out (denied)"
	case approval.NoApprover:
		return "⌛ Nobody could answer (denied)"
	case approval.Cancelled:
		return "⏹ Cancelled"
	}
	return "Decided: " + string(o)
}

// withdraw closes a card: its buttons go and the outcome is appended.
// Only the first close edits, so a decision made here and the resolution
// event that follows it do not both write.
func (b *Bot) withdraw(ctx context.Context, approvalID, line string) {
	c, err := b.d.Store.Card(ctx, approvalID)
	if err != nil {
		return
	}
	first, err := b.d.Store.Close(ctx, approvalID)
	if err != nil || !first {
		return
	}
	if err := b.d.API.EditMessageText(ctx, c.TGChatID, c.MessageID, c.Text+"\n\n<b>"+Escape(line)+"</b>", nil); err != nil {
		b.d.Log.Warn("withdrawing telegram approval card", "err", err)
	}
}

// handleCallback applies a button press. Everything about it is checked
// against what was sent: the card must exist for that approval, on that
// chat and message, pressed by an allow-listed user with the approve scope
// who owns the chat, and still be open. Anything else is refused, answered
// and audited; nothing is decided.
func (b *Bot) handleCallback(ctx context.Context, q *CallbackQuery) {
	refuse := func(reason, notice string) {
		b.d.Audit(ctx, "telegram.callback_refused", "", "Telegram button press refused: "+reason,
			map[string]any{"user_id": q.From.ID, "data": Truncate(q.Data, 64), "reason": reason})
		if err := b.d.API.AnswerCallbackQuery(ctx, q.ID, notice); err != nil {
			b.d.Log.Warn("answering telegram callback", "err", err)
		}
	}
	parts := strings.Split(q.Data, ":")
	if len(parts) != 3 || parts[0] != "a" || parts[1] == "" {
		refuse("malformed button data", "Unknown button.")
		return
	}
	id, act := parts[1], parts[2]
	var d approval.Decision
	switch act {
	case actApprove:
		d = approval.Decision{Outcome: approval.Approve}
	case actDeny:
		d = approval.Decision{Outcome: approval.Deny, Note: "denied from Telegram"}
	case actAllow10:
		d = approval.Decision{Outcome: approval.Approve, Mode: "allow_10m"}
	default:
		refuse("unknown action "+act, "Unknown button.")
		return
	}
	if !b.allowed(q.From.ID, devices.Approve) {
		refuse(fmt.Sprintf("user %d may not approve", q.From.ID), "You may not decide approvals here.")
		return
	}
	// An empty section: waits for cards being posted.
	b.cards.Lock()
	//lint:ignore SA2001 the lock is the wait
	b.cards.Unlock()
	c, err := b.d.Store.Card(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		refuse("no card for approval "+id, "Unknown approval.")
		return
	}
	if err != nil {
		refuse("card lookup failed", "Something went wrong; try in the app.")
		return
	}
	if q.Message == nil || q.Message.Chat.ID != c.TGChatID || q.Message.MessageID != c.MessageID {
		refuse("button does not belong to the card's message", "Unknown approval.")
		return
	}
	m, err := b.d.Store.ChatFor(ctx, c.TGChatID)
	if err != nil || m.UserID != q.From.ID {
		refuse("user does not own the card's chat", "You may not decide this approval.")
		return
	}
	pressed, err := b.d.Store.Press(ctx, id)
	if err != nil || !pressed {
		refuse("card already pressed or closed", "Already decided.")
		return
	}
	res, err := b.d.Approvals.Decide(id, d)
	if err != nil {
		notice := "This request is no longer pending."
		if errors.Is(err, approval.ErrAlreadyDecided) {
			notice = "Already decided elsewhere."
		}
		b.withdraw(ctx, id, "No longer pending")
		_ = b.d.API.AnswerCallbackQuery(ctx, q.ID, notice)
		return
	}
	b.d.Audit(ctx, "telegram.decision", m.ChatID, fmt.Sprintf("approval %s decided from Telegram: %s", id, res.Outcome),
		map[string]any{"approval_id": id, "decision": res.Outcome, "mode": res.Mode, "user_id": q.From.ID})
	line := outcomeLine(res.Outcome)
	if res.Mode == "allow_10m" {
		line += " (and allowed for 10 minutes)"
	}
	b.withdraw(ctx, id, line)
	_ = b.d.API.AnswerCallbackQuery(ctx, q.ID, line)
}
