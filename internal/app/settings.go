package app

import (
	"context"
	"os"

	"github.com/hestia-dev/hestia/internal/settings"
)

// initSettings serves the Settings page's API (daemon only). Saved changes
// are validated like startup and written to config.toml; the components
// read their configuration once, so the page reports which saved keys wait
// for a restart.
func (a *App) initSettings(ctx context.Context) error {
	if a.Server == nil {
		return nil
	}
	env := a.Getenv
	if env == nil {
		env = os.Getenv
	}
	s := &settings.Service{Paths: a.Paths, Env: env, Running: a.Config}
	s.Routes(a.Server.API())
	return nil
}
