package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/scheduler"
	"github.com/hestia-dev/hestia/internal/watch"
)

// A user job's successful run reaches the inbox with its answer (before,
// only failures were notified), and the run journals the answer as its
// result; a job set to deliver nowhere leaves the inbox alone.
func TestJobSuccessReachesInbox(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t, llmtest.Text("You have two meetings today."), llmtest.Text("Quiet day."))
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	_, stop := start(t, a)
	defer stop()
	ctx := context.Background()
	every := scheduler.Schedule{Every: scheduler.Duration(24 * time.Hour)}
	if _, err := a.Jobs.Add(ctx, scheduler.UserJob{Name: "brief", Schedule: every, Prompt: "brief me"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Jobs.Add(ctx, scheduler.UserJob{Name: "silent", Schedule: every, Prompt: "check", Deliver: []string{"none"}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"brief", "silent"} {
		if _, err := a.Jobs.RunNow(ctx, n); err != nil {
			t.Fatal(err)
		}
		a.Jobs.Wait()
	}
	h, err := a.Jobs.History(ctx, "brief", 1)
	if err != nil || len(h) != 1 || h[0].Status != scheduler.StatusOK || h[0].Result != "You have two meetings today." {
		t.Fatalf("brief's run = %+v, %v", h, err)
	}
	box, err := a.Notify.List(ctx, false, 50)
	if err != nil {
		t.Fatal(err)
	}
	var got []notify.Notification
	for _, x := range box.Notifications {
		if x.Kind == notify.KindJob {
			got = append(got, x)
		}
	}
	if len(got) != 1 || got[0].Title != "Job brief" || got[0].Body != "You have two meetings today." || got[0].ReadAt != nil || got[0].PushState == notify.PushSuppressed {
		t.Fatalf("job notifications = %+v", got)
	}
}

// A watch whose delivery names Telegram sends its message to the owner's
// chat on the fake Bot API, and (not naming the inbox) stores no
// notification.
func TestWatchMessageReachesTelegram(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	target := filepath.Join(files, "report.txt")
	if err := os.WriteFile(target, []byte("v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := llmtest.New(t, llmtest.Text("Your report changed."))
	tg := tgtest.New(t)
	a := telegramApp(t, up, tg, files)
	a.Config.Watch.Interval = config.Duration(time.Hour) // passes only when kicked
	_, stop := start(t, a)
	defer stop()
	ctx := context.Background()
	w, err := a.Watches.Create(ctx, watch.Spec{Source: "file", Ref: target, Instruction: "tell me when the report changes",
		ExpiresAt: time.Now().Add(time.Hour), Rules: []watch.Rule{{Event: "file.changed"}}, Deliver: []string{"telegram"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(w.Deliver, ",") != "telegram" {
		t.Fatalf("stored deliver = %q", w.Deliver)
	}
	if err := os.WriteFile(target, []byte("v2, longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Watches.Kick()
	tgtest.WaitFor(t, "the watch message in the owner's chat", func() bool {
		_, ok := lastWith(tg, tgOwner, "Your report changed.")
		return ok
	})
	m, _ := lastWith(tg, tgOwner, "Your report changed.")
	if !strings.Contains(m.Text, "<b>Watch: file.changed</b>") {
		t.Errorf("telegram message = %q", m.Text)
	}
	box, err := a.Notify.List(ctx, false, 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range box.Notifications {
		if x.Kind == notify.KindWatch {
			t.Errorf("telegram-only watch stored a notification: %+v", x)
		}
	}
}
