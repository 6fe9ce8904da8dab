package app

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/httpjson"
)

// ErrRestart is what Serve returns after POST /api/system/restart: the
// daemon has shut down as for SIGTERM (stores closed, lock released) and
// its caller should start it again (cli re-executes the binary in place).
var ErrRestart = errors.New("restart requested")

// restarter ends Serve on request. mu guards the fields below.
type restarter struct {
	mu        sync.Mutex
	cancel    context.CancelFunc // Serve's; nil when not serving
	requested bool
}

func (r *restarter) serving(cancel context.CancelFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancel = cancel
}

// request asks Serve to stop and report ErrRestart; false when not serving.
func (r *restarter) request() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel == nil {
		return false
	}
	r.requested = true
	r.cancel()
	return true
}

func (r *restarter) wasRequested() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requested
}

// handleRestart serves POST /api/system/restart. It needs admin: the route
// table gives writes the chat scope, and a restart interrupts every user's
// running work. The answer is written before the shutdown starts, and the
// HTTP server's graceful shutdown lets it reach the client.
func (a *App) handleRestart(w http.ResponseWriter, r *http.Request) {
	if err := devices.Require(r.Context(), devices.Admin, "restart the daemon"); err != nil {
		httpjson.Error(w, http.StatusForbidden, "forbidden", err.Error())
		return
	}
	if !a.restart.request() {
		httpjson.Error(w, http.StatusServiceUnavailable, "not_serving", "the daemon is not serving, so there is nothing to restart")
		return
	}
	a.Log.Info("restartRequested")
	httpjson.Write(w, http.StatusAccepted, map[string]any{"restarting": true, "started_at": a.Server.Started().UTC()})
}
