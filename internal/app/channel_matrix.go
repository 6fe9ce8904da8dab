package app

import (
	"context"
	"path/filepath"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/matrix"
	"github.com/hestia-dev/hestia/internal/config"
)

// matrixChannel builds [channels.matrix]: a bot account on the owner's
// homeserver, receiving by /sync. Invites are accepted from the owners and
// trusted contacts only; the sync position is kept under the data
// directory so a restart answers what was written while it was down.
func (a *App) matrixChannel() channelBuilder {
	c := a.Config.Channels.Matrix
	return channelBuilder{
		key: "channels.matrix", label: "Matrix", enabled: c.Enabled(), owners: c.Owners, contacts: c.Contacts,
		build: func(ctx context.Context) (channels.Platform, error) {
			token, err := readSecret("channels.matrix.token", c.Token, c.TokenFile)
			if err != nil {
				return nil, err
			}
			return matrix.New(matrix.Config{
				Name: "matrix", Homeserver: c.Homeserver, Token: token, Inviters: matrixInviters(c),
				StateFile: filepath.Join(a.Paths.Data, "channels", "matrix-sync.json"), Now: a.Now,
			}, nil, a.Log)
		},
	}
}

// matrixInviters are the user ids whose invites the bot accepts.
func matrixInviters(c config.MatrixChannel) []string {
	out := append([]string(nil), c.Owners...)
	for _, ct := range c.Contacts {
		if id, _, err := config.ParseChannelContact(ct); err == nil {
			out = append(out, id)
		}
	}
	return out
}
