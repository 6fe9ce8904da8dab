package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Receive delivers updates to h until ctx ends: over Socket Mode
// connections, reconnecting at once when Slack asks to; in Events API
// mode it lends h to the routes and waits.
func (a *Adapter) Receive(ctx context.Context, h channels.Handler) error {
	me, err := a.identity(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("slack: learning the bot's identity: %w", err)
	}
	if a.cfg.Mode == ModeEvents {
		plan := a.cu.Plan(ctx, catchUpConvs)
		a.mu.Lock()
		a.recv = &receiver{ctx: ctx, h: h}
		a.mu.Unlock()
		// Deliveries are taken meanwhile (Slack gives up on a slow
		// answer); the relay's dedupe drops a message that comes both ways.
		a.catchUp(ctx, me, plan, h)
		<-ctx.Done()
		a.mu.Lock()
		a.recv = nil
		a.mu.Unlock()
		return nil
	}
	for {
		start := time.Now()
		err := a.socket(ctx, me, h)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, errReconnect) {
			return err
		}
		a.log.Info("slack socket mode: reconnecting as Slack asked", "err", err)
		if time.Since(start) < minConnection {
			// Slack asking again and again at once must not become a
			// busy loop of connections.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(minConnection):
			}
		}
	}
}

// minConnection is the least time between two connections Slack asked for.
const minConnection = time.Second

// errReconnect ends a Socket Mode connection Slack is about to close.
var errReconnect = errors.New("slack socket mode: Slack asked for a new connection")

// Socket Mode limits.
const (
	// maxEnvelope bounds one WebSocket message (a message event with a
	// 40,000-character text and its blocks fits several times).
	maxEnvelope = 1 << 20
	// ackTimeout bounds writing one acknowledgement.
	ackTimeout = 10 * time.Second
	// dialTimeout bounds opening a connection.
	dialTimeout = 30 * time.Second
)

// envelope is one Socket Mode message
// (https://api.slack.com/apis/socket-mode#events).
type envelope struct {
	Type       string          `json:"type"` // hello, disconnect, events_api, interactive, slash_commands
	EnvelopeID string          `json:"envelope_id"`
	Reason     string          `json:"reason"` // of a disconnect
	Payload    json.RawMessage `json:"payload"`
}

// parseEnvelope decodes one Socket Mode message.
func parseEnvelope(data []byte) (envelope, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return envelope{}, malformed("socket message is not a JSON object: %v", err)
	}
	if env.Type == "" {
		return envelope{}, malformed("socket message has no type")
	}
	return env, nil
}

// socket runs one Socket Mode connection. Envelopes are handled one at a
// time, in order, by a worker while this goroutine keeps reading (so
// pings are answered during a slow turn); each is acknowledged after the
// Handler returns, so one cut off by a crash is delivered again. The
// worker first catches up on what was posted while no connection was
// open: the connection is open by then, so nothing posted in between is
// missed, and what arrives both ways is handled once by the relay.
func (a *Adapter) socket(ctx context.Context, me identity, h channels.Handler) error {
	plan := a.cu.Plan(ctx, catchUpConvs)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	wsURL, err := a.api.connectionsOpen(dctx, a.cfg.AppToken)
	if err != nil {
		return err
	}
	conn, resp, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{HTTPClient: a.ws})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		// The URL holds a one-time ticket: the error names neither.
		return fmt.Errorf("slack socket mode: connecting (HTTP %d): %w", status, redact(err))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxEnvelope)

	cctx, stop := context.WithCancel(ctx)
	defer stop()
	work := make(chan envelope, 16)
	done := make(chan struct{})
	var dead atomic.Bool // the connection failed: its queued envelopes could not be acknowledged
	go func() {
		defer close(done)
		a.catchUp(cctx, me, plan, h)
		for env := range work {
			if dead.Load() {
				// Slack delivers it again on the next connection.
				continue
			}
			a.handleEnvelope(cctx, conn, me, env, h)
		}
	}()
	go a.keepalive(cctx, conn)

	result := a.readSocket(cctx, conn, work)
	dead.Store(!errors.Is(result, errReconnect))
	close(work)
	// Let the worker finish what was read: its acknowledgements still go
	// out on this connection while Slack keeps it open.
	select {
	case <-done:
	case <-ctx.Done():
	}
	conn.Close(websocket.StatusNormalClosure, "")
	return result
}

// readSocket reads messages until the connection ends or Slack asks for a
// new one, queueing envelopes for the worker.
func (a *Adapter) readSocket(ctx context.Context, conn *websocket.Conn, work chan<- envelope) error {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return fmt.Errorf("slack socket mode: reading: %w", err)
		}
		if typ != websocket.MessageText {
			continue
		}
		env, err := parseEnvelope(data)
		if err != nil {
			a.log.Warn("slack socket mode: skipped a message that is not an envelope", "err", err)
			continue
		}
		switch env.Type {
		case "hello":
			a.log.Debug("slack socket mode: connected")
		case "disconnect":
			if env.Reason == "link_disabled" {
				return errors.New("slack socket mode: Slack closed the connection because Socket Mode is off for this app (link_disabled); turn it on under Socket Mode in the app's settings")
			}
			return fmt.Errorf("%w (%s)", errReconnect, env.Reason)
		default:
			if env.EnvelopeID == "" {
				a.log.Warn("slack socket mode: skipped an envelope without an id", "type", env.Type)
				continue
			}
			select {
			case work <- env:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// handleEnvelope hands one envelope's update to h and acknowledges it.
// A malformed payload is logged and acknowledged too: Slack would only
// send it again.
func (a *Adapter) handleEnvelope(ctx context.Context, conn *websocket.Conn, me identity, env envelope, h channels.Handler) {
	in, ok, err := a.parsePayload(me, env)
	if err != nil {
		a.log.Warn("slack socket mode: skipped a malformed envelope", "type", env.Type, "err", err)
	}
	if ok {
		h(ctx, a.complete(ctx, in))
		a.delivered(ctx, in)
	}
	if ctx.Err() != nil {
		// Shutting down: unacknowledged, Slack delivers it again.
		return
	}
	actx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	ack, _ := json.Marshal(map[string]string{"envelope_id": env.EnvelopeID})
	if err := conn.Write(actx, websocket.MessageText, ack); err != nil {
		a.log.Warn("slack socket mode: acknowledging failed; Slack will deliver the envelope again", "err", err)
	}
}

func (a *Adapter) parsePayload(me identity, env envelope) (inbound, bool, error) {
	switch env.Type {
	case "events_api":
		cb, err := parseCallback(env.Payload)
		if err != nil {
			return inbound{}, false, err
		}
		if cb.Type != "event_callback" {
			return inbound{}, false, nil
		}
		return parseEvent(me, cb)
	case "interactive":
		return parseInteraction(env.Payload)
	default:
		// slash_commands and anything newer: acknowledged, not handled.
		return inbound{}, false, nil
	}
}

// keepalive pings the connection; one unanswered ping closes it, which
// ends the read with an error and so this Receive.
func (a *Adapter) keepalive(ctx context.Context, conn *websocket.Conn) {
	t := time.NewTicker(a.pingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			a.log.Warn("slack socket mode: ping unanswered; closing the connection", "err", err)
			conn.CloseNow()
			return
		}
	}
}

// complete adds to an update what needs the network: the sender's name,
// fetching the audio, answering a press.
func (a *Adapter) complete(ctx context.Context, in inbound) channels.Update {
	u := in.u
	if u.SenderName == "" {
		u.SenderName = a.displayName(ctx, u.Sender)
	}
	if f := in.audio; f != nil {
		src := f.URLPrivateDownload
		if src == "" {
			src = f.URLPrivate
		}
		mt := f.Mimetype
		if mt == "" {
			mt = "audio/webm"
		}
		u.Voice = &channels.Voice{Size: f.Size, Mime: mt, Filename: f.Name, Fetch: func(ctx context.Context) ([]byte, error) {
			return a.downloadFile(ctx, src, a.cfg.MaxVoiceBytes, false)
		}}
	}
	for _, f := range in.files {
		src := f.URLPrivateDownload
		if src == "" {
			src = f.URLPrivate
		}
		html := strings.HasPrefix(f.Mimetype, "text/html")
		u.Attachments = append(u.Attachments, channels.Attachment{Name: f.Name, Mime: f.Mimetype, Size: f.Size,
			Fetch: func(ctx context.Context, limit int64) ([]byte, error) { return a.downloadFile(ctx, src, limit, html) }})
	}
	if in.press {
		channel, user, thread := in.ackChannel, in.ackUser, in.ackThread
		u.Action.Ack = func(ctx context.Context, notice string) {
			args := map[string]any{"channel": channel, "user": user, "text": escape(notice)}
			if thread != "" {
				args["thread_ts"] = thread
			}
			if err := a.api.call(ctx, a.cfg.BotToken, "chat.postEphemeral", args, nil); err != nil {
				a.log.Warn("slack: answering a button press failed", "err", err)
			}
		}
	}
	return u
}

// downloadFile fetches a shared file with the bot token, which is only
// ever sent to Slack's file host.
func (a *Adapter) downloadFile(ctx context.Context, src string, max int64, html bool) ([]byte, error) {
	if !a.fileHostAllowed(src) {
		return nil, fmt.Errorf("slack file download: %q is not a Slack file address; the bot token is only sent to files.slack.com", hostOf(src))
	}
	return a.api.download(ctx, a.cfg.BotToken, src, max, html)
}

// fileHostAllowed says whether the bot token may go to a file URL: Slack's
// file host over https, or the configured API host (a test's fake).
func (a *Adapter) fileHostAllowed(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	if u.Scheme == "https" && u.Host == "files.slack.com" {
		return true
	}
	return u.Scheme == a.fileURL.Scheme && u.Host == a.fileURL.Host
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return "?"
}

// The Events API.

// Routes are the Events API's request URL and interactivity request URL
// (none in Socket Mode). Both are public: every delivery is authenticated
// by its signature before anything in it is read.
func (a *Adapter) Routes() []channels.Route {
	if a.cfg.Mode != ModeEvents {
		return nil
	}
	base := "/channels/" + a.cfg.Name
	return []channels.Route{
		{Pattern: "POST " + base + "/events", Handler: http.HandlerFunc(a.serveEvents)},
		{Pattern: "POST " + base + "/interactive", Handler: http.HandlerFunc(a.serveInteractive)},
	}
}

// Signature checks (https://api.slack.com/authentication/verifying-requests-from-slack).
const (
	// maxDelivery bounds a delivery's body.
	maxDelivery = 1 << 20
	// maxSkew is how far a delivery's timestamp may be from now; older
	// deliveries are refused so a captured one cannot be replayed later.
	maxSkew = 5 * time.Minute
)

// Why a delivery was refused.
var (
	errUnsigned     = errors.New("no X-Slack-Signature or X-Slack-Request-Timestamp header")
	errBadTimestamp = errors.New("X-Slack-Request-Timestamp is not a Unix time")
	errStale        = errors.New("X-Slack-Request-Timestamp is more than five minutes from now")
	errBadSignature = errors.New("X-Slack-Signature does not match the body signed with the signing secret")
)

// Verify checks a delivery's v0 signature: HMAC-SHA256 with the signing
// secret over "v0:TIMESTAMP:BODY", compared in constant time, with the
// timestamp within five minutes of now.
func Verify(secret string, now time.Time, h http.Header, body []byte) error {
	ts, sig := h.Get("X-Slack-Request-Timestamp"), h.Get("X-Slack-Signature")
	if ts == "" || sig == "" {
		return errUnsigned
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errBadTimestamp
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxSkew || d < -maxSkew {
		return errStale
	}
	got, err := hex.DecodeString(strings.TrimPrefix(sig, "v0="))
	if err != nil || !strings.HasPrefix(sig, "v0=") {
		return errBadSignature
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errBadSignature
	}
	return nil
}

// readSigned reads and authenticates a delivery, answering the refusal
// itself; ok is false when it did.
func (a *Adapter) readSigned(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxDelivery+1))
	if err != nil {
		http.Error(w, "reading the body failed", http.StatusBadRequest)
		return nil, false
	}
	if len(body) > maxDelivery {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	if err := Verify(a.cfg.SigningSecret, a.cfg.Clock(), r.Header, body); err != nil {
		a.log.Warn("slack events: refused a delivery that is not from Slack", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}

// receiving returns the running Receive's handler and context.
func (a *Adapter) receiving() *receiver {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.recv
}

func (a *Adapter) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, ok := a.readSigned(w, r)
	if !ok {
		return
	}
	cb, err := parseCallback(body)
	if err != nil {
		a.log.Warn("slack events: refused a malformed delivery", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch cb.Type {
	case "url_verification":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, cb.Challenge)
		return
	case "app_rate_limited":
		a.log.Warn("slack events: Slack is dropping events to this app (more than 30,000 an hour)")
	case "event_callback":
		a.deliver(w, r, func(me identity) (inbound, bool, error) { return parseEvent(me, cb) })
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (a *Adapter) serveInteractive(w http.ResponseWriter, r *http.Request) {
	body, ok := a.readSigned(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("payload") == "" {
		err := malformed("interactivity delivery has no payload field")
		a.log.Warn("slack events: refused a malformed delivery", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.deliver(w, r, func(identity) (inbound, bool, error) { return parseInteraction([]byte(form.Get("payload"))) })
}

// deliver parses an authenticated delivery and hands it to the running
// Receive's Handler before answering 200; while none runs it answers 503,
// so Slack delivers it again later.
func (a *Adapter) deliver(w http.ResponseWriter, r *http.Request, parse func(identity) (inbound, bool, error)) {
	rc := a.receiving()
	if rc == nil {
		http.Error(w, "not receiving yet", http.StatusServiceUnavailable)
		return
	}
	a.mu.Lock()
	me := a.id
	a.mu.Unlock()
	in, ok, err := parse(me)
	if err != nil {
		a.log.Warn("slack events: refused a malformed delivery", "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ok {
		// The handler runs under Receive's context, not the request's:
		// Slack hangs up after three seconds, and the turn must not be
		// cut off with it.
		rc.h(rc.ctx, a.complete(rc.ctx, in))
		a.delivered(rc.ctx, in)
	}
	if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
		a.log.Debug("slack events: a delivery Slack repeated", "retry", n, "reason", r.Header.Get("X-Slack-Retry-Reason"))
	}
	w.WriteHeader(http.StatusOK)
}
