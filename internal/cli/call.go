package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/cli/daemonclient"
	"github.com/hestia-dev/hestia/internal/voice/sipcall"
)

const callUsage = `usage: hestia call [TEXT] [--chat ID] [--wait] [--json]
       hestia call --status [--json]
Rings your phone over SIP ([voice.sip]) and says TEXT when you pick up; then talk with the
assistant (press 1 to approve, 2 to deny what it asks). Without TEXT, a quick call: a new chat
and the greeting. --chat continues a chat; --wait waits for the call to end and prints its
outcome (Ctrl-C hangs up).`

// runCall asks the daemon to call the user.
func runCall(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("call")
	chatID := fs.String("chat", "", "continue this chat (default: a new one)")
	wait := fs.Bool("wait", false, "wait for the call to end and print its outcome")
	status := fs.Bool("status", false, "show the registration and the call in progress")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	text := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if text == "help" {
		fmt.Fprintln(env.Stdout, callUsage)
		return nil
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	// Without [voice.sip] the daemon has no call routes at all.
	notConfigured := func(err error) error {
		var ae *daemonclient.APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Code == "not_found" && strings.Contains(ae.Message, "no such endpoint") {
			return errors.New("calls are not configured: set [voice.sip] number (and the account) in config.toml and restart the daemon")
		}
		return err
	}
	if *status {
		if text != "" || *wait || *chatID != "" {
			return usagef("--status takes no text, --chat or --wait\n%s", callUsage)
		}
		var st sipcall.Status
		if err := c.Do(ctx, "GET", "/api/voice/call", nil, &st); err != nil {
			return notConfigured(err)
		}
		if *asJSON {
			return printJSON(env.Stdout, st)
		}
		printCallStatus(env, st)
		return nil
	}
	var snap sipcall.Snapshot
	switch {
	case text == "" && *chatID != "":
		return usagef("--chat needs the TEXT to say\n%s", callUsage)
	case text == "":
		err = c.Do(ctx, "POST", "/api/voice/quick-call", nil, &snap)
	default:
		err = c.Do(ctx, "POST", "/api/voice/call", map[string]string{"text": text, "chat_id": *chatID}, &snap)
	}
	if err != nil {
		return notConfigured(err)
	}
	if !*wait {
		if *asJSON {
			return printJSON(env.Stdout, snap)
		}
		fmt.Fprintf(env.Stdout, "Calling %s (call %s, chat %s).\n", snap.To, snap.ID, snap.ChatID)
		return nil
	}
	if !*asJSON {
		fmt.Fprintf(env.Stdout, "Calling %s…\n", snap.To)
	}
	path := "/api/voice/calls/" + url.PathEscape(snap.ID)
	state := snap.State
	for snap.State != sipcall.StateEnded {
		select {
		case <-ctx.Done():
			// Interrupted: hang up rather than leave the phone ringing.
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err := c.Do(hctx, "POST", path+"/hangup", nil, &snap)
			cancel()
			if err != nil {
				return fmt.Errorf("hanging up: %w", err)
			}
			if snap.State != sipcall.StateEnded {
				return ctx.Err()
			}
			continue
		case <-time.After(500 * time.Millisecond):
		}
		if err := c.Do(ctx, "GET", path, nil, &snap); err != nil && ctx.Err() == nil {
			return err
		}
		if snap.State != state && snap.State == sipcall.StateAnswered && !*asJSON {
			fmt.Fprintln(env.Stdout, "Answered.")
		}
		state = snap.State
	}
	if *asJSON {
		return printJSON(env.Stdout, snap)
	}
	if snap.Result == nil {
		return fmt.Errorf("the call ended without an outcome")
	}
	fmt.Fprintln(env.Stdout, strings.TrimPrefix(snap.Result.Summary(), "📞 "))
	if snap.Result.Outcome != sipcall.Answered {
		return exitError{1}
	}
	return nil
}

func printCallStatus(env *Env, st sipcall.Status) {
	r := st.Registration
	switch {
	case !r.Registering:
		fmt.Fprintf(env.Stdout, "Calls go to %s without registering.\n", st.To)
	case r.Registered:
		fmt.Fprintf(env.Stdout, "Registered (until %s); calls go to %s.\n", r.Expires.Local().Format("15:04:05"), st.To)
	case r.At.IsZero():
		fmt.Fprintf(env.Stdout, "Registering…; calls go to %s.\n", st.To)
	default:
		fmt.Fprintf(env.Stdout, "Not registered: %s (%s, at %s).\n", r.Error, r.Outcome, r.At.Local().Format("15:04:05"))
	}
	switch in := st.Inbound; {
	case !in.Enabled:
		fmt.Fprintln(env.Stdout, "Calls to Hestia are declined (voice.sip.inbound is off).")
	case !in.LockedUntil.IsZero():
		fmt.Fprintf(env.Stdout, "Calls to Hestia are declined until %s after failed PINs (otherwise from %s).\n", in.LockedUntil.Local().Format("15:04"), strings.Join(in.Numbers, ", "))
	default:
		fmt.Fprintf(env.Stdout, "Calls to Hestia are answered from %s, after the PIN.\n", strings.Join(in.Numbers, ", "))
	}
	if cur := st.Current; cur != nil && cur.Direction == sipcall.Inbound {
		fmt.Fprintf(env.Stdout, "Call %s from %s: %s (chat %s).\n", cur.ID, cur.From, cur.State, cmp.Or(cur.ChatID, "none yet"))
	} else if cur != nil {
		fmt.Fprintf(env.Stdout, "Call %s to %s: %s (chat %s).\n", cur.ID, cur.To, cur.State, cur.ChatID)
	} else {
		fmt.Fprintln(env.Stdout, "No call in progress.")
	}
}
