package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/authority"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/heldcall"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/scheduler"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

// agentCore is what initAgent builds and the background plane (user jobs,
// the Action Center, watches) drives: it is set only when serving.
type agentCore struct {
	agent     *agent.Agent
	chats     *chat.Store
	bus       *events.Bus
	tools     *tools.Registry
	approvals *approval.Broker
	policy    *policy.Engine
	audit     *audit.Log
	paths     *pathpolicy.Policy
	held      *heldcall.Queue // background calls waiting for the user, durable
	auth      *authority.Authority
}

// initScheduler opens the scheduler before the domains that register
// built-in jobs with it (a.schedule). Only the daemon runs it.
func (a *App) initScheduler(ctx context.Context) error {
	if a.Server == nil {
		return nil
	}
	s, err := scheduler.Open(ctx, a.Paths.DB(scheduler.Schema.Name), scheduler.Options{
		Log: a.Log.With("component", "scheduler"), Now: a.Now,
		OnRunEnd: func(r scheduler.Run) {
			if a.core.bus == nil {
				return
			}
			j, err := a.Jobs.Get(context.Background(), r.Job)
			if err != nil { // removed during its run
				a.core.bus.Publish("job.finished", "", map[string]any{"run": r, "builtin": false})
				return
			}
			// A failing built-in job (an IMAP server down overnight) is
			// notified once a day, not once a run (notify.go); a user
			// job's result goes where the user chose (deliverJobResult).
			a.core.bus.Publish("job.finished", "", map[string]any{"run": r, "builtin": j.Builtin})
			a.deliverJobResult(j, r)
		},
	})
	if err != nil {
		return err
	}
	a.OnClose(s.Close)
	a.Jobs = s
	s.Routes(a.Server.API())
	a.consentRoutes(a.Server.API())
	a.AddWorker("scheduler", s.Run)
	return nil
}

// schedule registers a built-in job when the scheduler runs (the daemon)
// and is a no-op otherwise.
func (a *App) schedule(ctx context.Context, d scheduler.Def) error {
	if a.Jobs == nil {
		return nil
	}
	return a.Jobs.Register(ctx, d)
}

// initUserJobs lets user jobs run: each is a turn in the job's own chat,
// submitted as a background turn so its gated calls wait for the user
// (no approval timeout) instead of being denied.
func (a *App) initUserJobs(ctx context.Context) error {
	if a.Jobs == nil || a.core.agent == nil {
		return nil
	}
	a.Jobs.SetPromptRunner(a.runJobPrompt)
	return nil
}

func (a *App) runJobPrompt(ctx context.Context, j scheduler.Job) (string, error) {
	c := a.core
	chatID := j.ChatID
	if chatID != "" {
		if _, err := c.chats.Get(ctx, chatID); errors.Is(err, store.ErrNotFound) {
			chatID = "" // the user deleted the job's chat: start a new one
		} else if err != nil {
			return "", err
		}
	}
	if chatID == "" {
		ch, err := c.chats.Create(ctx, "Job: "+j.Name)
		if err != nil {
			return "", fmt.Errorf("creating the chat of job %s: %w", j.Name, err)
		}
		c.bus.Publish("chat.created", ch.ID, map[string]any{"chat": ch})
		chatID = ch.ID
		if err := a.Jobs.SetChat(ctx, j.Name, chatID); err != nil {
			a.Log.Warn("jobChat", "job", j.Name, "err", err)
		}
	}
	text := fmt.Sprintf("[Scheduled job %q, %s, run at %s]\n%s", j.Name, j.Schedule, a.Now().Format(time.RFC1123), j.Prompt)
	t, err := c.agent.Submit(ctx, chatID, text, agent.Options{NoInterrupt: true, Background: true, Origin: "job:" + j.Name})
	if err != nil {
		return chatID, fmt.Errorf("starting the turn of job %s: %w", j.Name, err)
	}
	res := t.Wait(ctx)
	// The final assistant text is the run's result, delivered to the user
	// and printed by `hestia jobs run --wait`.
	scheduler.SetResult(ctx, res.Text)
	if !res.OK {
		msg := "the turn did not finish"
		if res.Error != nil {
			msg = res.Error.Code + ": " + res.Error.Message
		}
		return chatID, errors.New(msg)
	}
	return chatID, nil
}

// deliverJobResult sends a finished run's result where the job says:
// a user job's successes and failures by default to the inbox and push; a
// built-in job only when the user chose channels for it (its failures are
// notified once a day anyway, so those only go to Telegram here).
func (a *App) deliverJobResult(j scheduler.Job, r scheduler.Run) {
	if r.Status == scheduler.StatusSkipped || r.Status == scheduler.StatusInterrupted {
		return
	}
	via := j.Deliver
	if len(via) == 0 && !j.Builtin {
		via = notify.DefaultDeliver()
	}
	failed := r.Status != scheduler.StatusOK
	if j.Builtin && failed {
		via = slices.DeleteFunc(slices.Clone(via), func(c string) bool { return c == notify.DeliverInbox || c == notify.DeliverPush })
	}
	if len(via) == 0 || via[0] == notify.DeliverNone {
		return
	}
	title, body := "Job "+j.Name, r.Result
	if failed {
		title = fmt.Sprintf("Job %s %s", j.Name, r.Status)
		if body == "" {
			body = r.Error
		} else if r.Error != "" {
			body += "\n\n" + r.Error
		}
	} else if body == "" {
		body = "Finished."
	}
	// A result opens in the job's chat; a failure on the Jobs page, where
	// the run history and its error are.
	url := "/jobs"
	if !failed && !j.Builtin && j.ChatID != "" {
		url = chatURL(j.ChatID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a.deliverResult(ctx, via, notify.Notification{Kind: notify.KindJob, Key: fmt.Sprintf("job-run:%d", r.ID), Title: title, Body: body, URL: url, ChatID: j.ChatID})
}

// deliverResult hands a job's or watch's result to the chosen channels.
// A channel that fails is logged and does not stop the others: the result
// stays in the job's journal or the watch's chat either way.
func (a *App) deliverResult(ctx context.Context, via []string, x notify.Notification) {
	inbox, push := slices.Contains(via, notify.DeliverInbox), slices.Contains(via, notify.DeliverPush)
	if a.Notify != nil && (inbox || push) {
		if _, err := a.Notify.Deliver(ctx, x, inbox, push); err != nil {
			a.Log.Warn("deliverNotify", "key", x.Key, "err", err)
		}
	}
	if slices.Contains(via, notify.DeliverCall) {
		if err := a.deliverCall(ctx, x); err != nil {
			a.Log.Warn("deliverCall", "key", x.Key, "err", err)
		}
	}
	for _, c := range via {
		if notify.IsChannel(c) {
			if err := a.deliverChannel(ctx, c, x); err != nil {
				a.Log.Warn("deliverChannel", "channel", c, "key", x.Key, "err", err)
			}
		}
	}
	if slices.Contains(via, notify.DeliverTelegram) {
		if err := a.deliverChannel(ctx, "telegram", x); err != nil {
			a.Log.Warn("deliverTelegram", "key", x.Key, "err", err)
		}
	}
}
