package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/devices"
)

// POST /api/system/restart needs admin (the route table alone would let a
// chat-scoped phone through), and answers 503 outside Serve.
func TestRestartNeedsAdmin(t *testing.T) {
	t.Parallel()
	a := &App{}
	cancelled := false
	for _, c := range []struct {
		name   string
		ctx    context.Context
		status int
		want   string
	}{
		{"no identity", context.Background(), http.StatusForbidden, "carries no device identity"},
		{"chat device", devices.WithIdentity(context.Background(), devices.Identity{DeviceID: "d1", Name: "phone", Scopes: []devices.Scope{devices.Chat, devices.Approve, devices.Read}}), http.StatusForbidden, "lacks the admin scope to restart the daemon"},
		{"not serving", devices.WithIdentity(context.Background(), devices.Identity{Scopes: []devices.Scope{devices.Admin}}), http.StatusServiceUnavailable, "not serving"},
	} {
		w := httptest.NewRecorder()
		a.handleRestart(w, httptest.NewRequestWithContext(c.ctx, "POST", "/api/system/restart", nil))
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want %d %q", c.name, w.Code, w.Body, c.status, c.want)
		}
	}
	a.restart.serving(func() { cancelled = true })
	if a.restart.wasRequested() || cancelled {
		t.Fatal("requested before any request")
	}
	if !a.restart.request() || !a.restart.wasRequested() || !cancelled {
		t.Fatal("request did not cancel Serve")
	}
}
