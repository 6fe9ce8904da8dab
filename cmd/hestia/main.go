// Command hestia is the assistant's command line, as small as a program
// can be: a read-only query (`mail search|read|thread`, `wiki search`) goes
// to the running daemon over its socket in the data folder (internal/
// clisock/wire), which answers from warm stores; everything else, and every
// query when no daemon runs, is handed by exec (same process, arguments
// and environment) to hestia-fast, installed next to it, which answers the
// one-shot commands itself and hands the rest to hestia-core. It only
// wires.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hestia-dev/hestia/internal/binpath"
	"github.com/hestia-dev/hestia/internal/clisock/wire"
	"github.com/hestia-dev/hestia/internal/homedir"
)

func main() {
	args := os.Args[1:]
	if wire.Answered(args) {
		if dirs, err := homedir.Resolve(os.Getenv); err == nil {
			// A daemon that does not answer in time is left to itself:
			// the query runs here instead.
			rep, err := wire.Ask(wire.Path(dirs.Data), wire.Request{Args: args, TZ: os.Getenv("TZ")}, 30*time.Second)
			if err == nil && rep.Handled {
				os.Stdout.Write(rep.Stdout)
				os.Stderr.Write(rep.Stderr)
				os.Exit(rep.Code)
			}
		}
	}
	next, err := binpath.Sibling(binpath.Fast)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hestia: %v\n", err)
		os.Exit(1)
	}
	err = syscall.Exec(next, append([]string{os.Args[0]}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "hestia: starting %s: %v\n", next, err)
	os.Exit(1)
}
