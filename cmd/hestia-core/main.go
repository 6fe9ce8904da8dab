// Command hestia-core is the whole of Hestia: the daemon and every
// command-line tool. Users run `hestia`, the small front (cmd/hestia), which
// answers the one-shot read-only queries itself and execs this binary,
// installed next to it, for everything else. It only wires: see
// internal/cli.
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
