package app

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/scheduler"
)

// initNotify opens the notification inbox, serves its API, runs the push
// deliverer, and turns bus events (an approval waiting, a failed job, a
// budget warning; actions and watches notify directly) into notifications.
func (a *App) initNotify(ctx context.Context) error {
	if a.Server == nil || a.core.bus == nil {
		return nil
	}
	bus := a.core.bus
	n, err := notify.Open(ctx, a.Paths.DB(notify.Schema.Name), notify.Options{
		Log: a.Log.With("component", "notify"), Now: a.Now,
		OnNew: func(x notify.Notification) {
			bus.Publish("notification.created", x.ChatID, map[string]any{"notification": x})
		},
	})
	if err != nil {
		return err
	}
	a.OnClose(n.Close)
	a.Notify = n
	n.Routes(a.Server.API())
	a.AddWorker("notify.push", n.Run)
	a.AddWorker("notify.events", func(ctx context.Context) error { return a.notifyFromEvents(ctx, bus, n) })
	return nil
}

func chatURL(id string) string {
	if id == "" {
		return "/"
	}
	return "/c/" + url.PathEscape(id)
}

// notifyFromEvents follows the bus. A shed subscription (the bus dropped us
// as slow) is renewed; what was missed meanwhile is not notified.
func (a *App) notifyFromEvents(ctx context.Context, bus *events.Bus, n *notify.Notifier) error {
	for ctx.Err() == nil {
		sub := bus.Subscribe(events.SubscribeOptions{})
		func() {
			defer sub.Close()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-sub.C():
					if !ok {
						return
					}
					if key, ok := settledKey(ev); ok {
						if err := n.MarkReadKey(ctx, key); err != nil && ctx.Err() == nil {
							a.Log.Warn("notifyEvent", "type", ev.Type, "err", err)
						}
					}
					if x, ok := notificationFor(ev); ok {
						if _, err := n.Notify(ctx, x); err != nil && ctx.Err() == nil {
							a.Log.Warn("notifyEvent", "type", ev.Type, "err", err)
						}
					}
				}
			}
		}()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// settledKey names the notification an event settles: a decided approval or
// question (in the chat, the CLI, Telegram or by timeout) is no longer "new"
// in the inbox.
func settledKey(ev *events.Event) (string, bool) {
	data, _ := ev.Data.(map[string]any)
	if ev.Type != "approval.resolved" {
		return "", false
	}
	id, _ := data["id"].(string)
	return "approval:" + id, id != ""
}

// notificationFor maps a bus event to a notification, if it deserves one.
func notificationFor(ev *events.Event) (notify.Notification, bool) {
	data, _ := ev.Data.(map[string]any)
	switch ev.Type {
	case "approval.requested":
		r, ok := data["approval"].(approval.Request)
		if !ok {
			return notify.Notification{}, false
		}
		title := "Approval needed: " + r.Tool
		body := r.Preview
		if r.Kind == approval.KindQuestion {
			title, body = "Hestia has a question", r.Question
		}
		return notify.Notification{Kind: notify.KindApproval, Key: "approval:" + r.ID, Title: title, Body: body, URL: chatURL(r.ChatID), ChatID: r.ChatID}, true
	case "job.finished":
		r, ok := data["run"].(scheduler.Run)
		if !ok || r.Status == scheduler.StatusOK || r.Status == scheduler.StatusSkipped || r.Status == scheduler.StatusInterrupted {
			return notify.Notification{}, false
		}
		if b, _ := data["builtin"].(bool); !b {
			return notify.Notification{}, false // a user job's result is delivered where it says (jobs.go)
		}
		key := fmt.Sprintf("job-run:%d", r.ID)
		if b, _ := data["builtin"].(bool); b {
			key = "job-failed:" + r.Job + ":" + ev.TS.Format("2006-01-02")
		}
		return notify.Notification{Kind: notify.KindJob, Key: key, Title: "Job " + r.Job + " " + r.Status, Body: r.Error, URL: "/jobs"}, true
	case "budget.warning", "budget.exceeded":
		title := "Model budget at 80%"
		if ev.Type == "budget.exceeded" {
			title = "Model budget exhausted: background model calls stopped"
		}
		// One per kind per day is plenty.
		return notify.Notification{Kind: notify.KindBudget, Key: ev.Type + ":" + ev.TS.Format("2006-01-02"), Title: title, URL: "/usage"}, true
	}
	return notify.Notification{}, false
}
