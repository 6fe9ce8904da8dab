// Command hestia is the whole of Hestia: the daemon (`hestia serve`) and
// every command-line tool. It only wires: see internal/cli.
package main

import (
	"context"
	"os"

	"github.com/hestia-dev/hestia/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], cli.OSEnv(version)))
}
