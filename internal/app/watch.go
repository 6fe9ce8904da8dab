package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/heldcall"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/untrusted"
	"github.com/hestia-dev/hestia/internal/watch"
)

// initWatch runs the watch engine in the daemon: its tools join the
// agent's registry, its routes are served, a fired event is composed by
// the model (or its fallback text), appended to the originating chat and
// notified. Calls outside a rule's grants become approvals that wait for
// the user.
func (a *App) initWatch(ctx context.Context) error {
	if a.Server == nil || a.core.agent == nil {
		return nil
	}
	c := a.core
	cfg := a.Config.Watch
	adapters := []watch.Adapter{
		&watch.TrainAdapter{BaseURL: cfg.TrainBaseURL, Now: a.Now},
		&watch.URLAdapter{AllowPrivate: cfg.URLAllowPrivate},
		watch.FileAdapter{Check: func(p string) error {
			if c.paths == nil {
				return nil
			}
			_, err := c.paths.Resolve(p)
			return err
		}},
	}
	// Mail watches read the mirror through their own handle; a new
	// message dated over two weeks ago is a backfill, not new mail.
	ms, err := a.OpenMailStore(ctx)
	if err != nil {
		return err
	}
	adapters = append(adapters, &watch.MailAdapter{Store: ms, Now: a.Now, MaxAge: 14 * 24 * time.Hour})
	e, err := watch.Open(ctx, a.Paths.DB(watch.Schema.Name), watch.Options{
		Log: a.Log.With("component", "watch"), Now: a.Now, Tools: c.tools, Authority: c.auth, Adapters: adapters, Interval: cfg.Interval.D(),
	})
	if err != nil {
		return err
	}
	a.OnClose(e.Close)
	a.Watches = e
	for _, t := range watch.Tools(e) {
		if err := c.tools.Register(t); err != nil {
			return err
		}
	}
	e.SetReactor(a.composeWatchMessage, a.deliverWatchMessage, a.gateWatchCall)
	e.Routes(a.Server.API())
	a.AddWorker("watch", e.Run)
	return nil
}

const watchSystem = `You are Hestia, the user's assistant, handling an event from a watch the user set up earlier. Nobody is chatting right now.
Write the message the user should get: at most two short sentences, in the user's language, stating what happened. If the user's instruction asks for an action on this event and one of the offered tools fits, call it with exactly the arguments the instruction implies; those tools run without asking only within the limits the user approved. Never invent facts beyond the event.
`

// composeWatchMessage asks the model for the message, offering only the
// tools the matched rules grant. Event data comes from outside (a train
// feed, a web page, mail) and reaches the model wrapped as untrusted.
func (a *App) composeWatchMessage(ctx context.Context, d watch.Delivery, call watch.CallFunc) (string, error) {
	if a.Chat == nil {
		return "", errors.New("no model configured")
	}
	b, err := untrusted.NewBoundary(nil)
	if err != nil {
		return "", err
	}
	data, _ := json.Marshal(d.Event.Data)
	wrapped, _ := b.Wrap("watch:"+d.Watch.Source, string(data))
	user := fmt.Sprintf("The user's instruction when creating the watch: %q\nWatched: %s %s\nEvent: %s\nFallback text: %s\nEvent data:\n%s",
		d.Watch.Instruction, d.Watch.Source, d.Watch.Ref, d.Event.Type, d.Event.Text, wrapped)
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: watchSystem + untrusted.SystemNote}, {Role: llm.RoleUser, Content: user}}
	var defs []llm.ToolDef
	seen := map[string]bool{}
	for _, g := range d.Grants() {
		if seen[g.Tool] {
			continue
		}
		seen[g.Tool] = true
		if t, err := a.core.tools.Get(g.Tool); err == nil {
			s := t.Spec()
			defs = append(defs, llm.ToolDef{Name: s.Name, Description: s.Description, Parameters: s.Schema})
		}
	}
	for step := 0; step < 4; step++ {
		req := llm.Request{Tier: llm.Tier(a.Config.Agent.Tier), Messages: msgs, Tools: defs, MaxTokens: 600, Service: "watch", Action: "event"}
		if step == 3 {
			req.Tools = nil
		}
		res, err := a.Chat.Complete(ctx, req)
		if err != nil {
			return "", err
		}
		if len(res.ToolCalls) == 0 {
			return strings.TrimSpace(res.Text), nil
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: res.Text, ToolCalls: res.ToolCalls})
		for _, tc := range res.ToolCalls {
			out, err := call(ctx, tc.Name, tc.Arguments)
			if err != nil {
				return "", err
			}
			b, _ := json.Marshal(out)
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: string(b)})
		}
	}
	return "", errors.New("the model kept calling tools")
}

// deliverWatchMessage appends the message to the watch's chat (a new
// "Watches" chat when it was deleted) and sends it where the watch says
// (inbox and push by default, Telegram when chosen).
func (a *App) deliverWatchMessage(ctx context.Context, d watch.Delivery, msg string) error {
	c := a.core
	chatID := d.Watch.ChatID
	if chatID != "" {
		if _, err := c.chats.Get(ctx, chatID); errors.Is(err, store.ErrNotFound) {
			chatID = ""
		} else if err != nil {
			return err
		}
	}
	if chatID == "" {
		ch, err := c.chats.Create(ctx, "Watches")
		if err != nil {
			return err
		}
		c.bus.Publish("chat.created", ch.ID, map[string]any{"chat": ch})
		chatID = ch.ID
	}
	// The message was composed from the event's outside data (or is the
	// adapter's text about it): the next turn in this chat is tainted by
	// it, so a mail quoted here cannot steer a write without a card.
	m := &chat.Message{Role: "assistant", Content: msg, Provenance: []taint.Source{watch.EventSource(d, a.Now())}}
	if err := c.chats.Append(ctx, chatID, m); err != nil {
		return fmt.Errorf("appending the watch message: %w", err)
	}
	c.bus.Publish("watch.fired", chatID, map[string]any{"watch_id": d.Watch.ID, "event": d.Event.Type, "message": m})
	via := d.Watch.Deliver
	if len(via) == 0 {
		via = notify.DefaultDeliver()
	}
	if via[0] != notify.DeliverNone {
		// The notification carries the whole message (notify clips it);
		// Telegram gets it in full.
		a.deliverResult(ctx, via, notify.Notification{Kind: notify.KindWatch, Key: fmt.Sprintf("watch-event:%d", d.Event.ID),
			Title: "Watch: " + d.Event.Type, Body: msg, URL: chatURL(chatID), ChatID: chatID})
	}
	return nil
}

// gateWatchCall turns a call outside the grants into a held call (the
// durable queue, heldcalls.go): its approval waits for the user with no
// expiry, is asked again after a restart, and approved it runs once. The
// key is the event, the tool and the exact arguments, so a retried
// delivery asks nothing new.
func (a *App) gateWatchCall(ctx context.Context, d watch.Delivery, name string, args json.RawMessage, reason string) {
	c := a.core
	if c.held == nil {
		return
	}
	sum := sha256.Sum256(args)
	key := fmt.Sprintf("watch:%s:%d:%s:%s", d.Watch.ID, d.Event.ID, name, hex.EncodeToString(sum[:8]))
	if _, err := c.held.Hold(ctx, heldcall.Call{Key: key, Origin: "watch:" + d.Watch.ID, ChatID: d.Watch.ChatID, Tool: name, Args: args,
		Reason: "watch " + d.Watch.ID + ": " + reason,
		// The model proposed it after reading the event, outside content.
		TaintedBy: []taint.Source{watch.EventSource(d, a.Now())}}); err != nil {
		a.Log.Warn("watchGate", "tool", name, "err", err)
		return
	}
	c.held.Adopt(key)
}
