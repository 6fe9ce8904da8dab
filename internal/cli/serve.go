package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/logging"
	"github.com/hestia-dev/hestia/internal/server"
	"github.com/hestia-dev/hestia/internal/settings"
)

// runServe runs the daemon; after POST /api/system/restart (hestia
// restart) it has shut down completely and starts itself again.
func runServe(ctx context.Context, env *Env, args []string) error {
	err := serve(ctx, env, args)
	if errors.Is(err, app.ErrRestart) {
		return reexec(env)
	}
	return err
}

func serve(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("serve")
	addr := fs.String("addr", "", "listen address (default from config: 127.0.0.1:4317)")
	level := fs.String("log-level", "", "log level: debug, info, warn, error")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *level != "" {
		env.logLevel = *level
	}
	paths, cfg, err := env.load()
	if err != nil {
		return err
	}
	if *addr != "" {
		cfg.Server.Addr = *addr
		if err := cfg.Validate(); err != nil {
			return usagef("--addr: %v", err)
		}
	}
	if err := paths.Ensure(); err != nil {
		return err
	}
	lvl, err := logging.ParseLevel(cfg.Log.Level)
	if err != nil {
		return err
	}
	log, closer, err := logging.New(logging.Options{
		Level: lvl, Console: env.Stderr, Dir: paths.Logs,
		MaxSizeMB: cfg.Log.MaxSizeMB, MaxBackups: cfg.Log.MaxBackups,
	})
	if err != nil {
		return err
	}
	defer closer.Close()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := app.New(paths, cfg, log, env.Version)
	a.Getenv = env.Getenv
	return a.Serve(ctx, app.ServeOptions{LocalPairCode: func(c server.LocalPairCode) { printLocalPairCode(env.Stdout, c) }, Ready: func(addr net.Addr) {
		// Plain lines on stdout whatever the log format, so `make run`
		// into a pipe or a log still says where to go.
		scheme := "http"
		if cfg.Server.TLSCert != "" {
			scheme = "https"
		}
		fmt.Fprintf(env.Stdout, "Hestia is running: open %s://%s\n", scheme, browsable(addr))
		if !settings.ModelConfigured(cfg) {
			fmt.Fprintln(env.Stdout, "No model is configured: chat will not work until you pick one — the page above opens the setup (or run `hestia setup`), or set HESTIA_LLM_BASE_URL and HESTIA_LLM_MODEL (and HESTIA_LLM_API_KEY) and restart.")
		}
	}})
}

// printLocalPairCode shows the code a browser on this machine must type to
// pair. It goes to this terminal only, never to the log: whoever reads it
// can pair a browser (see server/pairlocal.go).
func printLocalPairCode(w io.Writer, c server.LocalPairCode) {
	agent := ""
	if c.UserAgent != "" {
		agent = " (" + c.UserAgent + ")"
	}
	fmt.Fprintf(w, "Pairing code for the browser at %s%s: %s. Type it on that page within %d minutes; `hestia pair --local` shows it too.\n",
		c.Origin, agent, server.FormatLocalCode(c.Code), int(c.ExpiresAt.Sub(c.CreatedAt).Round(time.Minute).Minutes()))
}

// browsable turns a wildcard bind into an address a browser can open.
func browsable(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
