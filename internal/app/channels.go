package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/store"
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
	if a.Server == nil {
		return nil
	}
	a.Server.API().HandleFunc("POST /api/settings/channels/{name}/test", a.handleChannelTest)
	if a.core.agent == nil {
		return nil
	}
	inbox := a.Config.Telegram.Enabled()
	for _, b := range a.channelBuilders() {
		inbox = inbox || b.enabled
	}
	if inbox {
		a.AddCheck(a.inboxCheck())
	}
	for _, b := range a.channelBuilders() {
		if !b.enabled {
			continue
		}
		users, err := channelUsers(b.key, b.owners, b.contacts)
		var p channels.Platform
		if err == nil {
			if p, err = b.build(ctx); err != nil {
				err = fmt.Errorf("%s: %w", b.key, err)
			}
		}
		if err != nil {
			// One channel that cannot start (an unreadable token file, a
			// bad contact) leaves the daemon and the other channels
			// running; doctor and the Settings connection test say why.
			a.channelDown(strings.TrimPrefix(b.key, "channels."), b.label, err)
			continue
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

// channelRuns are the configured channels by name (Platform.Name, or the
// config section's last part for one that did not start): what the
// Settings connection test checks, or why there is nothing to check.
type channelRuns struct {
	mu     sync.Mutex // guards byName
	byName map[string]channelRun
}

type channelRun struct {
	label   string
	checker channels.Checker // nil when the platform has no connection test
	relay   *channels.Relay  // nil for a channel that did not start
	err     error            // why the channel did not start; nil when running
}

func (r *channelRuns) add(name string, run channelRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = map[string]channelRun{}
	}
	r.byName[name] = run
}

func (r *channelRuns) get(name string) (channelRun, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run, ok := r.byName[name]
	return run, ok
}

// channelDown records a configured channel that did not start: logged,
// failed in doctor, and named by the connection test.
func (a *App) channelDown(name, label string, err error) {
	a.Log.Error("channel not started", "channel", name, "err", err)
	a.channelRuns.add(name, channelRun{label: label, err: err})
	check := "channel " + name
	if name == "telegram" {
		check = "telegram"
	}
	a.AddCheck(doctor.Check{Name: check, Run: func(context.Context) (doctor.Status, string) {
		return doctor.Fail, "not started: " + err.Error()
	}})
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
		InboxDir: a.Paths.InboxDir(), MaxFileBytes: a.channelFileLimit(), MaxMessageBytes: int64(a.Config.Channels.MaxMessageMB) << 20,
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
	ck, _ := p.(channels.Checker)
	a.channelRuns.add(p.Name(), channelRun{label: b.label, checker: ck, relay: relay})
	a.AddCheck(doctor.Check{Name: "channel " + p.Name(), Run: func(ctx context.Context) (doctor.Status, string) {
		return channelHealth(ctx, st, p.Name(), len(users), ck)
	}})
	return nil
}

// channelFileLimit is the most one file sent on a channel may weigh.
func (a *App) channelFileLimit() int64 { return int64(a.Config.Channels.MaxFileMB) << 20 }

// inboxCheck reports how much the files received on channels take: they
// are the user's and never deleted by Hestia, so the doctor is where a
// growing inbox shows. It warns past a gigabyte.
func (a *App) inboxCheck() doctor.Check {
	dir := a.Paths.InboxDir()
	return doctor.Check{Name: "channels.inbox", Run: func(ctx context.Context) (doctor.Status, string) {
		files, size, err := channels.InboxUsage(dir)
		if err != nil {
			return doctor.Warn, err.Error()
		}
		msg := fmt.Sprintf("%d file(s), %s received on channels in %s (kept; delete what you no longer need)", files, channels.HumanSize(size), dir)
		if size > 1<<30 {
			return doctor.Warn, msg
		}
		return doctor.OK, msg
	}}
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

// doctorCheckTimeout bounds the connection test inside a doctor check
// when the caller set no deadline; with one, the test gets three quarters
// of the time left, so the outbox figures are still reported on a busy
// machine.
const doctorCheckTimeout = 5 * time.Second

// channelHealth reports whether the platform accepts the channel's
// credentials (its connection test, when it has one) and the outbox:
// messages waiting or given up on are what a user would otherwise never
// learn about.
func channelHealth(ctx context.Context, st *channels.Store, name string, users int, ck channels.Checker) (doctor.Status, string) {
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
	if ck != nil {
		who, err := checkBounded(ctx, ck)
		if err != nil {
			return doctor.Fail, "connection test failed: " + err.Error() + "; " + msg
		}
		msg = "connected as " + who + "; " + msg
	}
	if waiting > 0 && last != "" {
		return doctor.Warn, msg + "; last error: " + last
	}
	if failed > 0 {
		return doctor.Warn, msg
	}
	return doctor.OK, msg
}

// checkBounded runs a connection test within doctorCheckTimeout, or
// within ctx's deadline less a margin for the rest of the report.
func checkBounded(ctx context.Context, ck channels.Checker) (string, error) {
	limit := doctorCheckTimeout
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(dl)*3/4)
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	who, err := ck.Check(cctx)
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		return "", fmt.Errorf("no answer within %s (%w)", limit.Round(100*time.Millisecond), err)
	}
	return who, err
}

// settingsTestTimeout bounds a connection test asked for from Settings:
// an e-mail test logs in twice, over the internet.
const settingsTestTimeout = 20 * time.Second

// channelTestResult is the answer of POST
// /api/settings/channels/{name}/test.
type channelTestResult struct {
	OK    bool   `json:"ok"`
	Who   string `json:"who,omitempty"`
	Error string `json:"error,omitempty"`
}

// handleChannelTest runs the named channel's connection test, proving its
// credentials without sending anything. The route is under /api/settings,
// so it needs the admin scope (internal/devices); a failed test is a 200
// with ok false, and a channel that did not start answers why.
func (a *App) handleChannelTest(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	run, ok := a.channelRuns.get(name)
	if !ok {
		httpjson.Respond(w, r, 0, nil, fmt.Errorf("no channel named %q is on (see [channels] in config.toml): %w", name, store.ErrNotFound))
		return
	}
	var res channelTestResult
	switch {
	case run.err != nil:
		res.Error = "not started: " + run.err.Error()
	case run.checker == nil:
		res.Error = "the " + run.label + " channel has no connection test"
	default:
		ctx, cancel := context.WithTimeout(r.Context(), settingsTestTimeout)
		defer cancel()
		who, err := run.checker.Check(ctx)
		if err != nil {
			res.Error = err.Error()
			if ctx.Err() != nil && r.Context().Err() == nil {
				res.Error = fmt.Sprintf("no answer within %s: %s", settingsTestTimeout, err)
			}
		} else {
			res.OK, res.Who = true, who
		}
	}
	a.Log.Info("channel connection test", "channel", name, "ok", res.OK)
	httpjson.Respond(w, r, http.StatusOK, res, nil)
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

// deliverChannel posts a job's or watch's result in the owner's
// conversation on a channel (deliver = ["slack"], …), through its outbox.
func (a *App) deliverChannel(ctx context.Context, name string, x notify.Notification) error {
	run, ok := a.channelRuns.get(name)
	switch {
	case !ok && name == "telegram":
		return errors.New("telegram is not configured ([telegram] token and owner_id)")
	case !ok:
		return fmt.Errorf("the %s channel is not configured ([channels.%s])", name, name)
	case run.relay == nil:
		return fmt.Errorf("the %s channel did not start: %v", name, run.err)
	}
	return run.relay.NotifyOwner(ctx, x.Key, x.Title, x.Body)
}
