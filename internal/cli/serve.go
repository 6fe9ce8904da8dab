package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/logging"
)

func runServe(ctx context.Context, env *Env, args []string) error {
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
	return a.Serve(ctx, app.ServeOptions{})
}
