// Package channeltest is an in-memory messaging platform for the relay's
// tests: it records what was sent and edited, delivers updates as a
// platform would, and fails on request (transient, rate limited,
// permanent) so the outbox's retries can be checked.
package channeltest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Msg is a message as the platform holds it.
type Msg struct {
	Ref    string
	Conv   string
	Key    string
	Text   string
	Prompt *channels.Prompt
	Edits  int
}

// Platform is the fake. Set Lim before the relay starts.
type Platform struct {
	Lim channels.Limits
	// ID is the channel's name (default "fake").
	ID string

	mu      sync.Mutex
	msgs    []*Msg
	byKey   map[string]*Msg
	fail    []error // returned by the next sends/edits, in order
	updates chan channels.Update
	n       int
	acks    []string
	// sends counts every Send call, including repeats of a key.
	sends  int
	finds  int
	voices []string
}

// New returns a platform that edits, has buttons and no idempotency.
func New() *Platform {
	return &Platform{
		Lim:     channels.Limits{MaxText: 500, Edit: true, EditInterval: 10 * time.Millisecond, Buttons: true},
		byKey:   map[string]*Msg{},
		updates: make(chan channels.Update, 64),
	}
}

func (p *Platform) Name() string {
	if p.ID != "" {
		return p.ID
	}
	return "fake"
}
func (p *Platform) Kind() string            { return "fake" }
func (p *Platform) Limits() channels.Limits { return p.Lim }

// Receive hands delivered updates to h until ctx ends.
func (p *Platform) Receive(ctx context.Context, h channels.Handler) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case u := <-p.updates:
			h(ctx, u)
		}
	}
}

// Deliver queues an inbound update.
func (p *Platform) Deliver(u channels.Update) { p.updates <- u }

// Fail makes the next calls to Send or Edit return these errors in order.
func (p *Platform) Fail(errs ...error) {
	p.mu.Lock()
	p.fail = append(p.fail, errs...)
	p.mu.Unlock()
}

func (p *Platform) nextFail() error {
	if len(p.fail) == 0 {
		return nil
	}
	err := p.fail[0]
	p.fail = p.fail[1:]
	return err
}

// Send posts a message; with Lim.Idempotent a key sent before posts nothing.
func (p *Platform) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sends++
	if err := p.nextFail(); err != nil {
		return "", err
	}
	if m.Key == "" {
		return "", channels.Permanent(errors.New("fake: message without a key"))
	}
	if p.Lim.Idempotent {
		if old, ok := p.byKey[m.Key]; ok {
			return old.Ref, nil
		}
	}
	if n := len([]rune(m.Text)); n > p.Lim.MaxText {
		return "", channels.Permanent(fmt.Errorf("fake: message of %d characters is over the %d limit", n, p.Lim.MaxText))
	}
	p.n++
	msg := &Msg{Ref: fmt.Sprintf("m%d", p.n), Conv: conv, Key: m.Key, Text: m.Text, Prompt: m.Prompt}
	p.msgs = append(p.msgs, msg)
	p.byKey[m.Key] = msg
	return msg.Ref, nil
}

// Edit replaces a message's text.
func (p *Platform) Edit(ctx context.Context, conv, ref string, m channels.Outgoing) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.Lim.Edit {
		return channels.ErrUnsupported
	}
	if err := p.nextFail(); err != nil {
		return err
	}
	for _, msg := range p.msgs {
		if msg.Ref == ref && msg.Conv == conv {
			msg.Text, msg.Prompt = m.Text, m.Prompt
			msg.Edits++
			return nil
		}
	}
	return channels.Permanent(fmt.Errorf("fake: no message %s in %s", ref, conv))
}

// Messages returns a copy of what a conversation shows.
func (p *Platform) Messages(conv string) []Msg {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Msg
	for _, m := range p.msgs {
		if m.Conv == conv {
			out = append(out, *m)
		}
	}
	return out
}

// Sends counts Send calls.
func (p *Platform) Sends() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sends
}

// Ack returns an Action.Ack that records the notice.
func (p *Platform) Ack() func(context.Context, string) {
	return func(_ context.Context, notice string) {
		p.mu.Lock()
		p.acks = append(p.acks, notice)
		p.mu.Unlock()
	}
}

// Acks returns the notices given to presses.
func (p *Platform) Acks() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.acks...)
}

// FinderPlatform is the fake with history search.
type FinderPlatform struct{ *Platform }

var _ channels.Finder = FinderPlatform{}

// Find looks a key up in the conversation's history.
func (f FinderPlatform) Find(ctx context.Context, conv, key string) (string, bool, error) {
	p := f.Platform
	p.mu.Lock()
	p.finds++
	defer p.mu.Unlock()
	if m, ok := p.byKey[key]; ok && m.Conv == conv {
		return m.Ref, true, nil
	}
	return "", false, nil
}

// WaitFor polls cond until it holds or five seconds pass.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// FindText returns the first message of conv containing s.
func (p *Platform) FindText(conv, s string) (Msg, bool) {
	for _, m := range p.Messages(conv) {
		if strings.Contains(m.Text, s) {
			return m, true
		}
	}
	return Msg{}, false
}

// Finds counts history searches.
func (p *Platform) Finds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.finds
}

// SendVoice records an audio message (spoken replies).
func (p *Platform) SendVoice(ctx context.Context, conv string, audio []byte, mime string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.nextFail(); err != nil {
		return err
	}
	p.voices = append(p.voices, conv+" "+mime+" "+string(audio))
	return nil
}

// Voices returns the audio messages sent, as "CONV MIME AUDIO".
func (p *Platform) Voices() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.voices...)
}

// File is an attachment serving data the way a platform would: at most
// limit+1 bytes, so the relay sees an oversized file without holding it.
// Each fetch adds one to fetched when it is not nil.
func File(name, mime string, data []byte, fetched *atomic.Int32) channels.Attachment {
	return channels.Attachment{Name: name, Mime: mime, Size: int64(len(data)), Fetch: func(ctx context.Context, limit int64) ([]byte, error) {
		if fetched != nil {
			fetched.Add(1)
		}
		if int64(len(data)) > limit {
			return data[:limit+1], nil
		}
		return data, nil
	}}
}
