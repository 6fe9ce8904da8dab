package llm

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
)

// Timeouts are the separate budgets of one model call. A single deadline
// over the whole request failed local models twice over: a CPU model may
// read a 7,000-token prompt for minutes before its first token, while a
// remote provider that has sent nothing for two minutes is gone.
type Timeouts struct {
	// Connect bounds dialling and the TLS handshake.
	Connect time.Duration
	// FirstToken bounds the wait from sending the request to the first
	// streamed token (text, reasoning or tool call) on a remote endpoint;
	// LocalFirstToken on a loopback or private one.
	FirstToken      time.Duration
	LocalFirstToken time.Duration
	// Idle bounds the silence between two streamed tokens.
	Idle time.Duration
	// Turn bounds the whole call, every fallback attempt and body included.
	Turn time.Duration
}

// The defaults, also config's.
const (
	DefaultConnectTimeout         = 10 * time.Second
	DefaultFirstTokenTimeout      = 2 * time.Minute
	DefaultLocalFirstTokenTimeout = 15 * time.Minute
	DefaultIdleTimeout            = 2 * time.Minute
	DefaultTurnTimeout            = 30 * time.Minute
)

// Config keys the timeout errors name.
const (
	keyConnect         = "llm.connect_timeout"
	keyFirstToken      = "llm.first_token_timeout"
	keyLocalFirstToken = "llm.local_first_token_timeout"
	keyIdle            = "llm.idle_timeout"
	keyTurn            = "llm.turn_timeout"
)

func (t Timeouts) withDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = DefaultConnectTimeout
	}
	if t.FirstToken <= 0 {
		t.FirstToken = DefaultFirstTokenTimeout
	}
	if t.LocalFirstToken <= 0 {
		t.LocalFirstToken = DefaultLocalFirstTokenTimeout
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdleTimeout
	}
	if t.Turn <= 0 {
		t.Turn = DefaultTurnTimeout
	}
	return t
}

// TimeoutsFromConfig reads the [llm] timeout keys.
func TimeoutsFromConfig(c config.LLMConfig) Timeouts {
	return Timeouts{
		Connect:         c.ConnectTimeout.D(),
		FirstToken:      c.FirstTokenTimeout.D(),
		LocalFirstToken: c.LocalFirstTokenTimeout.D(),
		Idle:            c.IdleTimeout.D(),
		Turn:            c.EffectiveTurnTimeout(),
	}
}

// IsLocal reports whether baseURL points at the user's own machine or
// network: a loopback, private (RFC 1918, RFC 4193) or link-local address,
// localhost, a single-label host name (a container or LAN name) or a
// .local/.lan/.home.arpa name. Such endpoints run on hardware the user
// shares with Hestia, so they get the generous first-token budget and the
// priority gate. Names are not resolved: the answer must be cheap and must
// not depend on DNS.
func IsLocal(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()
	}
	switch {
	case host == "localhost", strings.HasSuffix(host, ".localhost"),
		strings.HasSuffix(host, ".local"), strings.HasSuffix(host, ".lan"),
		strings.HasSuffix(host, ".home.arpa"), host == "host.docker.internal",
		!strings.Contains(host, "."):
		return true
	}
	return false
}

// watchdog cancels an attempt's context when the first token or the next
// chunk is late, with an *Error naming the setting to change.
type watchdog struct {
	cancel context.CancelCauseFunc
	idle   time.Duration
	mu     sync.Mutex // guards the fields below
	timer  *time.Timer
	got    bool // a token arrived
	fired  *Error
}

// startWatchdog derives the attempt context. promptTokens and local only
// shape the message of a first-token timeout.
func startWatchdog(parent context.Context, t Timeouts, local bool, promptTokens int) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancelCause(parent)
	w := &watchdog{cancel: cancel, idle: t.Idle}
	d, key := t.FirstToken, keyFirstToken
	if local {
		d, key = t.LocalFirstToken, keyLocalFirstToken
	}
	msg := fmt.Sprintf("No first token within %s (%s).", d, key)
	if local {
		msg = fmt.Sprintf("No first token within %s (%s); a local model reading %s prompt tokens on a CPU can need longer.", d, key, groupThousands(promptTokens))
	}
	w.timer = time.AfterFunc(d, func() { w.fire(&Error{Code: CodeTimeout, Message: msg, Err: context.DeadlineExceeded}) })
	return ctx, w
}

func (w *watchdog) fire(e *Error) {
	w.mu.Lock()
	if w.fired == nil {
		w.fired = e
	}
	w.mu.Unlock()
	w.cancel(e)
}

// token records that output arrived and restarts the idle clock.
func (w *watchdog) token() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired != nil {
		return
	}
	if !w.got {
		w.got = true
		w.timer.Stop()
		idle := w.idle
		w.timer = time.AfterFunc(idle, func() {
			w.fire(&Error{Code: CodeTimeout, Message: fmt.Sprintf("The model stopped streaming: no token for %s (%s).", idle, keyIdle), Err: context.DeadlineExceeded})
		})
		return
	}
	w.timer.Reset(w.idle)
}

// err returns the timeout that fired, if any.
func (w *watchdog) err() *Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

func (w *watchdog) stop() {
	w.mu.Lock()
	w.timer.Stop()
	w.mu.Unlock()
	w.cancel(nil)
}

// groupThousands writes n as 7,100.
func groupThousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
