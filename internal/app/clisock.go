package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/cli/fast"
	"github.com/hestia-dev/hestia/internal/clisock"
)

// cliSocket answers the front's one-shot queries (`hestia mail search`,
// `wiki search`, …) on the daemon's socket, from the stores the daemon has
// open, so a query costs a tiny process and a warm lookup. Where the
// socket cannot be made (a data path too long for a Unix socket) the
// front runs queries itself, as it does when no daemon runs.
func (a *App) cliSocket(ctx context.Context) error {
	log := a.Log.With("component", "clisock")
	env := &fast.Env{Getenv: a.env(), Version: a.Version, Mail: a.cliMail, Wiki: a.cliWiki}
	zones := &fast.Zones{}
	srv := &clisock.Server{Path: clisock.Path(a.Paths.Data), Logger: log, Handler: func(ctx context.Context, req clisock.Request) clisock.Reply {
		return fast.Answer(ctx, req, env, zones)
	}}
	if err := srv.Run(ctx); err != nil && ctx.Err() == nil {
		log.Warn("cliSocketOff", "err", err, "effect", "command-line queries open the stores themselves")
		<-ctx.Done()
	}
	return nil
}
