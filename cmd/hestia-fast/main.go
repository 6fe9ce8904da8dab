// Command hestia-fast answers what people run one process at a time —
// `mail search|read|thread`, `mail import|reconcile`, `wiki search`,
// `version` — when the daemon does not: it links the stores but none of
// the model, tool or server code, so it starts in a few milliseconds. The
// front (cmd/hestia) execs it; it execs hestia-core, installed next to it,
// for every other command (same process, arguments and environment).
// It only wires: see internal/cli/fast.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/hestia-dev/hestia/internal/binpath"
	"github.com/hestia-dev/hestia/internal/cli/fast"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if code, ok := fast.Run(context.Background(), os.Args[1:], fast.OSEnv(version)); ok {
		os.Exit(code)
	}
	core, err := binpath.Sibling(binpath.Core)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hestia: %v\n", err)
		os.Exit(1)
	}
	err = syscall.Exec(core, append([]string{os.Args[0]}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "hestia: starting %s: %v\n", core, err)
	os.Exit(1)
}
