package channels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/store"
)

// httpPlatform posts messages to a test server, so a real process can be
// killed while a send is in flight.
type httpPlatform struct {
	url        string
	idempotent bool
}

func (h httpPlatform) Name() string { return "fake" }
func (h httpPlatform) Kind() string { return "fake" }
func (h httpPlatform) Limits() channels.Limits {
	return channels.Limits{MaxText: 1000, Idempotent: h.idempotent}
}
func (h httpPlatform) Receive(ctx context.Context, _ channels.Handler) error {
	<-ctx.Done()
	return nil
}
func (h httpPlatform) Edit(context.Context, string, string, channels.Outgoing) error {
	return channels.ErrUnsupported
}

func (h httpPlatform) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	body, _ := json.Marshal(map[string]string{"conv": conv, "key": m.Key, "text": m.Text})
	req, _ := http.NewRequestWithContext(ctx, "POST", h.url+"/send", strings.NewReader(string(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct{ Ref string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	return out.Ref, nil
}

type httpFinder struct{ httpPlatform }

func (h httpFinder) Find(ctx context.Context, conv, key string) (string, bool, error) {
	resp, err := http.Get(h.url + "/find?key=" + key)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	var out struct {
		Ref   string
		Found bool
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out.Ref, out.Found, err
}

// TestCrashChild is the daemon process of TestKill9BetweenSendAndConfirm.
func TestCrashChild(t *testing.T) {
	path := os.Getenv("HESTIA_CHANNELS_CRASH_DB")
	if path == "" {
		t.Skip("run by TestKill9BetweenSendAndConfirm")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, path, channels.Schema)
	if err != nil {
		t.Fatal(err)
	}
	st := channels.NewStore(db, nil)
	if err := st.Enqueue(ctx, channels.Item{Channel: "fake", Conv: "D1", Key: "fake:final:t1:0", Text: "the final reply"}); err != nil {
		t.Fatal(err)
	}
	hp := httpPlatform{url: os.Getenv("HESTIA_CHANNELS_CRASH_URL"), idempotent: os.Getenv("HESTIA_CHANNELS_CRASH_MODE") == "idempotent"}
	var plat channels.Platform = hp
	if os.Getenv("HESTIA_CHANNELS_CRASH_MODE") == "finder" {
		plat = httpFinder{hp}
	}
	bus := events.NewBus(nil, 0, 0)
	r := channels.New(channels.Config{}, channels.Deps{Platform: plat, Store: st, Bus: bus,
		Approvals: approval.New(approval.Options{Timeout: time.Minute})})
	rctx, cancel := context.WithCancel(ctx)
	go r.Run(rctx)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		items, err := st.Unsent(ctx, "fake")
		if err == nil && len(items) == 0 {
			cancel()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the outbox never emptied")
}

// TestKill9BetweenSendAndConfirm kills the process after the platform
// accepted a final reply and before the process recorded it, then starts
// it again: the reply is never lost, and posted once where the platform
// lets the relay know (an idempotency key or a history search).
func TestKill9BetweenSendAndConfirm(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"idempotent", "finder", "neither"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var shown []string
			byKey := map[string]string{}
			var child *exec.Cmd
			killed := make(chan struct{})
			var once sync.Once
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				switch r.URL.Path {
				case "/send":
					var m struct{ Conv, Key, Text string }
					json.NewDecoder(r.Body).Decode(&m)
					ref, seen := byKey[m.Key]
					if !seen || mode != "idempotent" {
						ref = fmt.Sprintf("m%d", len(shown)+1)
						shown = append(shown, m.Text)
						byKey[m.Key] = ref
					}
					// The first send is accepted and then the process dies
					// before it can hear so.
					once.Do(func() {
						child.Process.Kill()
						child.Wait()
						close(killed)
					})
					json.NewEncoder(w).Encode(map[string]string{"Ref": ref})
				case "/find":
					ref, ok := byKey[r.URL.Query().Get("key")]
					json.NewEncoder(w).Encode(map[string]any{"Ref": ref, "Found": ok})
				}
			}))
			defer srv.Close()
			path := dbPath(t)
			run := func() *exec.Cmd {
				c := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
				c.Env = append(os.Environ(), "HESTIA_CHANNELS_CRASH_DB="+path, "HESTIA_CHANNELS_CRASH_URL="+srv.URL, "HESTIA_CHANNELS_CRASH_MODE="+mode)
				return c
			}
			mu.Lock()
			child = run()
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			mu.Unlock()
			select {
			case <-killed:
			case <-time.After(20 * time.Second):
				t.Fatal("the first process never sent")
			}
			// The item is in doubt on disk: tried, not confirmed.
			db, err := store.Open(context.Background(), path, channels.Schema)
			if err != nil {
				t.Fatal(err)
			}
			items, err := channels.NewStore(db, nil).Unsent(context.Background(), "fake")
			db.Close()
			if err != nil || len(items) != 1 || items[0].State != "sending" {
				t.Fatalf("after the kill the outbox holds %+v (%v); want one item in doubt", items, err)
			}
			if out, err := run().CombinedOutput(); err != nil {
				t.Fatalf("the restarted process: %v\n%s", err, out)
			}
			mu.Lock()
			defer mu.Unlock()
			want := 1
			if mode == "neither" {
				want = 2 // no way to tell: resent rather than lost
			}
			if len(shown) != want {
				t.Errorf("the reply was shown %d times, want %d: %q", len(shown), want, shown)
			}
		})
	}
}
