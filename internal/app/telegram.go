package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/telegram"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/speech"
	"github.com/hestia-dev/hestia/internal/store"
)

// initTelegram starts the Telegram channel when a bot token is configured.
// It drives the same agent, approval broker, event bus and audit log as
// the web app, so channel turns are counted, audited and budgeted alike.
func (a *App) initTelegram(ctx context.Context) error {
	cfg := a.Config.Telegram
	if !cfg.Enabled() || a.Server == nil || a.core.agent == nil {
		return nil
	}
	token, err := telegramToken(cfg)
	var users map[int64][]devices.Scope
	if err == nil {
		users, err = telegramUsers(cfg)
	}
	if err != nil {
		// Like the other channels: the daemon runs on, and doctor and the
		// Settings connection test say why Telegram does not.
		a.channelDown("telegram", "Telegram", err)
		return nil
	}
	db, err := a.OpenStore(ctx, telegram.Schema)
	if err != nil {
		return err
	}
	chst, err := a.channelStore(ctx)
	if err != nil {
		return err
	}
	core := a.core
	svc, err := a.speechService()
	if err != nil {
		return err
	}
	var tr channels.Transcriber
	if m := svc.For("telegram", "voice"); m != nil {
		tr = m
	}
	var sp channels.Speaker
	if m := svc.SpeakerFor("telegram", "speak"); m != nil {
		sp = m
	}
	api := telegram.NewClient(cfg.APIURL, token)
	tgStore := telegram.NewStore(db)
	bot := telegram.New(telegram.Config{
		Owner: cfg.OwnerID, Users: users, PollTimeout: cfg.PollTimeout.D(), EditInterval: cfg.EditInterval.D(),
		PublicURL: cfg.PublicURL, MaxVoiceBytes: int64(cfg.MaxVoiceMB) << 20,
		WebhookURL: cfg.WebhookURL, VoiceReplies: cfg.VoiceReplies,
		InboxDir: a.Paths.InboxDir(), MaxFileBytes: a.channelFileLimit(), MaxMessageBytes: int64(a.Config.Channels.MaxMessageMB) << 20,
	}, telegram.Deps{
		API: api, Store: tgStore, Channels: chst,
		Agent: channelAgent{core.agent}, Chats: tgChats{core}, Approvals: core.approvals, Bus: core.bus,
		Audit: func(ctx context.Context, typ, chatID, summary string, data any) {
			core.audit.Record(ctx, audit.Entry{Type: typ, ChatID: chatID, Summary: summary, Data: data})
		},
		Transcriber: tr, Speaker: sp,
		Log: a.Log.With("component", "telegram"), Clock: a.Now,
	})
	if err := bot.ImportChats(ctx, tgStore, chst); err != nil {
		a.Log.Warn("carrying telegram chats over to channels.db", "err", err)
	}
	if a.Devices != nil {
		a.Devices.AddSource(bot.Devices)
	}
	// The route exists in both modes; while polling it answers 503.
	a.Server.HandlePublic("POST "+telegram.WebhookPath, bot.WebhookHandler())
	a.AddWorker("telegram", bot.Run)
	mode := "long polling"
	if cfg.WebhookURL != "" {
		mode = "webhook at " + cfg.WebhookURL
	}
	a.channelRuns.add("telegram", channelRun{label: "Telegram", checker: bot, relay: bot.Relay})
	a.AddCheck(doctor.Check{Name: "telegram", Run: func(ctx context.Context) (doctor.Status, string) {
		st, msg := channelHealth(ctx, chst, "telegram", len(users), bot)
		return st, msg + " (" + mode + ")"
	}})
	return nil
}

func telegramToken(cfg config.TelegramConfig) (string, error) {
	if cfg.Token != "" {
		return strings.TrimSpace(cfg.Token), nil
	}
	info, err := os.Stat(cfg.TokenFile)
	if err != nil {
		return "", fmt.Errorf("telegram.token_file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("telegram.token_file %s is readable by other users; run chmod 600 on it", cfg.TokenFile)
	}
	b, err := os.ReadFile(cfg.TokenFile)
	if err != nil {
		return "", fmt.Errorf("telegram.token_file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("telegram.token_file is empty")
	}
	return tok, nil
}

// telegramUsers is the allow-list: the owner may chat, approve and read;
// contacts get the scopes written beside their id.
func telegramUsers(cfg config.TelegramConfig) (map[int64][]devices.Scope, error) {
	users := map[int64][]devices.Scope{cfg.OwnerID: {devices.Chat, devices.Approve, devices.Read}}
	for _, c := range cfg.Contacts {
		id, names, err := config.ParseTelegramContact(c)
		if err != nil {
			return nil, err
		}
		if id == cfg.OwnerID {
			continue
		}
		scopes, err := devices.ParseScopes(names)
		if err != nil {
			return nil, err
		}
		users[id] = scopes
	}
	return users, nil
}

type tgChats struct{ core agentCore }

func (t tgChats) Create(ctx context.Context, title string) (string, error) {
	c, err := t.core.chats.Create(ctx, title)
	if err != nil {
		return "", err
	}
	t.core.bus.Publish("chat.created", c.ID, map[string]any{"chat": c})
	return c.ID, nil
}

func (t tgChats) Exists(ctx context.Context, id string) (bool, error) {
	_, err := t.core.chats.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// speechService is the stt tier behind usage metering (speech.go).
func (a *App) speechService() (*speech.Service, error) {
	stt, err := speech.FromConfig(a.Config.LLM, "stt")
	if err != nil {
		return nil, err
	}
	tts, err := speech.FromConfig(a.Config.LLM, "tts")
	if err != nil {
		return nil, err
	}
	svc := &speech.Service{STT: stt, TTS: tts, Now: a.Now}
	if tts == nil {
		// Zero-configuration local speech: espeak-ng where it is installed
		// (Read aloud, voice mode, spoken channel replies).
		svc.Local = speech.FindEspeak()
	}
	if a.Usage != nil {
		svc.Usage = a.Usage
	}
	return svc, nil
}

// initSpeech serves POST /v1/audio/transcriptions (the web app's voice
// recorder and local programs), metered like the rest of the gateway.
func (a *App) initSpeech(ctx context.Context) error {
	svc, err := a.speechService()
	if err != nil || a.Server == nil {
		return err
	}
	svc.Routes(a.Server.API())
	return nil
}
