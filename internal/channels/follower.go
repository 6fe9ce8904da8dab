package channels

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
)

// follower relays one Hestia chat's events to its conversation: streamed
// replies, approval prompts and their outcomes. Its subscription counts as
// an attached approver when the person may approve, so gated calls in the
// chat wait for a decision instead of being denied for want of one.
type follower struct {
	r      *Relay
	m      Mapping
	sub    *events.Subscription
	cancel context.CancelFunc

	mu       sync.Mutex // guards question, replyTo and voice
	question string     // pending ask_user request id
	replyTo  string     // the latest inbound message's ReplyTo
	voice    bool       // the latest message was a voice note

	// Streaming state, touched only by run.
	turnID   string
	step     int
	ref      string // the streaming message, once sent
	buf      strings.Builder
	shown    string
	lastEdit time.Time
	// holdUntil is flood control: after a rate limit, no streaming edit is
	// tried before this (the final reply goes through the outbox, which
	// waits the limit out).
	holdUntil time.Time
	finished  string // the last turn whose final reply was queued
}

func newFollower(r *Relay, m Mapping, cancel context.CancelFunc) *follower {
	sub := r.d.Bus.Subscribe(events.SubscribeOptions{ChatID: m.ChatID, Approver: r.allowed(m.Sender, devices.Approve)})
	return &follower{r: r, m: m, sub: sub, cancel: cancel}
}

func (f *follower) pendingQuestion() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.question
}

func (f *follower) setLast(replyTo string, voice bool) {
	f.mu.Lock()
	f.replyTo, f.voice = replyTo, voice
	f.mu.Unlock()
}

func (f *follower) wantsVoice() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.voice
}

func (f *follower) currentReplyTo() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.replyTo
}

type delta struct {
	TurnID string `json:"turn_id"`
	Step   int    `json:"step"`
	Text   string `json:"text"`
}

// inbox decouples reading the bus from talking to the platform: the
// reader drains the subscription at once (a slow platform never makes the
// bus shed this subscriber); adjacent deltas of one step are merged.
type inbox struct {
	mu    sync.Mutex
	items []item
	wake  chan struct{}
}

type item struct {
	ev    *events.Event
	delta *delta
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

// read moves the subscription's events into the inbox until ctx ends; a
// subscription the bus shed anyway is resumed from the bus's ring, so a
// final reply or a prompt is not lost to a resubscription.
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
				sub, missed = f.r.d.Bus.Catchup(events.SubscribeOptions{ChatID: f.m.ChatID, After: last, Approver: f.r.allowed(f.m.Sender, devices.Approve)})
				if sub.Gap {
					f.r.d.Log.Warn("channel follower fell behind the event ring; some updates may be missing", "channel", f.r.name, "chat", f.m.ChatID)
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
		if !f.r.lim.Edit {
			return // no streaming where messages cannot be edited
		}
		var d delta
		if events.Decode(ev, &d) != nil {
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
	flush := time.NewTimer(time.Hour)
	flush.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			pending = false
			f.edit(ctx)
		case <-in.wake:
			for _, it := range in.drain() {
				if wait := f.event(ctx, it); wait > 0 && !pending {
					flush.Reset(wait)
					pending = true
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
			return 0
		}
		if d.TurnID != f.turnID || d.Step != f.step {
			if f.ref != "" && d.TurnID == f.turnID {
				f.edit(ctx) // close the previous step's message as it stands
			}
			f.turnID, f.step, f.ref, f.shown = d.TurnID, d.Step, "", ""
			f.buf.Reset()
		}
		f.buf.WriteString(d.Text)
		if f.ref == "" {
			f.edit(ctx)
			return 0
		}
		next := f.lastEdit.Add(f.r.lim.EditInterval)
		if f.holdUntil.After(next) {
			next = f.holdUntil
		}
		if now := f.r.d.Clock(); now.Before(next) {
			return next.Sub(now)
		}
		f.edit(ctx)
	case "turn.finished":
		var d struct {
			Result struct {
				TurnID  string `json:"turn_id"`
				OK      bool   `json:"ok"`
				Text    string `json:"text"`
				Aborted bool   `json:"aborted"`
				Error   *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"result"`
		}
		if events.Decode(ev, &d) != nil {
			return 0
		}
		res := d.Result
		errMsg := ""
		if res.Error != nil {
			errMsg = res.Error.Message
		}
		f.finish(ctx, res.TurnID, res.OK, res.Text, res.Aborted, res.Error != nil, errMsg)
	case "approval.requested":
		var d struct {
			Approval approval.Request `json:"approval"`
		}
		if events.Decode(ev, &d) == nil && f.r.allowed(f.m.Sender, devices.Approve) {
			if d.Approval.Kind == approval.KindQuestion {
				f.mu.Lock()
				f.question = d.Approval.ID
				f.mu.Unlock()
			}
			f.r.sendCard(ctx, f.m, d.Approval, f.currentReplyTo())
		}
	case "approval.resolved":
		var d struct {
			ID       string           `json:"id"`
			Decision approval.Outcome `json:"decision"`
		}
		if events.Decode(ev, &d) == nil {
			f.mu.Lock()
			if f.question == d.ID {
				f.question = ""
			}
			f.mu.Unlock()
			f.r.withdraw(ctx, d.ID, outcomeLine(d.Decision))
		}
	}
	return 0
}

// edit shows the streaming text: a new message the first time, an edit
// after. Streaming is best effort and bypasses the outbox; the final
// reply goes through it.
func (f *follower) edit(ctx context.Context) {
	text := f.buf.String()
	if n := f.r.lim.MaxText - 2; len([]rune(text)) > n {
		text = string([]rune(text)[:n]) + " …"
	}
	if strings.TrimSpace(text) == "" || text == f.shown {
		return
	}
	p := f.r.d.Platform
	f.lastEdit = f.r.d.Clock()
	out := Outgoing{Key: fmt.Sprintf("%s:stream:%s:%d", f.r.name, f.turnID, f.step), Text: text, ReplyTo: f.currentReplyTo()}
	if f.ref == "" {
		ref, err := p.Send(ctx, f.m.Conv, out)
		if err != nil {
			f.r.d.Log.Info("a streaming message was not sent; the final reply will be", "channel", f.r.name, "err", err)
			f.ref = "-" // do not try again for this step
			return
		}
		f.ref, f.shown = ref, text
		return
	}
	if f.ref == "-" {
		return
	}
	if err := p.Edit(ctx, f.m.Conv, f.ref, out); err != nil {
		var ra *RetryAfterError
		if errors.As(err, &ra) {
			f.holdUntil = f.r.d.Clock().Add(ra.After)
			f.r.d.Log.Info("flood control: holding streaming edits", "channel", f.r.name, "for", ra.After)
			return
		}
		f.r.d.Log.Info("a streaming edit failed", "channel", f.r.name, "err", err)
		return
	}
	f.shown = text
}

// finish queues a turn's final reply in the outbox, split into messages
// that fit; the first replaces the streaming message where there is one.
func (f *follower) finish(ctx context.Context, turnID string, ok bool, text string, aborted, failed bool, errMsg string) {
	if turnID != "" && turnID == f.finished {
		return
	}
	f.finished = turnID
	streamRef := ""
	if turnID == f.turnID && f.ref != "" && f.ref != "-" {
		streamRef = f.ref
	}
	f.turnID, f.ref, f.shown = "", "", ""
	f.buf.Reset()
	var parts []string
	switch {
	case !ok && failed:
		parts = []string{"⚠️ The turn failed: " + errMsg}
	case !ok:
		return // interrupted by a newer message or cancelled: the next turn answers
	case strings.TrimSpace(text) == "":
		return
	default:
		parts = Split(text, f.r.lim.MaxText)
	}
	ctx = context.WithoutCancel(ctx)
	replyTo := f.currentReplyTo()
	for i, p := range parts {
		it := Item{Channel: f.r.name, Conv: f.m.Conv, Key: fmt.Sprintf("%s:final:%s:%d", f.r.name, turnID, i), Text: p, ReplyTo: replyTo}
		if i == 0 {
			it.EditRef = streamRef
		}
		if err := f.r.d.Store.Enqueue(ctx, it); err != nil {
			f.r.d.Log.Error("queueing a channel reply", "channel", f.r.name, "err", err)
			return
		}
	}
	f.r.ob.wake()
	if ok && f.r.speaks(f.wantsVoice()) {
		f.r.speakReply(ctx, f.m.Conv, text, replyTo)
	}
}
