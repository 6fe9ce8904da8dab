package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/doctor"
)

// channelBuilder is one configured messaging channel: its identity
// settings and how to build its platform adapter.
type channelBuilder struct {
	key      string // config section, "channels.slack"
	label    string // "Slack"
	enabled  bool
	owners   []string
	contacts []string
	build    func(ctx context.Context) (channels.Platform, error)
}

// channelBuilders lists the channels beside Telegram; each channel adds
// its entry here and its adapter construction in its own file.
func (a *App) channelBuilders() []channelBuilder {
	list := []channelBuilder{
		a.whatsappChannel(),
		a.slackChannel(),
		a.matrixChannel(),
		a.discordChannel(),
		a.signalChannel(),
		a.emailChannel(),
	}
	return append(list, a.extraChannels...)
}

// initChannels starts every configured channel on the shared relay: the
// same agent, approval broker, event bus and audit log as the web app, so
// channel turns are counted, audited and budgeted alike, and their tool
// calls go through the authority with the channel origin.
func (a *App) initChannels(ctx context.Context) error {
	if a.Server == nil || a.core.agent == nil {
		return nil
	}
	for _, b := range a.channelBuilders() {
		if !b.enabled {
			continue
		}
		users, err := channelUsers(b.key, b.owners, b.contacts)
		if err != nil {
			return err
		}
		p, err := b.build(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", b.key, err)
		}
		st, err := a.channelStore(ctx)
		if err != nil {
			return err
		}
		if err := a.startChannel(ctx, b, p, st, users); err != nil {
			return err
		}
	}
	return nil
}

func (a *App) startChannel(ctx context.Context, b channelBuilder, p channels.Platform, st *channels.Store, users map[string][]devices.Scope) error {
	core := a.core
	var tr channels.Transcriber
	if svc, err := a.speechService(); err != nil {
		return err
	} else if m := svc.For(p.Kind(), "voice"); m != nil {
		tr = m
	}
	relay := channels.New(channels.Config{
		Label: b.label, Users: users, Owners: b.owners, PublicURL: a.Config.Telegram.PublicURL,
	}, channels.Deps{
		Platform: p, Store: st, Agent: channelAgent{core.agent}, Chats: tgChats{core}, Approvals: core.approvals, Bus: core.bus,
		Audit: func(ctx context.Context, typ, chatID, summary string, data any) {
			core.audit.Record(ctx, audit.Entry{Type: typ, ChatID: chatID, Summary: summary, Data: data})
		},
		Transcriber: tr, Log: a.Log.With("component", "channel", "channel", p.Name()), Clock: a.Now,
	})
	if a.Devices != nil {
		a.Devices.AddSource(relay.Devices)
	}
	if r, ok := p.(channels.Router); ok {
		for _, rt := range r.Routes() {
			a.Server.HandlePublic(rt.Pattern, rt.Handler)
		}
	}
	a.AddWorker("channel "+p.Name(), relay.Run)
	a.AddCheck(doctor.Check{Name: "channel " + p.Name(), Run: func(ctx context.Context) (doctor.Status, string) {
		return channelHealth(ctx, st, p.Name(), len(users))
	}})
	return nil
}

// channelStore opens channels.db once for every channel.
func (a *App) channelStore(ctx context.Context) (*channels.Store, error) {
	if a.channelsDB != nil {
		return a.channelsDB, nil
	}
	db, err := a.OpenStore(ctx, channels.Schema)
	if err != nil {
		return nil, err
	}
	a.channelsDB = channels.NewStore(db, a.Now)
	return a.channelsDB, nil
}

// channelHealth reports the outbox: messages waiting or given up on are
// what a user would otherwise never learn about.
func channelHealth(ctx context.Context, st *channels.Store, name string, users int) (doctor.Status, string) {
	items, err := st.Outbox(ctx, name, 200)
	if err != nil {
		return doctor.Fail, err.Error()
	}
	waiting, failed := 0, 0
	last := ""
	for _, it := range items {
		switch it.State {
		case "pending", "sending":
			waiting++
			if last == "" {
				last = it.Error
			}
		case "failed":
			failed++
		}
	}
	msg := fmt.Sprintf("%d allowed identit(ies); outbox: %d waiting, %d given up (of the last %d)", users, waiting, failed, len(items))
	if waiting > 0 && last != "" {
		return doctor.Warn, msg + "; last error: " + last
	}
	if failed > 0 {
		return doctor.Warn, msg
	}
	return doctor.OK, msg
}

// channelUsers is a channel's allow-list: owners may chat, approve and
// read; contacts get the scopes written beside their id.
func channelUsers(key string, owners, contacts []string) (map[string][]devices.Scope, error) {
	users := map[string][]devices.Scope{}
	for _, o := range owners {
		users[strings.TrimSpace(o)] = []devices.Scope{devices.Chat, devices.Approve, devices.Read}
	}
	for _, c := range contacts {
		id, names, err := config.ParseChannelContact(c)
		if err != nil {
			return nil, fmt.Errorf("%s.contacts: %w", key, err)
		}
		if _, isOwner := users[id]; isOwner {
			continue
		}
		scopes, err := devices.ParseScopes(names)
		if err != nil {
			return nil, fmt.Errorf("%s.contacts: %w", key, err)
		}
		users[id] = scopes
	}
	return users, nil
}

// readSecret returns an inline secret or the content of an owner-only
// file; key names the setting in errors.
func readSecret(key, inline, file string) (string, error) {
	if inline != "" {
		return strings.TrimSpace(inline), nil
	}
	if file == "" {
		return "", fmt.Errorf("%s is not set", key)
	}
	info, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("%s_file: %w", key, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s_file %s is readable by other users; run chmod 600 on it", key, file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s_file: %w", key, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errors.New(key + "_file is empty")
	}
	return s, nil
}

// channelAgent starts channel turns with the channel origin.
type channelAgent struct{ ag *agent.Agent }

func (c channelAgent) Submit(ctx context.Context, chatID, text string, o channels.Submit) error {
	_, err := c.ag.Submit(ctx, chatID, text, agent.Options{Kind: authority.Channel, OriginLabel: o.Label, Provenance: o.Provenance})
	return err
}
