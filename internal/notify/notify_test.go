package notify

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/notify/pushtest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newNotifier(t *testing.T, c *clock) (*Notifier, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.db")
	n, err := Open(context.Background(), path, Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, path
}

func subscribe(t *testing.T, n *Notifier, s pushtest.Subscription, device string) {
	t.Helper()
	if _, err := n.Subscribe(context.Background(), Subscription{Endpoint: s.Endpoint, Keys: Keys{P256dh: s.Keys.P256dh, Auth: s.Keys.Auth}, Device: device}); err != nil {
		t.Fatal(err)
	}
}

func TestPushReachesStubDecrypted(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Now()}
	n, path := newNotifier(t, c)
	stub := pushtest.New(t)
	subscribe(t, n, stub.Subscribe("phone"), "phone")
	ctx := context.Background()
	x, err := n.Notify(ctx, Notification{Kind: KindApproval, Key: "approval:a1", Title: "Approve sending mail?", Body: "mail_send to ann@example.org", URL: "/#/chat/c1", ChatID: "c1"})
	if err != nil || x.PushState != PushPending {
		t.Fatalf("notify: %+v %v", x, err)
	}
	if k, err := n.DeliverDue(ctx); err != nil || k != 1 {
		t.Fatalf("deliver: %d %v (stub errors %v)", k, err, stub.Errors())
	}
	msgs := stub.Messages()
	if len(msgs) != 1 {
		t.Fatalf("stub got %d pushes, errors %v", len(msgs), stub.Errors())
	}
	var p payload
	if err := json.Unmarshal(msgs[0].Payload, &p); err != nil || p.Title != "Approve sending mail?" || p.URL != "/#/chat/c1" || p.ID != x.ID {
		t.Fatalf("decrypted payload %s (%v)", msgs[0].Payload, err)
	}
	if msgs[0].Subject != "mailto:hestia@localhost" {
		t.Errorf("vapid sub = %q", msgs[0].Subject)
	}
	got, _ := n.Get(ctx, x.ID)
	if got.PushState != PushDelivered || got.DeliveredAt == nil {
		t.Fatalf("after delivery: %+v", got)
	}
	// The same key again is a duplicate: nothing new is stored or pushed.
	dup, err := n.Notify(ctx, Notification{Kind: KindApproval, Key: "approval:a1", Title: "again"})
	if err != nil || !dup.Duplicate || dup.ID != x.ID {
		t.Fatalf("duplicate: %+v %v", dup, err)
	}
	n.DeliverDue(ctx)
	if len(stub.Messages()) != 1 {
		t.Fatal("a duplicate was pushed")
	}
	// The VAPID key survives a reopen.
	k1, _ := n.VAPIDPublicKey(ctx)
	n2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	if k2, _ := n2.VAPIDPublicKey(ctx); k1 != k2 || k1 == "" {
		t.Fatalf("VAPID key changed on reopen: %q %q", k1, k2)
	}
}

func TestGoneEndpointsPrunedAndOneAcceptEnough(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Now()}
	n, _ := newNotifier(t, c)
	stub := pushtest.New(t)
	subscribe(t, n, stub.Subscribe("old"), "old laptop")
	subscribe(t, n, stub.Subscribe("broken"), "tablet")
	subscribe(t, n, stub.Subscribe("phone"), "phone")
	stub.SetStatus("old", http.StatusGone)
	stub.SetStatus("broken", http.StatusInternalServerError)
	ctx := context.Background()
	x, _ := n.Notify(ctx, Notification{Kind: KindJob, Title: "Job briefing failed"})
	if k, err := n.DeliverDue(ctx); k != 1 || err != nil {
		t.Fatalf("deliver %d %v", k, err)
	}
	subs, _ := n.Subscriptions(ctx)
	if len(subs) != 2 {
		t.Fatalf("410 endpoint not pruned: %+v", subs)
	}
	for _, s := range subs {
		if s.Device == "tablet" && s.Failures != 1 {
			t.Errorf("failure not counted: %+v", s)
		}
	}
	if got, _ := n.Get(ctx, x.ID); got.PushState != PushDelivered {
		t.Fatalf("one accepting endpoint should deliver: %+v", got)
	}
}

func TestRetryWithBackoffThenFail(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Now()}
	n, _ := newNotifier(t, c)
	stub := pushtest.New(t)
	subscribe(t, n, stub.Subscribe("p"), "phone")
	stub.SetStatus("p", http.StatusServiceUnavailable)
	ctx := context.Background()
	x, _ := n.Notify(ctx, Notification{Kind: KindWatch, Title: "Train 9544 delayed"})
	n.DeliverDue(ctx)
	got, _ := n.Get(ctx, x.ID)
	if got.PushState != PushPending || got.Attempts != 1 || !strings.Contains(got.LastError, "503") {
		t.Fatalf("after a failed attempt: %+v", got)
	}
	n.DeliverDue(ctx) // not due yet: no new attempt
	if got, _ = n.Get(ctx, x.ID); got.Attempts != 1 {
		t.Fatalf("retried before the backoff: %+v", got)
	}
	stub.SetStatus("p", 0)
	c.Advance(firstRetry)
	if k, _ := n.DeliverDue(ctx); k != 1 {
		t.Fatal("retry did not deliver")
	}
	// Every attempt failing ends in failed.
	stub.SetStatus("p", http.StatusInternalServerError)
	y, _ := n.Notify(ctx, Notification{Kind: KindWatch, Title: "second"})
	for i := 0; i < MaxAttempts; i++ {
		n.DeliverDue(ctx)
		c.Advance(firstRetry << i)
	}
	if got, _ := n.Get(ctx, y.ID); got.PushState != PushFailed || got.Attempts != MaxAttempts {
		t.Fatalf("after every attempt failed: %+v", got)
	}
}

func TestNoDeviceRateLimitAndQuietHours(t *testing.T) {
	t.Parallel()
	loc := time.Local
	c := &clock{t: time.Date(2026, 3, 9, 23, 30, 0, 0, loc)}
	n, _ := newNotifier(t, c)
	ctx := context.Background()
	x, _ := n.Notify(ctx, Notification{Kind: KindBudget, Title: "80% of the daily budget"})
	n.DeliverDue(ctx)
	if got, _ := n.Get(ctx, x.ID); got.PushState != PushNoDevice {
		t.Fatalf("no subscriptions: %+v", got)
	}
	if _, err := n.SetSettings(ctx, Settings{QuietStart: "22:00", QuietEnd: "07:00", RateLimit: 3}); err != nil {
		t.Fatal(err)
	}
	stub := pushtest.New(t)
	subscribe(t, n, stub.Subscribe("p"), "phone")
	q, _ := n.Notify(ctx, Notification{Kind: KindAction, Title: "Reply to Ann"})
	if q.PushReason != "quiet_hours" {
		t.Fatalf("quiet hours: %+v", q)
	}
	n.DeliverDue(ctx)
	if len(stub.Messages()) != 0 {
		t.Fatal("pushed during quiet hours")
	}
	c.Advance(7*time.Hour + 30*time.Minute) // 07:00
	n.DeliverDue(ctx)
	if len(stub.Messages()) != 1 {
		t.Fatal("not pushed when quiet hours ended")
	}
	// Rate limit: three in the window (the night's are older) fill it.
	for _, title := range []string{"third", "fourth", "fifth"} {
		if x, _ := n.Notify(ctx, Notification{Kind: KindAction, Title: title}); x.PushState != PushPending {
			t.Fatalf("%s: %+v", title, x)
		}
	}
	r, _ := n.Notify(ctx, Notification{Kind: KindAction, Title: "sixth"})
	if r.PushState != PushSuppressed || r.PushReason != "rate_limited" {
		t.Fatalf("rate limit: %+v", r)
	}
	in, _ := n.List(ctx, false, 0)
	if len(in.Notifications) != 6 || in.Unread != 6 {
		t.Fatalf("inbox keeps everything: %+v", in)
	}
	if err := n.MarkRead(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if in, _ = n.List(ctx, true, 0); in.Unread != 5 || len(in.Notifications) != 5 {
		t.Fatalf("after read: %+v", in)
	}
	for _, bad := range []Settings{{QuietStart: "22:00"}, {QuietStart: "25:00", QuietEnd: "07:00"}, {QuietStart: "07:00", QuietEnd: "07:00"}, {RateLimit: -1}} {
		var fe *FieldError
		if _, err := n.SetSettings(ctx, bad); !errors.As(err, &fe) {
			t.Errorf("SetSettings(%+v) = %v", bad, err)
		}
	}
	if s, _ := n.Settings(ctx); s.RateLimit != 3 || s.QuietStart != "22:00" {
		t.Fatalf("bad settings changed the stored ones: %+v", s)
	}
}

func TestHTTPSubscribeValidation(t *testing.T) {
	t.Parallel()
	n, _ := newNotifier(t, &clock{t: time.Now()})
	mux := http.NewServeMux()
	n.Routes(mux)
	do := func(method, path, body string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	good := `"keys":{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"tBHItJI5svbpez7KI4CCXg"}`
	for _, tc := range []struct{ body, want string }{
		{`{"endpoint":"http://push.example/x",` + good + `}`, "endpoint"},
		{`{"endpoint":"https://push.example/x","keys":{"p256dh":"abc","auth":"tBHItJI5svbpez7KI4CCXg"}}`, "keys.p256dh"},
		{`{"endpoint":"https://push.example/x","keys":{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"!!"}}`, "keys.auth"},
		{`{"endpoint":"https://push.example/x",` + good + `,"extra":1}`, "extra"},
	} {
		if code, body := do("POST", "/api/push/subscriptions", tc.body); code != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("subscribe %s = %d %s", tc.body, code, body)
		}
	}
	code, body := do("POST", "/api/push/subscriptions", `{"endpoint":"https://push.example/x",`+good+`,"device":"phone","expirationTime":null}`)
	if code != 201 || strings.Contains(body, "tBHItJI5") {
		t.Fatalf("subscribe = %d %s", code, body)
	}
	if code, body := do("GET", "/api/push/key", ""); code != 200 || !strings.Contains(body, "public_key") {
		t.Fatalf("key = %d %s", code, body)
	}
	if code, _ := do("DELETE", "/api/push/subscriptions", `{"endpoint":"https://push.example/y"}`); code != 404 {
		t.Fatalf("unsubscribe unknown = %d", code)
	}
	if code, _ := do("DELETE", "/api/push/subscriptions", `{"endpoint":"https://push.example/x"}`); code != 200 {
		t.Fatalf("unsubscribe = %d", code)
	}
	if code, _ := do("POST", "/api/notifications/abc/read", ""); code != 400 {
		t.Fatalf("bad id = %d", code)
	}
	if code, _ := do("POST", "/api/notifications/99/read", ""); code != 404 {
		t.Fatalf("missing id = %d", code)
	}
	if code, body := do("PUT", "/api/notifications/settings", `{"quiet_start":"nine","quiet_end":"07:00","rate_limit":5}`); code != 400 || !strings.Contains(body, "quiet_start") {
		t.Fatalf("bad settings = %d %s", code, body)
	}
}

func TestMarkReadKeySettlesAnApprovalNotification(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 3, 9, 23, 30, 0, 0, time.Local)}
	n, _ := newNotifier(t, c)
	ctx := context.Background()
	if _, err := n.SetSettings(ctx, Settings{QuietStart: "22:00", QuietEnd: "07:00"}); err != nil {
		t.Fatal(err)
	}
	stub := pushtest.New(t)
	subscribe(t, n, stub.Subscribe("p"), "phone")
	a, _ := n.Notify(ctx, Notification{Kind: KindApproval, Key: "approval:a_1", Title: "Approval needed: write_file"})
	other, _ := n.Notify(ctx, Notification{Kind: KindApproval, Key: "approval:a_2", Title: "Approval needed: send_mail"})
	if a.PushState != PushPending {
		t.Fatalf("quiet hours keep the push pending: %+v", a)
	}
	if err := n.MarkReadKey(ctx, "approval:a_1"); err != nil {
		t.Fatal(err)
	}
	got, _ := n.Get(ctx, a.ID)
	if got.ReadAt == nil || got.PushState != PushSuppressed || got.PushReason != "read" {
		t.Fatalf("decided approval: %+v", got)
	}
	if o, _ := n.Get(ctx, other.ID); o.ReadAt != nil || o.PushState != PushPending {
		t.Fatalf("another approval changed: %+v", o)
	}
	// After quiet hours only the undecided one is pushed.
	c.Advance(8 * time.Hour)
	n.DeliverDue(ctx)
	if m := stub.Messages(); len(m) != 1 {
		t.Fatalf("pushed %d, want only the undecided approval", len(m))
	}
	if in, _ := n.List(ctx, true, 0); in.Unread != 1 {
		t.Fatalf("unread = %d, want 1", in.Unread)
	}
	// An unknown key is fine (the approval never notified); an empty one is not.
	if err := n.MarkReadKey(ctx, "approval:nope"); err != nil {
		t.Fatalf("unknown key: %v", err)
	}
	if err := n.MarkReadKey(ctx, ""); err == nil || !strings.Contains(err.Error(), "empty key") {
		t.Fatalf("empty key: %v", err)
	}
}
