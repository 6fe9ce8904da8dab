package channels

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/store"
)

// codeAlphabet leaves out letters and digits people confuse (0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

func newCode() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b)
}

// codeReply matches "K7QF approve", "k7qf: deny", "K7QF yes".
var codeReply = lazyre.New(`(?i)^\s*([a-z0-9]{4})\s*[:,.-]?\s+(approve|approved|yes|ok|allow|deny|denied|reject|no|decline)\b`)

// parseCodeReply returns the code and verb of a request-code reply.
func parseCodeReply(text string) (string, Verb, bool) {
	m := codeReply.FindStringSubmatch(text)
	if m == nil {
		return "", "", false
	}
	v := VerbDeny
	switch strings.ToLower(m[2]) {
	case "approve", "approved", "yes", "ok", "allow":
		v = VerbApprove
	}
	return strings.ToUpper(m[1]), v, true
}

// cardText renders a prompt in Markdown, ending with the request code so
// it can be answered on any platform, buttons or not.
func (r *Relay) cardText(req approval.Request, code string) string {
	var b strings.Builder
	if req.Kind == approval.KindQuestion {
		b.WriteString("❓ **The assistant asks:**\n" + req.Question)
		if len(req.Choices) > 0 {
			b.WriteString("\n\nChoices: " + strings.Join(req.Choices, " · "))
		}
		fmt.Fprintf(&b, "\n\nReply with your answer, or \"%s decline\" to decline.", code)
		return b.String()
	}
	b.WriteString("🔐 **Approval needed**: `" + req.Tool + "`")
	if req.Risk != "" {
		b.WriteString(" (risk " + req.Risk + ")")
	}
	if req.Origin != "" {
		b.WriteString("\nFrom: " + req.Origin)
	}
	if req.Reason != "" {
		b.WriteString("\n" + req.Reason)
	}
	preview := req.Preview
	if preview == "" {
		preview = string(req.Args)
	}
	b.WriteString("\n```\n" + strings.ReplaceAll(truncate(preview, 1200), "```", "ˋˋˋ") + "\n```")
	if len(req.TaintedBy) > 0 {
		b.WriteString("\n⚠️ This turn read untrusted content before proposing this.")
	}
	if !req.NoExpiry && !req.ExpiresAt.IsZero() {
		b.WriteString("\nExpires " + req.ExpiresAt.Local().Format("15:04") + ".")
	}
	if r.cfg.PublicURL != "" && !r.lim.Buttons {
		b.WriteString("\nOpen in Hestia: " + strings.TrimSuffix(r.cfg.PublicURL, "/") + "/chats/" + req.ChatID)
	}
	fmt.Fprintf(&b, "\nReply \"%s approve\" or \"%s deny\".", code, code)
	return b.String()
}

// sendCard queues an approval or question prompt for a conversation.
func (r *Relay) sendCard(ctx context.Context, m Mapping, req approval.Request, replyTo string) {
	ctx = context.WithoutCancel(ctx)
	if _, err := r.d.Store.Card(ctx, r.name, req.ID); err == nil {
		return // sent before (a replayed event)
	}
	var c Card
	var err error
	for range 5 { // a code clash with another open card: draw again
		code := newCode()
		c = Card{ApprovalID: req.ID, Channel: r.name, Conv: m.Conv, Code: code, OutboxKey: r.name + ":card:" + req.ID,
			Text: r.cardText(req, code), Question: req.Kind == approval.KindQuestion}
		if err = r.d.Store.AddCard(ctx, c); err == nil {
			break
		}
	}
	if err != nil {
		r.d.Log.Error("recording a channel approval card", "channel", r.name, "err", err)
		return
	}
	p := &Prompt{ApprovalID: req.ID, ChatID: req.ChatID, Code: c.Code, Question: c.Question}
	if err := r.d.Store.Enqueue(ctx, Item{Channel: r.name, Conv: m.Conv, Key: c.OutboxKey, Text: c.Text, Prompt: p, ReplyTo: replyTo}); err != nil {
		r.d.Log.Error("queueing a channel approval card", "channel", r.name, "err", err)
		return
	}
	r.ob.wake()
}

// decideByCode applies a "CODE approve" reply; false when text is not one
// (it is then an ordinary message).
func (r *Relay) decideByCode(ctx context.Context, u Update, text string) bool {
	code, verb, ok := parseCodeReply(text)
	if !ok {
		return false
	}
	c, err := r.d.Store.CardByCode(ctx, r.name, u.Conv, code)
	if err != nil {
		return false // four letters and "no" that name no card: a message
	}
	r.decide(ctx, u, c, verb, nil)
	return true
}

// handleAction applies a button press or reaction. Everything about it is
// checked against what was sent: the card must exist for that message,
// carry the approval the button names, be acted on by an allowed person
// with the approve scope who owns the conversation, and still be open.
func (r *Relay) handleAction(ctx context.Context, u Update) {
	a := u.Action
	refuse := func(reason, notice string) {
		r.d.Audit(ctx, "channel.action_refused", "", r.cfg.Label+" approval action refused: "+reason,
			map[string]any{"channel": r.name, "sender": u.Sender, "ref": truncate(a.Ref, 80), "reason": reason})
		if a.Ack != nil {
			a.Ack(ctx, notice)
		}
	}
	c, err := r.cardForAction(ctx, a)
	if errors.Is(err, store.ErrNotFound) {
		refuse("no card for this message", "Unknown approval.")
		return
	}
	if err != nil {
		refuse("card lookup failed", "Something went wrong; try in the app.")
		return
	}
	if a.ApprovalID != "" && a.ApprovalID != c.ApprovalID {
		refuse("button does not belong to the card's message", "Unknown approval.")
		return
	}
	if a.Verb != VerbApprove && a.Verb != VerbDeny && a.Verb != VerbAllow10m {
		refuse("unknown action "+truncate(string(a.Verb), 20), "Unknown button.")
		return
	}
	r.decide(ctx, u, c, a.Verb, a.Ack)
}

// cardForAction finds the card an action was made on. A press or reaction
// can beat the outbox's record of the message the prompt was sent as by a
// moment, so a miss is retried for up to two seconds.
func (r *Relay) cardForAction(ctx context.Context, a *Action) (Card, error) {
	for attempt := 0; ; attempt++ {
		c, err := r.d.Store.CardByRef(ctx, r.name, a.Ref)
		if !errors.Is(err, store.ErrNotFound) {
			return c, err
		}
		if a.ApprovalID != "" {
			// The button names its prompt: no such prompt, or one already
			// recorded as another message, is not worth waiting for.
			named, err := r.d.Store.Card(ctx, r.name, a.ApprovalID)
			if err != nil {
				return Card{}, err
			}
			if named.Ref != "" {
				return Card{}, store.ErrNotFound
			}
		}
		if attempt == 20 {
			return Card{}, store.ErrNotFound
		}
		select {
		case <-ctx.Done():
			return Card{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// decide applies a choice on a card after the identity checks every path
// shares.
func (r *Relay) decide(ctx context.Context, u Update, c Card, verb Verb, ack func(context.Context, string)) {
	notify := func(reason, notice string) {
		r.d.Audit(ctx, "channel.action_refused", "", r.cfg.Label+" approval action refused: "+reason,
			map[string]any{"channel": r.name, "sender": u.Sender, "approval_id": c.ApprovalID, "reason": reason})
		if ack != nil {
			ack(ctx, notice)
		} else {
			r.reply(ctx, u, notice)
		}
	}
	if !r.allowed(u.Sender, devices.Approve) {
		notify("sender may not approve", "You may not decide approvals here.")
		return
	}
	m, err := r.d.Store.ChatFor(ctx, r.name, c.Conv)
	if err != nil || m.Sender != u.Sender || (u.Conv != "" && u.Conv != c.Conv) {
		notify("sender does not own the card's conversation", "You may not decide this approval.")
		return
	}
	var d approval.Decision
	switch {
	case c.Question && verb == VerbDeny:
		d = approval.Decision{Outcome: approval.Deny, Note: "declined from " + r.cfg.Label}
	case c.Question:
		notify("a question is answered by a message, not approved", "Reply with your answer instead.")
		return
	case verb == VerbApprove:
		d = approval.Decision{Outcome: approval.Approve}
	case verb == VerbAllow10m:
		d = approval.Decision{Outcome: approval.Approve, Mode: "allow_10m"}
	default:
		d = approval.Decision{Outcome: approval.Deny, Note: "denied from " + r.cfg.Label}
	}
	pressed, err := r.d.Store.Press(ctx, r.name, c.ApprovalID)
	if err != nil || !pressed {
		notify("card already decided", "Already decided.")
		return
	}
	res, err := r.d.Approvals.Decide(c.ApprovalID, d)
	if err != nil {
		notice := "This request is no longer pending."
		if errors.Is(err, approval.ErrAlreadyDecided) {
			notice = "Already decided elsewhere."
		}
		r.withdraw(ctx, c.ApprovalID, "No longer pending")
		if ack != nil {
			ack(ctx, notice)
		}
		return
	}
	r.d.Audit(ctx, "channel.decision", m.ChatID, fmt.Sprintf("approval %s decided from %s: %s", c.ApprovalID, r.cfg.Label, res.Outcome),
		map[string]any{"channel": r.name, "approval_id": c.ApprovalID, "decision": res.Outcome, "mode": res.Mode, "sender": u.Sender})
	line := outcomeLine(res.Outcome)
	if res.Mode == "allow_10m" {
		line += " (and allowed for 10 minutes)"
	}
	if ack != nil && !r.lim.Edit {
		// The press's own answer says it; a second line would repeat it.
		if _, err := r.d.Store.Close(context.WithoutCancel(ctx), r.name, c.ApprovalID); err != nil {
			r.d.Log.Warn("closing a channel card", "channel", r.name, "err", err)
		}
	} else {
		r.withdraw(ctx, c.ApprovalID, line)
	}
	if ack != nil {
		ack(ctx, line)
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

// withdraw closes a card once: where the platform edits, the prompt loses
// its buttons and gains the outcome; elsewhere a short line says it.
func (r *Relay) withdraw(ctx context.Context, approvalID, line string) {
	ctx = context.WithoutCancel(ctx)
	c, err := r.d.Store.Card(ctx, r.name, approvalID)
	if err != nil {
		return
	}
	first, err := r.d.Store.Close(ctx, r.name, approvalID)
	if err != nil || !first {
		return
	}
	it := Item{Channel: r.name, Conv: c.Conv, Key: r.name + ":closed:" + approvalID, ReplyTo: r.d.Store.ReplyToOf(ctx, c.OutboxKey)}
	if r.lim.Edit {
		// The edit goes through the outbox too, so it follows the prompt
		// even when the prompt itself is still waiting to be sent.
		it.Text = c.Text + "\n\n**" + line + "**"
		it.Prompt = &Prompt{ApprovalID: approvalID, Code: c.Code, Question: c.Question, Closed: true}
		it.EditRef = outRef(c.OutboxKey)
	} else {
		it.Text = c.Code + ": " + line
	}
	if err := r.d.Store.Enqueue(ctx, it); err != nil {
		r.d.Log.Error("queueing a channel card withdrawal", "channel", r.name, "err", err)
		return
	}
	r.ob.wake()
}
