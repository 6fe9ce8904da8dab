// Command hestia is the assistant's command line. What people run one
// process at a time — `mail search|read|thread`, `mail import|reconcile`,
// `wiki search`, `version` — is answered here, in a small binary that starts in
// a few milliseconds; every other command is handed to hestia-core,
// installed next to it, by exec (same process, arguments and environment).
// It only wires: see internal/cli/fast and internal/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/hestia-dev/hestia/internal/cli/fast"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if code, ok := fast.Run(context.Background(), os.Args[1:], fast.OSEnv(version)); ok {
		os.Exit(code)
	}
	core, err := fast.CorePath()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hestia: %v\n", err)
		os.Exit(1)
	}
	err = syscall.Exec(core, append([]string{os.Args[0]}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "hestia: starting %s: %v\n", core, err)
	os.Exit(1)
}
