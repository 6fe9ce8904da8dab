// Package app is the single wiring package: it builds every component from
// the configuration, registers their routes, background workers and health
// checks, and runs the daemon. Nothing else imports it but the CLI.
//
// A domain wires itself in its own file (llm.go, agent.go, mail.go, …) with
// an init method listed in initializers, in dependency order.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hestia-dev/hestia/internal/actions"
	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/budget"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/lock"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/metrics"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/scheduler"
	"github.com/hestia-dev/hestia/internal/server"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/usage"
	"github.com/hestia-dev/hestia/internal/voice/sipcall"
	"github.com/hestia-dev/hestia/internal/watch"
	"github.com/hestia-dev/hestia/web"
)

// App holds the wired components of one home.
type App struct {
	Paths   config.Paths
	Config  config.Config
	Log     *slog.Logger
	Version string
	Now     func() time.Time
	// Getenv is the environment the configuration was loaded with (the
	// Settings page reports overrides from it); nil means os.Getenv.
	Getenv config.Env

	// Server and Token are set only when the daemon is being served; CLI
	// commands that work on the stores directly build an App without them.
	Server *server.Server
	Token  authtoken.Token

	// LLM (the tier router every model caller uses) and Usage (the usage
	// ledger) are built by initLLM, before the components that need them.
	LLM   *llm.Router
	Usage *usage.Ledger
	// Budget guards every model call; Chat is LLM behind that guard and is
	// what model callers use (budget.go).
	Budget *budget.Guard
	Chat   llm.Client
	// Jobs is the scheduler (daemon only, jobs.go); core is the agent
	// and what it is built from, for the background plane.
	Jobs    *scheduler.Scheduler
	Notify  *notify.Notifier
	Watches *watch.Engine
	Actions *actions.Center
	core    agentCore
	// Devices authenticates paired clients (devices.go); nil unless serving.
	Devices *devices.Registry

	closers []func() error
	sys     checkCache // GET /api/system results, see system.go
	restart restarter  // POST /api/system/restart, see restart.go
	workers []worker
	// workerStates and routes feed GET /api/system and /api/metrics
	// (runtime.go); routes is set only when serving.
	workerStates workerStates
	routes       *metrics.Routes
	checks       []doctor.Check
	// mailStore lists the registered mail folders for the Settings page
	// (set by registerMail; nil when mail is not wired).
	mailStore *mail.Store
	// extraChannels are channels a test plugs in beside the configured ones.
	extraChannels []channelBuilder
	channelsDB    *channels.Store // channels.db, opened by the first channel
	channelRuns   channelRuns     // configured channels by name (channels.go)
	oauth         oauthState      // the [[oauth.accounts]] (oauth.go)

	// sip places the [voice.sip] calls (sip.go); nil when calls are off.
	sip *sipcall.Manager
}

type worker struct {
	name string
	run  func(ctx context.Context) error
}

type initializer struct {
	name string
	init func(ctx context.Context) error
}

// initializers lists every component's wiring, in dependency order. Each
// domain adds one line here and its own file in this package.
func (a *App) initializers() []initializer {
	return []initializer{
		{"system", a.initSystem},
		{"devices", a.initDevices},
		{"llm", a.initLLM},
		{"oauth", a.initOAuth},
		{"scheduler", a.initScheduler},
		{"agent", a.initAgent},
		{"speech", a.initSpeech},
		{"telegram", a.initTelegram},
		{"channels", a.initChannels},
		{"voice", a.initVoice},
		{"sip", a.initSIP},
		{"user-jobs", a.initUserJobs},
		{"notify", a.initNotify},
		{"watch", a.initWatch},
		{"actions", a.initActions},
		{"audit-tail", a.initAuditTail},
		{"metrics", a.initMetrics},
		{"settings", a.initSettings},
	}
}

// env is the environment the configuration was loaded with (Getenv, or
// the process environment).
func (a *App) env() config.Env {
	if a.Getenv != nil {
		return a.Getenv
	}
	return os.Getenv
}

// New returns an App for the home without building components yet.
func New(paths config.Paths, cfg config.Config, log *slog.Logger, version string) *App {
	return &App{Paths: paths, Config: cfg, Log: log, Version: version, Now: time.Now}
}

// OpenStore opens (and migrates) the domain database named by schema and
// closes it when the App closes.
func (a *App) OpenStore(ctx context.Context, schema store.Schema) (*store.DB, error) {
	db, err := store.Open(ctx, a.Paths.DB(schema.Name), schema)
	if err != nil {
		return nil, err
	}
	a.OnClose(db.Close)
	return db, nil
}

// OnClose registers fn to run when the App closes, in reverse order.
func (a *App) OnClose(fn func() error) { a.closers = append(a.closers, fn) }

// AddWorker registers a background worker run for the daemon's lifetime.
// It must return when ctx is cancelled.
func (a *App) AddWorker(name string, run func(ctx context.Context) error) {
	a.workers = append(a.workers, worker{name, run})
}

// AddCheck registers a component health check, shown by doctor and the
// system page.
func (a *App) AddCheck(c doctor.Check) { a.checks = append(a.checks, c) }

// Mux is the authenticated API mux (nil unless serving).
func (a *App) Mux() *http.ServeMux {
	if a.Server == nil {
		return nil
	}
	return a.Server.API()
}

// Init builds every component. Routes are registered only when serving.
func (a *App) Init(ctx context.Context) error {
	for _, in := range a.initializers() {
		if err := in.init(ctx); err != nil {
			return fmt.Errorf("starting %s: %w", in.name, err)
		}
	}
	return nil
}

// Close closes everything opened, newest first.
func (a *App) Close() error {
	var errs []error
	for _, fn := range slices.Backward(a.closers) {
		errs = append(errs, fn())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// Checks returns the foundation checks plus every component's.
func (a *App) Checks() ([]doctor.Check, error) {
	checks := []doctor.Check{
		doctor.HomeWritable(a.Paths.Data),
		doctor.DiskSpace(a.Paths.Data, 1<<30, 100<<20),
	}
	stores, err := doctor.Stores(a.Paths.DBDir())
	if err != nil {
		return nil, err
	}
	checks = append(checks, stores...)
	checks = append(checks, a.auditChainCheck())
	checks = append(checks, a.oauthChecks()...)
	checks = append(checks, a.accountAuthChecks()...)
	checks = append(checks, a.graphChecks()...) // graph.go
	return append(checks, a.checks...), nil
}

// ServeOptions tune Serve for tests.
type ServeOptions struct {
	// Ready, when set, receives the bound address once the daemon accepts
	// connections.
	Ready func(addr net.Addr)
	// LocalPairCode, when set, shows the user the one-time code a browser
	// on this machine must type to pair (server.Options.LocalPairCode).
	LocalPairCode func(server.LocalPairCode)
}

// Serve runs the daemon until ctx is cancelled: takes the home lock, loads
// or creates the token, builds components, serves HTTP and runs workers,
// then shuts everything down in order.
func (a *App) Serve(ctx context.Context, opts ServeOptions) (err error) {
	if err := a.Paths.Ensure(); err != nil {
		return err
	}
	l, err := lock.Acquire(a.Paths.LockFile())
	if err != nil {
		return err
	}
	defer l.Release()
	tok, created, err := authtoken.LoadOrCreate(a.Paths.TokenFile())
	if err != nil {
		return err
	}
	if created {
		a.Log.Info("created auth token", "path", a.Paths.TokenFile())
	}
	a.Token = tok
	a.routes = metrics.NewRoutes()
	a.Server = server.New(server.Options{
		Routes:  a.routes,
		Config:  a.Config.Server,
		Token:   tok,
		Version: a.Version,
		Logger:  a.Log.With("component", "http"),
		UI:      web.Handler(),
		Now:     a.Now,

		LocalPairCode: opts.LocalPairCode,
	})
	defer func() {
		if cerr := a.Close(); cerr != nil {
			a.Log.Error("closing stores", "err", cerr)
			err = errors.Join(err, cerr)
		}
	}()
	if err := a.Init(ctx); err != nil {
		return err
	}
	ln, err := a.Server.Listen()
	if err != nil {
		return err
	}
	// Record where this home's daemon listens, so the CLI dials it rather
	// than whatever holds the configured address (see daemonaddr).
	recPath := filepath.Join(a.Paths.Data, daemonaddr.FileName)
	if err := daemonaddr.Write(recPath, daemonaddr.Record{
		Addr: daemonaddr.DialAddr(ln.Addr()), TLS: a.Config.Server.TLSCert != "", PID: os.Getpid(),
		Home: daemonaddr.Fingerprint(tok), StartedAt: a.Now().UTC(),
	}); err != nil {
		ln.Close()
		return err
	}
	defer os.Remove(recPath)
	if opts.Ready != nil {
		opts.Ready(ln.Addr())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.restart.serving(cancel)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.Server.Serve(gctx, ln) })
	g.Go(func() error { return a.cliSocket(gctx) })
	for _, w := range a.workers {
		g.Go(func() error { return a.runWorker(gctx, w) })
	}
	a.Log.Info("hestia started", "version", a.Version, "data", a.Paths.Data, "addr", ln.Addr().String())
	err = g.Wait()
	a.Log.Info("hestia stopped")
	if err == nil && a.restart.wasRequested() {
		return ErrRestart
	}
	return err
}

// runWorker restarts a crashed worker with backoff rather than taking the
// daemon down; a worker returning an error after ctx ends is normal.
func (a *App) runWorker(ctx context.Context, w worker) error {
	backoff := time.Second
	for {
		a.workerStates.set(w.name, "running", nil, a.Now())
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
				}
			}()
			return w.run(ctx)
		}()
		if ctx.Err() != nil {
			a.workerStates.set(w.name, "stopped", nil, a.Now())
			return nil
		}
		a.workerStates.set(w.name, "restarting", err, a.Now())
		a.Log.Error("worker stopped; restarting", "worker", w.name, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
	}
}
