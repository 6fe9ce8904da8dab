package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/discord"
)

// discordChannel builds [channels.discord]: a bot the owner talks to in a
// direct message, receiving over the gateway (no public URL).
func (a *App) discordChannel() channelBuilder {
	c := a.Config.Channels.Discord
	return channelBuilder{
		key: "channels.discord", label: "Discord", enabled: c.Enabled(), owners: c.Owners, contacts: c.Contacts,
		build: func(ctx context.Context) (channels.Platform, error) {
			token, err := readSecret("channels.discord.token", c.Token, c.TokenFile)
			if err != nil {
				return nil, err
			}
			return discord.New(discord.Config{Name: "discord", Token: token, APIURL: c.APIURL}, nil, a.Log)
		},
	}
}
