package fast

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/clisock"
	"github.com/hestia-dev/hestia/internal/clisock/wire"
)

// Answer runs, inside the daemon, a query the front sent on the socket:
// the same command functions, printing into the reply, on the daemon's
// open stores (env.Mail, env.Wiki). Only the read-only queries are taken —
// `mail search|read|thread` and `wiki search`, without global flags; for
// anything else, or a time zone it cannot load, the reply says not handled
// and the front runs the command itself.
func Answer(ctx context.Context, req clisock.Request, env *Env, zones *Zones) clisock.Reply {
	args := req.Args
	if !wire.Answered(args) {
		return clisock.Reply{}
	}
	run := WikiSearch
	if args[0] == "mail" {
		run = MailCommand(args[1])
	}
	zone, err := zones.Load(req.TZ)
	if err != nil {
		return clisock.Reply{}
	}
	var out, errOut bytes.Buffer
	e := *env
	e.Stdin, e.Stdout, e.Stderr, e.Zone = strings.NewReader(""), &out, &errOut, zone
	code := ExitCode(&e, args[0], run(ctx, &e, args[2:]))
	return clisock.Reply{Handled: true, Stdout: out.Bytes(), Stderr: errOut.Bytes(), Code: code}
}

// Zones loads the time zones clients ask in, once each. A client sends its
// TZ variable; an empty one means the system's zone, which is the daemon's
// own unless the daemon was started with TZ set.
type Zones struct {
	mu     sync.Mutex
	loaded map[string]*time.Location
}

// Load returns the zone a client with this TZ value reads dates in.
func (z *Zones) Load(tz string) (*time.Location, error) {
	if tz == os.Getenv("TZ") {
		return time.Local, nil
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if loc, ok := z.loaded[tz]; ok {
		return loc, nil
	}
	var loc *time.Location
	var err error
	switch name := strings.TrimPrefix(tz, ":"); {
	case tz == "":
		var data []byte
		if data, err = os.ReadFile("/etc/localtime"); err == nil {
			loc, err = time.LoadLocationFromTZData("Local", data)
		} else {
			loc, err = time.UTC, nil // as Go does without /etc/localtime
		}
	case strings.HasPrefix(name, "/"):
		var data []byte
		if data, err = os.ReadFile(name); err == nil {
			loc, err = time.LoadLocationFromTZData(name, data)
		}
	default:
		loc, err = time.LoadLocation(name)
	}
	if err != nil {
		return nil, err
	}
	if z.loaded == nil {
		z.loaded = map[string]*time.Location{}
	}
	z.loaded[tz] = loc
	return loc, nil
}
