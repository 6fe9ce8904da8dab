package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/clisock"
)

// cliSocket serves the daemon's HTTP API — the same handler chain as the
// TCP listener, token included — on the owner-only Unix socket in the data
// folder, where `hestia mail search`, `mail read|thread` and `wiki search`
// ask it (package clisock). Where the socket cannot be made (a data path
// too long for a Unix socket) those commands open the stores themselves,
// as they do when no daemon runs.
func (a *App) cliSocket(ctx context.Context) error {
	log := a.Log.With("component", "clisock")
	err := clisock.Serve(ctx, clisock.Path(a.Paths.Data), a.Server.Handler(), log, a.Config.Server.ShutdownTimeout.D())
	if err != nil && ctx.Err() == nil {
		log.Warn("cliSocketOff", "err", err, "effect", "command-line queries open the stores themselves")
		<-ctx.Done()
	}
	return nil
}
