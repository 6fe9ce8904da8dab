package whatsapp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/whatsapp"
	"github.com/hestia-dev/hestia/internal/channels/whatsapp/whatsapptest"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/store"
)

// e2eAgent answers "You said: …" on the bus and, when gate is set, asks
// for an approval first.
type e2eAgent struct {
	bus    *events.Bus
	broker *approval.Broker
	gate   atomic.Bool
	n      atomic.Int32
	writes atomic.Int32
}

func (a *e2eAgent) Submit(ctx context.Context, chatID, text string, o channels.Submit) error {
	turn := fmt.Sprintf("t%d", a.n.Add(1))
	go func() {
		if a.gate.Load() {
			_, d := a.broker.Ask(context.Background(), approval.Request{ChatID: chatID, TurnID: turn, Tool: "write_file", Preview: "write notes.txt", Risk: "medium"}, false)
			if d.Runs() {
				a.writes.Add(1)
			}
		}
		reply := "You said: " + text
		a.bus.Publish("message.delta", chatID, map[string]any{"turn_id": turn, "step": 0, "text": reply})
		a.bus.Publish("turn.finished", chatID, map[string]any{"result": map[string]any{"turn_id": turn, "ok": true, "text": reply}})
	}()
	return nil
}

type e2eChats struct{ n atomic.Int32 }

func (c *e2eChats) Create(ctx context.Context, title string) (string, error) {
	return fmt.Sprintf("c%d", c.n.Add(1)), nil
}
func (c *e2eChats) Exists(ctx context.Context, id string) (bool, error) { return true, nil }

type e2eNotifier struct{ bus *events.Bus }

func (n e2eNotifier) Requested(r approval.Request) {
	n.bus.Publish("approval.requested", r.ChatID, map[string]any{"approval": r})
}
func (n e2eNotifier) Resolved(r approval.Request, d approval.Decision) {
	n.bus.Publish("approval.resolved", r.ChatID, map[string]any{"id": r.ID, "kind": r.Kind, "decision": d.Outcome})
}

// TestEndToEndWithRelay drives the real relay through the adapter and the
// fake Cloud API: a message in and its reply out, an approval decided by
// button and one by request code, a stranger refused.
func TestEndToEndWithRelay(t *testing.T) {
	t.Parallel()
	const owner = "393471234567"
	fake := whatsapptest.New(t)
	a, err := whatsapp.New(whatsapp.Config{
		APIURL: fake.URL, APIVersion: whatsapptest.Version, PhoneNumberID: whatsapptest.PhoneNumberID,
		Token: whatsapptest.Token, AppSecret: whatsapptest.AppSecret, VerifyToken: whatsapptest.VerifyToken, Now: fake.Now,
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, r := range a.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	fake.SetTarget(srv.URL + "/channels/whatsapp/webhook")

	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "channels.db"), channels.Schema)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus(nil, 0, 0)
	broker := approval.New(approval.Options{Timeout: time.Minute, ApproversFor: bus.ApproversFor, Notify: e2eNotifier{bus}})
	agent := &e2eAgent{bus: bus, broker: broker}
	relay := channels.New(channels.Config{
		Label: "WhatsApp", Users: map[string][]devices.Scope{owner: {devices.Chat, devices.Approve, devices.Read}}, Owners: []string{owner},
	}, channels.Deps{Platform: a, Store: channels.NewStore(db, nil), Agent: agent, Chats: &e2eChats{}, Approvals: broker, Bus: bus,
		Audit: func(context.Context, string, string, string, any) {}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("relay: %v", err)
			}
			bus.Close()
			db.Close()
		})
	})

	deliver := func(m whatsapptest.Msg) {
		t.Helper()
		body := fake.Payload(m)
		waitFor(t, "the delivery to be accepted", func() bool {
			code, err := fake.Post(body, whatsapptest.Sign(body))
			return err == nil && code == http.StatusOK // 503 until the relay receives
		})
	}
	find := func(what string, ok func(whatsapptest.Sent) bool) whatsapptest.Sent {
		t.Helper()
		var got whatsapptest.Sent
		waitFor(t, what, func() bool {
			for _, s := range fake.Sent() {
				if ok(s) {
					got = s
					return true
				}
			}
			return false
		})
		return got
	}

	deliver(fake.Text(owner, "Anna", "hello"))
	find("the reply", func(s whatsapptest.Sent) bool { return s.To == owner && s.Text == "You said: hello" })

	// An approval decided by button.
	agent.gate.Store(true)
	deliver(fake.Text(owner, "Anna", "write it"))
	prompt := find("the approval prompt", func(s whatsapptest.Sent) bool {
		return s.Type == "interactive" && strings.Contains(s.Text, "write_file")
	})
	press, err := fake.PressButton(owner, "Anna", prompt.ID, "✅ Approve")
	if err != nil {
		t.Fatal(err)
	}
	deliver(press)
	find("the reply after approval", func(s whatsapptest.Sent) bool { return s.Text == "You said: write it" })
	find("the press acknowledged", func(s whatsapptest.Sent) bool { return s.Context == press.ID })
	if agent.writes.Load() != 1 {
		t.Errorf("%d writes after the approve button", agent.writes.Load())
	}

	// An approval decided by request code.
	deliver(fake.Text(owner, "Anna", "write again"))
	prompt2 := find("the second prompt", func(s whatsapptest.Sent) bool { return s.Type == "interactive" && s.ID != prompt.ID })
	m := regexp.MustCompile(`"([A-Z0-9]{4}) approve"`).FindStringSubmatch(prompt2.Text)
	if m == nil {
		t.Fatalf("no request code in %q", prompt2.Text)
	}
	deliver(fake.Text(owner, "Anna", m[1]+" approve"))
	find("the reply after the code", func(s whatsapptest.Sent) bool { return s.Text == "You said: write again" })
	if agent.writes.Load() != 2 {
		t.Errorf("%d writes after the code", agent.writes.Load())
	}

	// A stranger is refused and starts no turn.
	turns := agent.n.Load()
	deliver(fake.Text("4915112345678", "Mallory", "send me the owner's mail"))
	find("the refusal", func(s whatsapptest.Sent) bool { return s.To == "4915112345678" })
	if agent.n.Load() != turns {
		t.Error("a stranger started a turn")
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
