package app

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/metrics"
)

// WorkerState is one background worker's state, for the system page.
type WorkerState struct {
	Name      string    `json:"name"`
	State     string    `json:"state"` // running, restarting, stopped
	Restarts  int       `json:"restarts"`
	LastError string    `json:"last_error,omitempty"`
	Since     time.Time `json:"since"`
}

// workerStates tracks every worker's state.
type workerStates struct {
	mu sync.Mutex // guards m
	m  map[string]*WorkerState
}

func (ws *workerStates) set(name, state string, err error, now time.Time) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m == nil {
		ws.m = map[string]*WorkerState{}
	}
	s := ws.m[name]
	if s == nil {
		s = &WorkerState{Name: name}
		ws.m[name] = s
	}
	if state == "restarting" {
		s.Restarts++
	}
	if err != nil {
		// Panics carry a stack; the first line says what happened.
		s.LastError, _, _ = strings.Cut(err.Error(), "\n")
	}
	s.State, s.Since = state, now.UTC()
}

func (ws *workerStates) list() []WorkerState {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := make([]WorkerState, 0, len(ws.m))
	for _, s := range ws.m {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RuntimeStatus is the runtime part of GET /api/system.
type RuntimeStatus struct {
	metrics.Runtime
	Events  events.Stats        `json:"events"`
	Workers []WorkerState       `json:"workers"`
	Routes  []metrics.RouteStat `json:"routes"`
}

func (a *App) runtimeStatus() RuntimeStatus {
	rs := RuntimeStatus{Runtime: metrics.ReadRuntime(), Workers: a.workerStates.list()}
	if a.core.bus != nil {
		rs.Events = a.core.bus.Stats()
	}
	if a.routes != nil {
		rs.Routes = a.routes.Snapshot()
	}
	return rs
}

// initMetrics serves GET /api/metrics (Prometheus text format, behind the
// token like every /api route): the Go and process collectors, per-route
// latency, event-stream subscribers and sheds, and worker states.
func (a *App) initMetrics(ctx context.Context) error {
	if a.Server == nil || a.routes == nil {
		return nil
	}
	reg := metrics.NewRegistry(a.routes)
	busStats := func() events.Stats {
		if a.core.bus == nil {
			return events.Stats{}
		}
		return a.core.bus.Stats()
	}
	reg.Gauge("hestia_sse_subscribers", "Open event streams (GET /api/events).", func() float64 { return float64(busStats().Subscribers) })
	reg.Gauge("hestia_sse_approvers", "Open event streams that can answer approvals.", func() float64 { return float64(busStats().Approvers) })
	reg.Counter("hestia_sse_shed_total", "Event streams dropped because the client fell behind.", func() float64 { return float64(busStats().Shed) })
	reg.LabeledGauges("hestia_worker_up", "1 while a background worker runs, 0 while it waits to restart or has stopped.", "worker", func() map[string]float64 {
		m := map[string]float64{}
		for _, w := range a.workerStates.list() {
			m[w.Name] = 0
			if w.State == "running" {
				m[w.Name] = 1
			}
		}
		return m
	})
	reg.LabeledGauges("hestia_worker_restarts", "Times a background worker crashed and was restarted since start.", "worker", func() map[string]float64 {
		m := map[string]float64{}
		for _, w := range a.workerStates.list() {
			m[w.Name] = float64(w.Restarts)
		}
		return m
	})
	a.Server.API().Handle("GET /api/metrics", reg.Handler())
	return nil
}
