package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/hestia-dev/hestia/internal/channels"
)

// The gateway protocol: https://discord.com/developers/docs/events/gateway.

// ErrAuth is wrapped by Receive's error when Discord refuses the token.
var ErrAuth = errors.New("discord refused the bot token")

// CloseError is a gateway close that reconnecting cannot fix.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	hint := ""
	switch e.Code {
	case 4004:
		hint = ": authentication failed; check channels.discord.token (Developer Portal → your application → Bot → Reset Token)"
	case 4010, 4011:
		hint = ": sharding is required or invalid; this adapter runs one shard, enough for a personal bot"
	case 4012:
		hint = ": the gateway API version is no longer accepted; update Hestia"
	case 4013:
		hint = ": invalid intents"
	case 4014:
		hint = ": a disallowed intent was requested"
	}
	reason := ""
	if e.Reason != "" {
		reason = fmt.Sprintf(" (%s)", clip(e.Reason, 100))
	}
	return fmt.Sprintf("discord gateway closed with %d%s%s", e.Code, reason, hint)
}

func (e *CloseError) Unwrap() error {
	if e.Code == 4004 {
		return ErrAuth
	}
	return nil
}

// fatalClose says which close codes must not be retried.
func fatalClose(code int) bool {
	switch code {
	case 4004, 4010, 4011, 4012, 4013, 4014:
		return true
	}
	return false
}

// newSessionClose says which close codes end the session: the next
// connection identifies instead of resuming.
func newSessionClose(code int) bool { return code == 4007 || code == 4009 }

// maxFailures is how many connections in a row may fail before Receive
// returns, so the relay logs the trouble and backs off.
const maxFailures = 3

// Receive connects to the gateway and delivers updates to h until ctx
// ends. Drops are resumed here; it returns an error only after repeated
// failures or a close that retrying cannot fix (wrapped as
// channels.Permanent; a refused token also wraps ErrAuth).
func (a *Adapter) Receive(ctx context.Context, h channels.Handler) error {
	q := newQueue()
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		q.run(ctx)
	}()
	// Updates already read are handed over before Receive returns, unless
	// the daemon is stopping.
	defer func() {
		q.close()
		<-workerDone
	}()
	gw, err := a.gatewayURL(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	failures := 0
	for {
		a.mu.Lock()
		target := gw
		resuming := a.sessionID != ""
		if resuming && a.resumeURL != "" {
			target = a.resumeURL
		}
		a.mu.Unlock()
		healthy, err := a.connect(ctx, target, q, h)
		if ctx.Err() != nil {
			return nil
		}
		var ce *CloseError
		if errors.As(err, &ce) {
			a.log.Error("discordGatewayRefused", "code", ce.Code, "err", err)
			return channels.Permanent(err)
		}
		if healthy {
			failures = 0
		} else {
			failures++
		}
		if failures >= maxFailures {
			return fmt.Errorf("discord gateway: %d connections failed in a row: %w", failures, err)
		}
		wait := a.reconnectWait(failures)
		a.log.Info("discordGatewayReconnecting", "reason", err, "after", wait, "failures", failures)
		if !sleep(ctx, wait) {
			return nil
		}
	}
}

// reconnectWait is a random wait below one backoff unit after a healthy
// session (Discord asks reconnects to be spread), doubling per failure.
func (a *Adapter) reconnectWait(failures int) time.Duration {
	unit := a.backoff << min(failures, 5)
	return time.Duration(rand.Int64N(int64(unit)) + 1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// gatewayURL asks where to connect (GET /gateway/bot) and waits out an
// exhausted daily identify allowance (session_start_limit).
func (a *Adapter) gatewayURL(ctx context.Context) (string, error) {
	var info struct {
		URL   string `json:"url"`
		Limit struct {
			Remaining  int   `json:"remaining"`
			ResetAfter int64 `json:"reset_after"`
			Total      int   `json:"total"`
		} `json:"session_start_limit"`
	}
	err := a.do(ctx, request{method: http.MethodGet, path: "/gateway/bot", route: "GET /gateway/bot", op: "get gateway"}, &info)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			return "", channels.Permanent(fmt.Errorf("%w: %w", ErrAuth, err))
		}
		return "", err
	}
	if err := a.checkGatewayURL(info.URL); err != nil {
		return "", err
	}
	a.mu.Lock()
	resumable := a.sessionID != ""
	a.mu.Unlock()
	if info.Limit.Total > 0 && info.Limit.Remaining == 0 && !resumable {
		wait := time.Duration(info.Limit.ResetAfter) * time.Millisecond
		a.log.Warn("discordIdentifyLimitReached", "resetAfter", wait)
		if !sleep(ctx, wait) {
			return "", ctx.Err()
		}
	}
	return info.URL, nil
}

// checkGatewayURL refuses a gateway that is not wss:// — the token is sent
// there — unless the API root itself is plain HTTP (a test fake).
func (a *Adapter) checkGatewayURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return fmt.Errorf("discord gateway: %q is not a WebSocket URL", clip(raw, 80))
	}
	switch {
	case u.Scheme == "wss":
		return nil
	case u.Scheme == "ws" && a.apiURL.Scheme == "http":
		return nil
	}
	return fmt.Errorf("discord gateway: refusing %q: the token is only sent over wss://", clip(raw, 80))
}

// dialURL adds the version and encoding the adapter speaks.
func dialURL(raw string) string {
	u, _ := url.Parse(raw)
	u.RawQuery = "v=10&encoding=json"
	return u.String()
}

// conn is one gateway connection.
type conn struct {
	a  *Adapter
	ws *websocket.Conn
	q  *queue
	h  channels.Handler
	// acked: the last heartbeat was acknowledged; a beat due while it is
	// false means the connection is a zombie.
	acked  atomic.Bool
	zombie atomic.Bool
	beat   chan struct{} // the gateway asked for a heartbeat now
}

// connect runs one connection until it drops. healthy says it reached
// READY or RESUMED, so the failure count starts over.
func (a *Adapter) connect(ctx context.Context, gw string, q *queue, h channels.Handler) (healthy bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	ws, _, err := websocket.Dial(dctx, dialURL(gw), &websocket.DialOptions{HTTPClient: a.http, HTTPHeader: http.Header{"User-Agent": {userAgent}}})
	cancel()
	if err != nil {
		return false, fmt.Errorf("discord gateway: connecting: %w", redact(err))
	}
	ws.SetReadLimit(maxGatewayMessage)
	c := &conn{a: a, ws: ws, q: q, h: h, beat: make(chan struct{}, 1)}
	// Shutdown closes with 1000, which ends the session (the bot shows
	// offline at once); every other exit drops the TCP connection, which
	// leaves the session resumable.
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-ctx.Done():
			_ = ws.Close(websocket.StatusNormalClosure, "shutting down")
		case <-stopWatch:
		}
	}()
	defer func() {
		close(stopWatch)
		<-watchDone
		_ = ws.CloseNow()
	}()
	return c.run(ctx)
}

func (c *conn) run(ctx context.Context) (healthy bool, err error) {
	a := c.a
	// Reads are not tied to ctx: cancelling a read would drop the
	// connection without the close frame that shutdown sends.
	rctx := context.WithoutCancel(ctx)
	hctx, cancel := context.WithTimeout(rctx, 30*time.Second)
	p, err := c.read(hctx)
	cancel()
	if err != nil {
		return false, err
	}
	if p.Op != opHello {
		return false, fmt.Errorf("discord gateway: expected hello, got opcode %d", p.Op)
	}
	hl, err := parseHello(p.D)
	if err != nil {
		return false, err
	}
	interval := time.Duration(hl.HeartbeatInterval) * time.Millisecond
	c.acked.Store(true)
	hbCtx, stopBeats := context.WithCancel(ctx)
	var beats sync.WaitGroup
	beats.Go(func() { c.heartbeat(hbCtx, interval) })
	defer func() {
		stopBeats()
		beats.Wait()
	}()

	a.mu.Lock()
	sessionID, seq := a.sessionID, a.seq
	a.mu.Unlock()
	if sessionID != "" {
		err = c.send(ctx, opResume, map[string]any{"token": a.token, "session_id": sessionID, "seq": seq})
	} else {
		err = c.identify(ctx)
	}
	if err != nil {
		return false, err
	}
	for {
		p, err := c.read(rctx)
		if err != nil {
			return healthy, err
		}
		switch p.Op {
		case opDispatch:
			if p.S != nil {
				a.mu.Lock()
				a.seq = *p.S
				a.mu.Unlock()
			}
			switch p.T {
			case "READY":
				r, err := parseReady(p.D)
				if err != nil {
					return healthy, err
				}
				if err := a.checkGatewayURL(r.ResumeGatewayURL); err != nil {
					a.log.Warn("discordResumeURLRefused", "err", err)
					r.ResumeGatewayURL = ""
				}
				a.mu.Lock()
				a.sessionID, a.resumeURL, a.botID, a.appID = r.SessionID, r.ResumeGatewayURL, r.User.ID, r.Application.ID
				if a.appID == "" {
					a.appID = r.User.ID
				}
				a.mu.Unlock()
				healthy = true
				a.log.Info("discordGatewayReady", "botID", r.User.ID, "bot", r.User.Username)
				// A new session replays nothing: what was posted
				// meanwhile is fetched, ahead of the session's events.
				h := c.h
				c.q.push(func(ctx context.Context) { a.catchUp(ctx, h) })
			case "RESUMED":
				healthy = true
				a.log.Info("discordGatewayResumed")
			case "MESSAGE_CREATE":
				c.onMessage(p.D)
			case "INTERACTION_CREATE":
				c.onInteraction(p.D)
			}
		case opHeartbeat:
			select {
			case c.beat <- struct{}{}:
			default:
			}
		case opHeartbeatACK:
			c.acked.Store(true)
		case opReconnect:
			return healthy, errors.New("discord gateway: asked to reconnect")
		case opInvalidSession:
			var resumable bool
			_ = json.Unmarshal(p.D, &resumable)
			if resumable {
				return healthy, errors.New("discord gateway: session invalid, resuming on a new connection")
			}
			a.forgetSession()
			// Discord asks for a random 1–5 s before identifying again.
			wait := a.backoff + time.Duration(rand.Int64N(int64(4*a.backoff)+1))
			a.log.Info("discordSessionInvalid", "identifyAfter", wait)
			if !sleep(ctx, wait) {
				return healthy, ctx.Err()
			}
			if err := c.identify(ctx); err != nil {
				return healthy, err
			}
		}
	}
}

// identify starts a new session.
func (c *conn) identify(ctx context.Context) error {
	return c.send(ctx, opIdentify, map[string]any{
		"token":      c.a.token,
		"intents":    intents,
		"properties": map[string]string{"os": "linux", "browser": "hestia", "device": "hestia"},
	})
}

func (a *Adapter) forgetSession() {
	a.mu.Lock()
	a.sessionID, a.resumeURL, a.seq = "", "", 0
	a.mu.Unlock()
}

// read returns the next payload, turning a close into the error that
// decides what happens next.
func (c *conn) read(ctx context.Context) (payload, error) {
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		if c.zombie.Load() {
			return payload{}, errors.New("discord gateway: heartbeat not acknowledged, dropping the connection")
		}
		code := int(websocket.CloseStatus(err))
		var ce websocket.CloseError
		errors.As(err, &ce)
		switch {
		case fatalClose(code):
			return payload{}, &CloseError{Code: code, Reason: ce.Reason}
		case newSessionClose(code):
			c.a.forgetSession()
			return payload{}, fmt.Errorf("discord gateway: session ended (close %d %s)", code, clip(ce.Reason, 100))
		case code > 0:
			return payload{}, fmt.Errorf("discord gateway: closed with %d %s", code, clip(ce.Reason, 100))
		}
		return payload{}, fmt.Errorf("discord gateway: reading: %w", err)
	}
	if typ != websocket.MessageText {
		return payload{}, errors.New("discord gateway: unexpected binary frame (compression was not asked for)")
	}
	return parsePayload(data)
}

func (c *conn) send(ctx context.Context, op int, d any) error {
	data, err := json.Marshal(map[string]any{"op": op, "d": d})
	if err != nil {
		return fmt.Errorf("discord gateway: encoding opcode %d: %w", op, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.ws.Write(wctx, websocket.MessageText, data); err != nil {
		return fmt.Errorf("discord gateway: sending opcode %d: %w", op, err)
	}
	return nil
}

// heartbeat sends opcode 1 every interval, the first after a random part
// of it so that many clients reconnecting at once do not beat together.
// A beat due before the last one was acknowledged means the connection
// is dead though TCP has not noticed: it is dropped (not closed with
// 1000, so the session can be resumed).
func (c *conn) heartbeat(ctx context.Context, interval time.Duration) {
	t := time.NewTimer(time.Duration(rand.Int64N(int64(interval)) + 1))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.beat:
		case <-t.C:
			if !c.acked.Load() {
				c.zombie.Store(true)
				c.a.log.Warn("discordHeartbeatMissed", "interval", interval)
				_ = c.ws.CloseNow()
				return
			}
			t.Reset(interval)
		}
		c.acked.Store(false)
		c.a.mu.Lock()
		seq := c.a.seq
		c.a.mu.Unlock()
		var d any
		if seq > 0 {
			d = seq
		}
		if err := c.send(ctx, opHeartbeat, d); err != nil {
			return
		}
	}
}

// onMessage queues a MESSAGE_CREATE. A malformed one is logged and
// skipped; the connection carries on.
func (c *conn) onMessage(d json.RawMessage) {
	m, err := parseMessage(d)
	if err != nil {
		c.a.log.Warn("discordBadMessage", "err", err)
		return
	}
	c.q.push(func(ctx context.Context) {
		if u, ok := c.a.messageUpdate(ctx, m); ok {
			c.h(ctx, u)
			if u.Private {
				// Only private conversations have chats to catch up.
				c.a.cu.Advance(ctx, u.Conv, m.ID, true)
			}
		}
	})
}

// onInteraction queues a button press. Its answer deadline starts now,
// not when the queue reaches it.
func (c *conn) onInteraction(d json.RawMessage) {
	a := c.a
	in, err := parseInteraction(d)
	if err != nil {
		a.log.Warn("discordBadInteraction", "err", err)
		return
	}
	p := a.newPress(in)
	c.q.push(func(ctx context.Context) {
		u, reason := a.pressUpdate(in, p)
		if reason != "" {
			a.log.Warn("discordPressRefused", "reason", reason, "interactionID", in.ID)
			p.answer(ctx, "This button is not one of mine.")
			return
		}
		if in.Channel == nil {
			u.Private = a.isDM(ctx, u.Conv)
		}
		c.h(ctx, u)
		// The relay may not have answered: Discord still needs a response.
		p.answer(ctx, "")
	})
}

// pressUpdate checks a press against what the bot sent and builds the
// update; reason says why it is refused.
func (a *Adapter) pressUpdate(in interaction, p *press) (channels.Update, string) {
	botID, appID := a.self()
	switch {
	case in.Type != interactionComponent || in.Data == nil:
		return channels.Update{}, fmt.Sprintf("interaction type %d is not a button press", in.Type)
	case in.Data.ComponentType != componentButton:
		return channels.Update{}, fmt.Sprintf("component type %d is not a button", in.Data.ComponentType)
	case appID == "" || in.ApplicationID != appID:
		return channels.Update{}, "the interaction is for another application"
	case in.Message == nil || in.Message.Author == nil || in.Message.Author.ID != botID:
		return channels.Update{}, "the pressed message was not written by the bot"
	case in.ChannelID != "" && in.ChannelID != in.Message.ChannelID:
		return channels.Update{}, "the interaction's channel is not the message's"
	}
	who := in.presser()
	if who == nil {
		return channels.Update{}, "no user pressed"
	}
	approvalID, verb, ok := parseCustomID(in.Data.CustomID)
	if !ok {
		return channels.Update{}, fmt.Sprintf("button payload %q is not an approval", clip(in.Data.CustomID, 100))
	}
	u := channels.Update{
		ID: in.ID, Conv: in.Message.ChannelID, Sender: who.ID, SenderName: who.name(),
		Action: &channels.Action{Ref: in.Message.ChannelID + "/" + in.Message.ID, ApprovalID: approvalID, Verb: verb, Ack: p.answer},
	}
	if in.Channel != nil {
		dm := in.Channel.Type == channelDM && in.GuildID == ""
		a.remember(in.Message.ChannelID, dm)
		u.Private = dm
	}
	return u, ""
}

// press answers one interaction exactly once, within Discord's 3 s: with
// the relay's notice as an ephemeral message when it comes in time, else
// with a deferred update (nothing shown) and the notice as an ephemeral
// follow-up.
type press struct {
	a     *Adapter
	id    string
	token string
	app   string

	mu        sync.Mutex // guards the fields below; held across the HTTP call so the timer and the relay never both respond
	responded bool
	noticed   bool
	timer     *time.Timer
}

func (a *Adapter) newPress(in interaction) *press {
	p := &press{a: a, id: in.ID, token: in.Token, app: in.ApplicationID}
	p.mu.Lock()
	p.timer = time.AfterFunc(a.ackAfter, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.responded {
			p.respondLocked(context.Background(), "")
		}
	})
	p.mu.Unlock()
	return p
}

// answer is Action.Ack: the first non-empty notice is shown to the
// presser; an empty one only makes sure Discord got a response.
func (p *press) answer(ctx context.Context, notice string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	notice = strings.TrimSpace(notice)
	if p.noticed || (notice == "" && p.responded) {
		return
	}
	p.timer.Stop()
	if notice != "" {
		p.noticed = true
	}
	if !p.responded {
		p.respondLocked(ctx, notice)
		return
	}
	if !snowflake(p.app) {
		return
	}
	err := p.a.do(context.WithoutCancel(ctx), request{method: http.MethodPost, path: "/webhooks/" + p.app + "/" + p.token, route: "POST /webhooks/" + p.app,
		op: "follow up button press " + p.id, noAuth: true,
		body: map[string]any{"content": Truncate(notice, MaxMessage), "flags": flagEphemeral, "allowed_mentions": allowedMentions{Parse: []string{}}}}, nil)
	if err != nil {
		p.a.log.Warn("discordPressFollowUpFailed", "err", err)
	}
}

func (p *press) respondLocked(ctx context.Context, notice string) {
	p.responded = true
	body := map[string]any{"type": callbackDeferredUpdate}
	if notice != "" {
		body = map[string]any{"type": callbackMessage, "data": map[string]any{
			"content": Truncate(notice, MaxMessage), "flags": flagEphemeral, "allowed_mentions": allowedMentions{Parse: []string{}},
		}}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := p.a.do(ctx, request{method: http.MethodPost, path: "/interactions/" + p.id + "/" + p.token + "/callback", route: "POST /interactions/callback",
		op: "answer button press " + p.id, noAuth: true, body: body}, nil)
	if err != nil {
		p.a.log.Warn("discordPressAnswerFailed", "err", err)
	}
}

// queue hands updates to the handler in order on one goroutine, so a slow
// handler never stops the connection from reading (heartbeat ACKs would
// go unread and the connection would look dead). It is unbounded: what
// arrives is what one bot's conversations send.
type queue struct {
	mu     sync.Mutex // guards the fields below
	items  []func(context.Context)
	closed bool
	kick   chan struct{}
}

func newQueue() *queue { return &queue{kick: make(chan struct{}, 1)} }

func (q *queue) push(f func(context.Context)) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// run calls the queued functions until the queue is closed and empty, or
// ctx ends.
func (q *queue) run(ctx context.Context) {
	for {
		q.mu.Lock()
		var f func(context.Context)
		if len(q.items) > 0 {
			f, q.items = q.items[0], q.items[1:]
		}
		closed := q.closed
		q.mu.Unlock()
		if f != nil {
			if ctx.Err() != nil {
				return
			}
			f(ctx)
			continue
		}
		if closed {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-q.kick:
		}
	}
}
