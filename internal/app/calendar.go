package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/caltools"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/calendar/davsync"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Calendar is the wired calendar connector.
type Calendar struct {
	Store  *calendar.Store
	Writer *calwrite.Writer
	Deps   caltools.Deps
	cfg    config.CalendarConfig
	// davRoot holds the CalDAV mirrors (DATA/calendar/caldav).
	davRoot string
	davMu   sync.Mutex                 // guards dav
	dav     map[string]davsync.Backend // mirror folder → server
	getenv  func(string) string        // for password_env
	tokens  tokenSource                // for auth = "oauth2" (accountauth.go)
	graph   *graphMirrors              // [[calendar.graph]] mirrors (graph.go)
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
	c := &Calendar{Store: st, cfg: cfg, Deps: caltools.Deps{Store: st, Now: a.Now, Loc: loc, Hours: hours},
		davRoot: filepath.Join(a.Paths.Data, "calendar", "caldav"), dav: map[string]davsync.Backend{}, getenv: a.env(), tokens: a.accountTokens}
	c.graph = a.newGraphMirrors("calendar", cfg.Graph)
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
		if c.graph.owns(s.Path) {
			// Writes go to Graph, never to the mirror folder.
			if t, ok := c.graph.calendarTarget(s, c.Store); ok {
				out[s.Name] = t
			}
			continue
		}
		var be calwrite.Backend = calwrite.Vdir{Dir: s.Path}
		resync := func(ctx context.Context) error { _, err := c.Store.Sync(ctx, s); return err }
		if strings.HasPrefix(s.Path, c.davRoot+string(filepath.Separator)) {
			c.davMu.Lock()
			dav, ok := c.dav[s.Path]
			c.davMu.Unlock()
			if !ok {
				continue // not mirrored in this process yet: no server known
			}
			be = dav
			resync = func(ctx context.Context) error {
				if _, err := davsync.Mirror(ctx, dav.Account, davsync.Collection{Path: dav.Collection}, s.Path); err != nil {
					return err
				}
				_, err := c.Store.Sync(ctx, s)
				return err
			}
		}
		out[s.Name] = calwrite.Target{Name: s.Name, ReadOnly: s.ReadOnly, Backend: be, Resync: resync}
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
	for _, acc := range c.cfg.CalDAV {
		// CalDAV mirrors are vdir folders named account/collection; the
		// index only ever reads the mirror.
		ents, err := os.ReadDir(c.davDir(acc.Name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, e := range ents {
			if e.IsDir() {
				name := acc.Name + "/" + e.Name()
				seen[name] = true
				out = append(out, calendar.Source{Name: name, Path: filepath.Join(c.davDir(acc.Name), e.Name()), ReadOnly: acc.ReadOnly})
			}
		}
	}
	gs, gerr := c.graph.calendarSources(seen) // graph.go
	out, errs = append(out, gs...), append(errs, gerr)
	cals, err := c.Store.Calendars(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range cals {
		if !seen[k.Name] && !strings.HasPrefix(k.Path, c.davRoot+string(filepath.Separator)) && !c.graph.owns(k.Path) {
			out = append(out, calendar.Source{Name: k.Name, Path: k.Path, ReadOnly: k.ReadOnly, Color: k.Color})
		}
	}
	return out, errors.Join(errs...)
}

func (c *Calendar) davDir(account string) string { return filepath.Join(c.davRoot, account) }

// davAccount builds the client settings of a CalDAV account.
func (c *Calendar) davAccount(acc config.DAVAccount) (davsync.Account, error) {
	a := davsync.Account{Name: acc.Name, URL: acc.URL, Username: acc.Username, HTTP: &http.Client{Timeout: 60 * time.Second}}
	if acc.UsesOAuth() {
		src, err := c.tokens(acc.OAuthAccount, oauth.Calendar)
		if err != nil {
			return a, fmt.Errorf("caldav %s: %w", acc.Name, err)
		}
		a.Bearer = src
		return a, nil
	}
	if acc.Username != "" {
		pw, err := Password(config.MailAccount{Name: acc.Name, PasswordEnv: acc.PasswordEnv, PasswordFile: acc.PasswordFile}, c.getenv)
		if err != nil {
			return a, fmt.Errorf("caldav: %w", err)
		}
		a.Password = pw
	}
	return a, nil
}

// collectionDir is the mirror folder of one server collection.
func (c *Calendar) collectionDir(account string, col davsync.Collection) string {
	base := path.Base(strings.TrimSuffix(col.Path, "/"))
	return filepath.Join(c.davDir(account), strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 32 || r == '.' {
			return '_'
		}
		return r
	}, base))
}

// MirrorDAV brings every CalDAV collection's mirror up to date and
// records, per mirror folder, how writes reach the server; it returns each
// pass by the collection's local folder.
func (c *Calendar) MirrorDAV(ctx context.Context) (map[string]davsync.Stats, error) {
	passes := map[string]davsync.Stats{}
	var errs []error
	for _, acc := range c.cfg.CalDAV {
		a, err := c.davAccount(acc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cols, err := davsync.Discover(ctx, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, col := range cols {
			dir := c.collectionDir(acc.Name, col)
			st, err := davsync.Mirror(ctx, a, col, dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			passes[filepath.Clean(dir)] = st
			c.davMu.Lock()
			c.dav[dir] = davsync.Backend{Account: a, Collection: col.Path, Dir: dir}
			c.davMu.Unlock()
		}
	}
	return passes, errors.Join(errs...)
}

// SyncAll reconciles every source (mirroring CalDAV accounts first),
// returning per-source stats; a failing source does not stop the others.
func (c *Calendar) SyncAll(ctx context.Context) ([]calendar.SyncStats, error) {
	passes, derr := c.MirrorDAV(ctx)
	gpasses, gerr := c.graph.mirrorCalendars(ctx, c.Store.Floating()) // graph.go
	srcs, err := c.Sources(ctx)
	errs := []error{derr, gerr, err}
	var out []calendar.SyncStats
	for _, s := range srcs {
		st, err := c.Store.Sync(ctx, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("calendar %s: %w", s.Name, err))
			continue
		}
		if p, ok := passes[filepath.Clean(s.Path)]; ok {
			st.Remote = &calendar.RemoteStats{Mode: p.Mode, Fetched: p.Fetched, Removed: p.Removed, Unchanged: p.Unchanged}
		}
		if p, ok := gpasses[filepath.Clean(s.Path)]; ok {
			st.Remote = &p
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
	// The daemon answers agenda and availability from the horizon held in
	// memory (rebuilt in the background after each change).
	c.Store.KeepSnapshot()
	for _, t := range append(caltools.Tools(c.Deps), calwrite.Tools(c.Writer)...) {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	if err := a.registerTasks(reg, c); err != nil { // tasks.go
		return err
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
		msg := fmt.Sprintf("%d calendars synced at %s, %d files skipped", len(stats), at.Format(time.RFC3339), skipped)
		// Components skipped or repaired inside indexed files are named
		// (the first few) so the user can fix them at the source.
		ws, total, werr := c.Store.Warnings(ctx, 3)
		if werr != nil {
			return doctor.Warn, werr.Error()
		}
		if total == 0 {
			return doctor.OK, msg
		}
		var names []string
		for _, w := range ws {
			names = append(names, fmt.Sprintf("%s/%s: %s", w.Calendar, w.File, w.Problem))
		}
		return doctor.Warn, fmt.Sprintf("%s; %d components skipped or repaired: %s", msg, total, strings.Join(names, "; "))
	}})
	return nil
}

// Routes serves the calendar API (read-only; writes go through the agent's
// gated tools).
func (c *Calendar) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/calendar/calendars", func(w http.ResponseWriter, r *http.Request) {
		cals, err := c.Store.Calendars(r.Context())
		writeCalResult(w, r, map[string]any{"calendars": cals}, err)
	})
	mux.HandleFunc("GET /api/calendar/agenda", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		ag, err := c.Deps.AgendaUpTo(r.Context(), caltools.AgendaArgs{From: q.Get("from"), To: q.Get("to"), Calendars: splitList(q.Get("calendars")), Limit: limit}, webAgendaMax)
		if err != nil {
			writeCalResult(w, r, nil, err)
			return
		}
		// The Agenda page names the components of the user's files that
		// were skipped or repaired, so nothing is dropped without a word.
		ws, total, err := c.Store.Warnings(r.Context(), agendaWarningsMax)
		writeCalResult(w, r, struct {
			calendar.Agenda
			Warnings      []calendar.FileWarning `json:"warnings,omitempty"`
			WarningsTotal int                    `json:"warnings_total,omitempty"`
		}{ag, ws, total}, err)
	})
	mux.HandleFunc("GET /api/calendar/search", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res, err := c.Deps.Search(r.Context(), caltools.SearchArgs{Query: q.Get("q"), From: q.Get("from"), To: q.Get("to"),
			Calendars: splitList(q.Get("calendars")), Attendee: q.Get("attendee")})
		writeCalResult(w, r, res, err)
	})
	mux.HandleFunc("GET /api/calendar/ops", func(w http.ResponseWriter, r *http.Request) {
		ops, err := c.Writer.List(r.Context(), r.URL.Query().Get("state"), 100)
		writeCalResult(w, r, map[string]any{"operations": ops}, err)
	})
	mux.HandleFunc("GET /api/calendar/free", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		minutes, _ := strconv.Atoi(q.Get("min"))
		res, err := c.Deps.Free(r.Context(), caltools.FreeArgs{From: q.Get("from"), To: q.Get("to"), Calendars: splitList(q.Get("calendars")), MinMinutes: minutes})
		writeCalResult(w, r, res, err)
	})
}

// agendaWarningsMax caps the file warnings one agenda answer names.
const agendaWarningsMax = 20

// webAgendaMax caps one agenda answer to the web UI (a busy week).
const webAgendaMax = 5000

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func writeCalResult(w http.ResponseWriter, r *http.Request, v any, err error) {
	if errors.Is(err, calendar.ErrBadQuery) {
		err = httpjson.Invalid(err)
	}
	httpjson.Respond(w, r, http.StatusOK, v, err)
}
