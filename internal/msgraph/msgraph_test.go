package msgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/msgraph"
	"github.com/hestia-dev/hestia/internal/msgraph/graphtest"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 20, 9, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "7": 7 * time.Second, " 0 ": 0, "-3": 0, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := msgraph.RetryAfter(v, now); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestErrorsAndLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := graphtest.New("tok")
	defer fake.Close()
	cal := fake.AddCalendar("Calendar", true)
	id := fake.AddEvent(cal, graphtest.Event{Subject: "x", Start: graphtest.At(time.Date(2026, 3, 24, 9, 0, 0, 0, time.UTC), "UTC"), End: graphtest.At(time.Date(2026, 3, 24, 10, 0, 0, 0, time.UTC), "UTC")})
	c := &msgraph.Client{BaseURL: fake.URL, Tokens: msgraph.StaticToken("tok")}

	// 412: a stale If-Match.
	_, err := c.Do(ctx, http.MethodPatch, "/me/events/"+msgraph.Quote(id), []byte(`{"subject":"y"}`), http.Header{"If-Match": {`W/"stale"`}})
	var gerr *msgraph.Error
	if !errors.Is(err, msgraph.ErrConflict) || !errors.As(err, &gerr) || gerr.Code != "ErrorIrresolvableConflict" {
		t.Errorf("stale If-Match: %v", err)
	}
	// 404.
	if _, err := c.Do(ctx, http.MethodGet, "/me/events/nope", nil, nil); !errors.Is(err, msgraph.ErrNotFound) || errors.Is(err, msgraph.ErrRefused) {
		t.Errorf("missing event: %v", err)
	}
	// 410 on an expired delta token.
	first := "/me/calendars/" + msgraph.Quote(cal) + "/calendarView/delta?startDateTime=2026-01-01T00:00:00Z&endDateTime=2027-01-01T00:00:00Z"
	link, err := c.Delta(ctx, first, nil, func([]msgraph.Item) error { return nil })
	if err != nil || !strings.Contains(link, "$deltatoken=") {
		t.Fatalf("round: %q %v", link, err)
	}
	fake.ExpireTokens()
	if _, err := c.Delta(ctx, link, nil, func([]msgraph.Item) error { return nil }); !errors.Is(err, msgraph.ErrSyncReset) {
		t.Errorf("expired token: %v", err)
	}
	// 401 with a wrong token, never retried.
	bad := &msgraph.Client{BaseURL: fake.URL, Tokens: msgraph.StaticToken("other")}
	if _, err := bad.Do(ctx, http.MethodGet, "/me/calendars", nil, nil); !errors.Is(err, msgraph.ErrRefused) || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v", err)
	}
	// A link to another host is refused before any request: the token
	// would go with it.
	if _, err := c.Do(ctx, http.MethodGet, "https://evil.example/v1.0/me/calendars", nil, nil); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("foreign link: %v", err)
	}
	if _, err := c.Do(ctx, http.MethodGet, "me/calendars", nil, nil); err == nil {
		t.Error("a relative link was followed")
	}
}

// TestDeltaLinkElsewhereRefused: a page whose nextLink points at another
// server ends the round with an error instead of sending the token there.
func TestDeltaLinkElsewhereRefused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex // guards got
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.String())
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"value": []any{map[string]string{"id": "a"}}, "@odata.nextLink": "https://attacker.example/next"})
	}))
	defer srv.Close()
	c := &msgraph.Client{BaseURL: srv.URL + "/v1.0", Tokens: msgraph.StaticToken("tok")}
	n := 0
	_, err := c.Delta(context.Background(), "/me/contactFolders/x/contacts/delta", nil, func(items []msgraph.Item) error { n += len(items); return nil })
	mu.Lock()
	defer mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "attacker.example") || n != 1 || len(got) != 1 {
		t.Fatalf("err %v, items %d, requests %v", err, n, got)
	}
}

func TestThrottleGivesUp(t *testing.T) {
	t.Parallel()
	fake := graphtest.New("tok")
	defer fake.Close()
	var waits []time.Duration
	c := &msgraph.Client{BaseURL: fake.URL, Tokens: msgraph.StaticToken("tok"), MaxRetries: 2,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	fake.Throttle(5, "1")
	_, err := c.Do(context.Background(), http.MethodGet, "/me/calendars", nil, nil)
	var gerr *msgraph.Error
	if !errors.Is(err, msgraph.ErrThrottled) || !errors.As(err, &gerr) || gerr.RetryAfter != time.Second || len(waits) != 2 {
		t.Fatalf("err %v, waits %v", err, waits)
	}
	// A cancelled context stops the wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := &msgraph.Client{BaseURL: fake.URL, Tokens: msgraph.StaticToken("tok")}
	fake.Throttle(1, "30")
	if _, err := slow.Do(ctx, http.MethodGet, "/me/calendars", nil, nil); err == nil {
		t.Fatal("a cancelled request succeeded")
	}
}
