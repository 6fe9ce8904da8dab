package app

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/httpjson"
)

// initSystem serves GET /api/system: the daemon's own status plus every
// health check, for the web UI's system page.
func (a *App) initSystem(ctx context.Context) error {
	if a.Server == nil {
		return nil
	}
	a.Server.API().HandleFunc("GET /api/system", a.handleSystem)
	a.Server.API().HandleFunc("POST /api/system/restart", a.handleRestart)
	return nil
}

// SystemStatus is the body of GET /api/system.
type SystemStatus struct {
	Version   string          `json:"version"`
	StartedAt time.Time       `json:"started_at"`
	UptimeSec int64           `json:"uptime_seconds"`
	DataDir   string          `json:"data_dir"`
	Checks    []doctor.Result `json:"checks"`
	Runtime   RuntimeStatus   `json:"runtime"`
}

// systemCheckTTL is how long GET /api/system reuses check results. The
// checks read every store (quick_check reads a whole file, the audit check
// walks the chain) and the system page polls, so without reuse an open page
// would rescan a large mail store every few seconds. ?fresh=1 re-runs them.
const systemCheckTTL = time.Minute

// checkCache holds the latest system check results.
type checkCache struct {
	mu      sync.Mutex // guards the fields below; held while checks run so concurrent callers wait for one run
	at      time.Time
	results []doctor.Result
}

func (a *App) systemChecks(ctx context.Context, fresh bool) ([]doctor.Result, error) {
	a.sys.mu.Lock()
	defer a.sys.mu.Unlock()
	if !fresh && a.sys.results != nil && a.Now().Sub(a.sys.at) < systemCheckTTL {
		return a.sys.results, nil
	}
	checks, err := a.Checks()
	if err != nil {
		return nil, err
	}
	a.sys.results = doctor.Run(ctx, checks, 3*time.Second)
	a.sys.at = a.Now()
	return a.sys.results, nil
}

func (a *App) handleSystem(w http.ResponseWriter, r *http.Request) {
	results, err := a.systemChecks(r.Context(), r.URL.Query().Get("fresh") == "1")
	if err != nil {
		httpjson.Respond(w, r, 0, nil, err)
		return
	}
	started := a.Server.Started()
	httpjson.Write(w, http.StatusOK, SystemStatus{
		Version:   a.Version,
		StartedAt: started.UTC(),
		UptimeSec: int64(a.Now().Sub(started).Seconds()),
		DataDir:   a.Paths.Data,
		Checks:    results,
		Runtime:   a.runtimeStatus(),
	})
}
