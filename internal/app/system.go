package app

import (
	"context"
	"net/http"
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
	return nil
}

// SystemStatus is the body of GET /api/system.
type SystemStatus struct {
	Version   string          `json:"version"`
	StartedAt time.Time       `json:"started_at"`
	UptimeSec int64           `json:"uptime_seconds"`
	DataDir   string          `json:"data_dir"`
	Checks    []doctor.Result `json:"checks"`
}

func (a *App) handleSystem(w http.ResponseWriter, r *http.Request) {
	checks, err := a.Checks()
	if err != nil {
		httpjson.Error(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	started := a.Server.Started()
	httpjson.Write(w, http.StatusOK, SystemStatus{
		Version:   a.Version,
		StartedAt: started.UTC(),
		UptimeSec: int64(a.Now().Sub(started).Seconds()),
		DataDir:   a.Paths.Data,
		Checks:    doctor.Run(r.Context(), checks, 3*time.Second),
	})
}
