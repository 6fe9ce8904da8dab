package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/caltools"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Calendar is the wired calendar connector.
type Calendar struct {
	Store  *calendar.Store
	Writer *calwrite.Writer
	Deps   caltools.Deps
	cfg    config.CalendarConfig
}

// OpenCalendar opens the calendar index (closed with the App).
func (a *App) OpenCalendar(ctx context.Context) (*Calendar, error) {
	cfg := a.Config.Calendar
	loc := cfg.Location()
	st, err := calendar.Open(ctx, calendar.Options{DBPath: a.Paths.DB(calendar.Schema.Name), Floating: loc,
		Logger: a.Log.With("component", "calendar"), Now: a.Now})
	if err != nil {
		return nil, err
	}
	a.OnClose(st.Close)
	hours := calendar.WorkingHours{}
	// Validated by config; errors here would mean a config bug.
	hours.Start, _ = calendar.ParseClock(cfg.DayStart)
	hours.End, _ = calendar.ParseClock(cfg.DayEnd)
	hours.Days, _ = calendar.ParseWeekdays(cfg.WorkDays)
	c := &Calendar{Store: st, cfg: cfg, Deps: caltools.Deps{Store: st, Now: a.Now, Loc: loc, Hours: hours}}
	w, err := calwrite.Open(ctx, calwrite.Options{DBPath: a.Paths.DB(calwrite.Schema.Name), Index: st, Targets: c.targets,
		Loc: loc, Now: a.Now, Logger: a.Log.With("component", "calendar")})
	if err != nil {
		return nil, err
	}
	a.OnClose(w.Close)
	c.Writer = w
	return c, nil
}

// targets maps every known vdir collection to a write target.
func (c *Calendar) targets(ctx context.Context) (map[string]calwrite.Target, error) {
	srcs, err := c.Sources(ctx)
	out := map[string]calwrite.Target{}
	for _, s := range srcs {
		out[s.Name] = calwrite.Target{Name: s.Name, ReadOnly: s.ReadOnly, Backend: calwrite.Vdir{Dir: s.Path},
			Resync: func(ctx context.Context) error { _, err := c.Store.Sync(ctx, s); return err }}
	}
	if len(out) > 0 {
		err = nil // a broken source elsewhere does not block writes here
	}
	return out, err
}

// Sources lists the configured collections (folders of collections
// expanded) plus those imported by hand earlier (`hestia cal import`).
func (c *Calendar) Sources(ctx context.Context) ([]calendar.Source, error) {
	var out []calendar.Source
	seen := map[string]bool{}
	var errs []error
	for _, s := range c.cfg.Sources {
		cols, err := calendar.Collections(calendar.Source{Name: s.Name, Path: s.Path, ReadOnly: s.ReadOnly, Color: s.Color})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, col := range cols {
			seen[col.Name] = true
			out = append(out, col)
		}
	}
	cals, err := c.Store.Calendars(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range cals {
		if !seen[k.Name] {
			out = append(out, calendar.Source{Name: k.Name, Path: k.Path, ReadOnly: k.ReadOnly, Color: k.Color})
		}
	}
	return out, errors.Join(errs...)
}

// SyncAll reconciles every source, returning per-source stats; a failing
// source does not stop the others.
func (c *Calendar) SyncAll(ctx context.Context) ([]calendar.SyncStats, error) {
	srcs, err := c.Sources(ctx)
	errs := []error{err}
	var out []calendar.SyncStats
	for _, s := range srcs {
		st, err := c.Store.Sync(ctx, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("calendar %s: %w", s.Name, err))
			continue
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}

// registerCalendar wires the calendar into the daemon: tools, routes, the
// reconcile worker and a health check.
func (a *App) registerCalendar(ctx context.Context, reg *tools.Registry) error {
	c, err := a.OpenCalendar(ctx)
	if err != nil {
		return err
	}
	for _, t := range append(caltools.Tools(c.Deps), calwrite.Tools(c.Writer)...) {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	if a.Server != nil {
		c.Routes(a.Server.API())
	}
	log := a.Log.With("component", "calendar")
	var last struct {
		mu    sync.Mutex // guards the fields below
		err   error
		stats []calendar.SyncStats
		at    time.Time
	}
	a.AddWorker("calendar.reconcile", func(ctx context.Context) error {
		for {
			stats, err := c.SyncAll(ctx)
			if err != nil && ctx.Err() == nil {
				log.Warn("calendarSync", "err", err)
			}
			if _, err := c.Writer.ConfirmPending(ctx, 10); err != nil && ctx.Err() == nil {
				log.Warn("calendarConfirm", "err", err)
			}
			last.mu.Lock()
			last.err, last.stats, last.at = err, stats, a.Now()
			last.mu.Unlock()
			t := time.NewTimer(c.cfg.ReconcileInterval.D())
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	})
	a.AddCheck(doctor.Check{Name: "calendar.sources", Run: func(ctx context.Context) (doctor.Status, string) {
		last.mu.Lock()
		err, stats, at := last.err, last.stats, last.at
		last.mu.Unlock()
		if at.IsZero() {
			return doctor.OK, "first sync pending"
		}
		skipped := 0
		for _, s := range stats {
			skipped += len(s.Skipped)
		}
		if err != nil {
			return doctor.Warn, err.Error()
		}
		return doctor.OK, fmt.Sprintf("%d calendars synced at %s, %d files skipped", len(stats), at.Format(time.RFC3339), skipped)
	}})
	return nil
}

// Routes serves the calendar API (read-only; writes go through the agent's
// gated tools).
func (c *Calendar) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/calendar/calendars", func(w http.ResponseWriter, r *http.Request) {
		cals, err := c.Store.Calendars(r.Context())
		writeCalResult(w, map[string]any{"calendars": cals}, err)
	})
	mux.HandleFunc("GET /api/calendar/agenda", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		ag, err := c.Deps.Agenda(r.Context(), caltools.AgendaArgs{From: q.Get("from"), To: q.Get("to"), Calendars: splitList(q.Get("calendars")), Limit: limit})
		writeCalResult(w, ag, err)
	})
	mux.HandleFunc("GET /api/calendar/search", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := c.Deps.Search(r.Context(), caltools.SearchArgs{Query: q.Get("q"), From: q.Get("from"), To: q.Get("to"),
			Calendars: splitList(q.Get("calendars")), Attendee: q.Get("attendee")})
		writeCalResult(w, res, err)
	})
	mux.HandleFunc("GET /api/calendar/ops", func(w http.ResponseWriter, r *http.Request) {
		ops, err := c.Writer.List(r.Context(), r.URL.Query().Get("state"), 100)
		writeCalResult(w, map[string]any{"operations": ops}, err)
	})
	mux.HandleFunc("GET /api/calendar/free", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		minutes, _ := strconv.Atoi(q.Get("min"))
		res, err := c.Deps.Free(r.Context(), caltools.FreeArgs{From: q.Get("from"), To: q.Get("to"), Calendars: splitList(q.Get("calendars")), MinMinutes: minutes})
		writeCalResult(w, res, err)
	})
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func writeCalResult(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, calendar.ErrBadQuery):
		httpjson.Error(w, http.StatusBadRequest, "bad_query", err.Error())
	case err != nil:
		httpjson.Error(w, http.StatusInternalServerError, "internal", err.Error())
	default:
		httpjson.Write(w, http.StatusOK, v)
	}
}
