package config

import (
	"strings"
	"testing"
)

func TestDiscordChannelValidation(t *testing.T) {
	t.Parallel()
	ok := []DiscordChannel{
		defaultDiscord(),
		{Token: "MTEw.Gx.abc", Owners: []string{"80351110224678912"}, APIURL: DefaultDiscordAPIURL},
		{TokenFile: "/run/secrets/discord", Owners: []string{"80351110224678912"}, Contacts: []string{"80351110224678913:chat+approve", "80351110224678914"}},
		{Token: "t.o.k", Owners: []string{"80351110224678912"}, APIURL: "http://127.0.0.1:8080/api/v10"},
	}
	for _, c := range ok {
		if errs := c.validate(); len(errs) != 0 {
			t.Errorf("%+v refused: %v", c, errs)
		}
	}
	for name, tc := range map[string]struct {
		c    DiscordChannel
		want string
	}{
		"no owner":         {DiscordChannel{Token: "t.o.k"}, "channels.discord.owners"},
		"user name":        {DiscordChannel{Token: "t.o.k", Owners: []string{"anna#1234"}}, "17 to 20 digits"},
		"short id":         {DiscordChannel{Token: "t.o.k", Owners: []string{"12345"}}, "Copy User ID"},
		"contact name":     {DiscordChannel{Token: "t.o.k", Owners: []string{"80351110224678912"}, Contacts: []string{"bob:chat"}}, "channels.discord.contacts"},
		"bot prefix":       {DiscordChannel{Token: "Bot MTEw.Gx.abc", Owners: []string{"80351110224678912"}}, `without "Bot "`},
		"relative file":    {DiscordChannel{TokenFile: "discord.token", Owners: []string{"80351110224678912"}}, "absolute path"},
		"plain http":       {DiscordChannel{Token: "t.o.k", Owners: []string{"80351110224678912"}, APIURL: "http://discord.com/api/v10"}, "channels.discord.api_url"},
		"not a url":        {DiscordChannel{Token: "t.o.k", Owners: []string{"80351110224678912"}, APIURL: "discord.com"}, "https URL"},
		"creds in api_url": {DiscordChannel{Token: "t.o.k", Owners: []string{"80351110224678912"}, APIURL: "https://u:p@discord.com/api/v10"}, "channels.discord.api_url"},
	} {
		errs := tc.c.validate()
		var all []string
		for _, e := range errs {
			all = append(all, e.Error())
		}
		if !strings.Contains(strings.Join(all, "\n"), tc.want) {
			t.Errorf("%s: errors %v do not mention %q", name, all, tc.want)
		}
	}
	// The token never appears in an error.
	for _, e := range (DiscordChannel{Token: "Bot SECRET.token", Owners: []string{"80351110224678912"}}).validate() {
		if strings.Contains(e.Error(), "SECRET") {
			t.Errorf("token in %q", e)
		}
	}
}

func TestDiscordChannelFromTOML(t *testing.T) {
	t.Parallel()
	cfg := Default()
	if cfg.Channels.Discord.APIURL != DefaultDiscordAPIURL || cfg.Channels.Discord.Enabled() {
		t.Fatalf("default %+v", cfg.Channels.Discord)
	}
	err := decodeFile([]byte("[channels.discord]\ntoken_file = \"/run/discord\"\nowners = [\"80351110224678912\"]\ncontacts = [\"80351110224678913:chat\"]\n"), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Channels.Discord
	if !d.Enabled() || d.TokenFile != "/run/discord" || d.Owners[0] != "80351110224678912" || d.APIURL != DefaultDiscordAPIURL {
		t.Fatalf("decoded %+v", d)
	}
	if errs := d.validate(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if m := (Config{Channels: ChannelsConfig{Discord: DiscordChannel{Token: "s3cret"}}}).Masked(); m.Channels.Discord.Token == "s3cret" {
		t.Error("token not masked")
	}
}
