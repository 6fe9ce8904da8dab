package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/slack"
	"github.com/hestia-dev/hestia/internal/config"
)

// slackChannel builds the Slack channel from [channels.slack]: Socket Mode
// (app token) by default, the Events API (signing secret) as an option.
func (a *App) slackChannel() channelBuilder {
	c := a.Config.Channels.Slack
	return channelBuilder{
		key: "channels.slack", label: "Slack", enabled: c.Enabled(), owners: c.Owners, contacts: c.Contacts,
		build: func(ctx context.Context) (channels.Platform, error) {
			bot, err := readSecret("channels.slack.token", c.Token, c.TokenFile)
			if err != nil {
				return nil, err
			}
			cfg := slack.Config{Name: "slack", APIURL: c.APIURL, BotToken: bot, Mode: c.Mode, Clock: a.Now}
			// Only the secret the mode uses is read: the other may be unset.
			if c.Mode == config.SlackModeEvents {
				cfg.SigningSecret, err = readSecret("channels.slack.signing_secret", c.SigningSecret, c.SigningSecretFile)
			} else {
				cfg.AppToken, err = readSecret("channels.slack.app_token", c.AppToken, c.AppTokenFile)
			}
			if err != nil {
				return nil, err
			}
			return slack.New(cfg, nil, a.Log)
		},
	}
}
