package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/whatsapp"
)

// whatsappChannel builds [channels.whatsapp]: the Cloud API adapter. It
// receives by webhook only, so its routes (the subscription handshake and
// the signed deliveries) are served publicly by startChannel.
func (a *App) whatsappChannel() channelBuilder {
	c := a.Config.Channels.WhatsApp
	return channelBuilder{
		key: "channels.whatsapp", label: "WhatsApp", enabled: c.Enabled(), owners: c.Owners, contacts: c.Contacts,
		build: func(ctx context.Context) (channels.Platform, error) {
			token, err := readSecret("channels.whatsapp.token", c.Token, c.TokenFile)
			if err != nil {
				return nil, err
			}
			secret, err := readSecret("channels.whatsapp.app_secret", c.AppSecret, c.AppSecretFile)
			if err != nil {
				return nil, err
			}
			verify, err := readSecret("channels.whatsapp.verify_token", c.VerifyToken, c.VerifyTokenFile)
			if err != nil {
				return nil, err
			}
			return whatsapp.New(whatsapp.Config{
				Name: "whatsapp", APIURL: c.APIURL, APIVersion: c.APIVersion, PhoneNumberID: c.PhoneNumberID,
				Token: token, AppSecret: secret, VerifyToken: verify,
				TemplateName: c.TemplateName, TemplateLanguage: c.TemplateLanguage, TemplateBodyParam: c.TemplateBodyParam,
				MaxVoiceBytes: int64(c.MaxVoiceMB) << 20, Now: a.Now,
			}, nil, a.Log)
		},
	}
}
