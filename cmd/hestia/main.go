// Command hestia is the whole of Hestia: the daemon (`hestia serve`) and
// every command-line tool. It only wires: see internal/cli.
package main

import (
	"context"
	"os"

	"github.com/hestia-dev/hestia/internal/cli"
	"github.com/hestia-dev/hestia/internal/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// The OAuth clients a packager builds in (-X main.googleClientID=…, or
// `make dist OAUTH_GOOGLE_CLIENT_ID=…`): accounts without a client_id of
// their own use them; the environment's HESTIA_OAUTH_* win (docs/oauth.md).
var googleClientID, googleClientSecret, microsoftClientID string

func main() {
	env := cli.OSEnv(version)
	env.Getenv = config.WithDefaults(env.Getenv, map[string]string{
		"HESTIA_OAUTH_GOOGLE_CLIENT_ID":     googleClientID,
		"HESTIA_OAUTH_GOOGLE_CLIENT_SECRET": googleClientSecret,
		"HESTIA_OAUTH_MICROSOFT_CLIENT_ID":  microsoftClientID,
	})
	os.Exit(cli.Main(context.Background(), os.Args[1:], env))
}
