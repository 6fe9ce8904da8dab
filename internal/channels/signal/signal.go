// Package signal is the Signal channel: a client of a signal-cli daemon's
// JSON-RPC 2.0 interface (newline-delimited JSON over its UNIX socket, or
// a loopback TCP port). Signal has no bot API; the owner registers or
// links a number for the assistant with signal-cli and runs
//
//	signal-cli -a +NUMBER daemon --socket PATH --receive-mode=manual
//
// and Hestia connects as a client. What is supported:
//
//   - Receiving: each connection asks for its own subscription
//     (subscribeReceive), so with --receive-mode=manual signal-cli fetches
//     messages from Signal only while Hestia is connected and nothing is
//     consumed while it is away; in the daemon's automatic mode messages
//     arriving while Hestia is disconnected are lost to it. Text, voice
//     notes (the first audio attachment), other attachments (photos,
//     documents, videos: Update.Attachments) and reactions arrive as
//     updates; sync
//     messages from linked devices, the assistant's own messages, receipts,
//     typing, calls, stories, edits, deletes and body-less updates
//     (profile keys, group changes) are ignored. In a daemon serving
//     several accounts, other accounts' messages are ignored.
//   - Identity: Update.Sender is the sender's number ("+393471234567")
//     when signal-cli knows it, else the account UUID (ACI) for people
//     who hide their number. An owner listed by UUID is matched by UUID
//     even when the number is known, so either form works in owners and
//     contacts; a person who hides their number from the assistant must
//     be listed by UUID. Update.ID is the author's UUID (else number) and
//     the message timestamp, which is how Signal identifies a message.
//   - Conversations: a 1:1 chat's Conv is the other person's id; a group's
//     is "group:" + the base64 group id (Private false; the relay answers
//     there only with a refusal).
//   - Sending: Markdown becomes plain text plus Signal text styles
//     (bold, italic, strikethrough, spoiler, monospace ranges, counted
//     in UTF-16 units as Signal counts them); links become "text (url)".
//     Send returns the message's timestamp, Signal's identity for it.
//     Signal has no idempotency key and signal-cli cannot search what was
//     sent, so a send cut off by a restart is sent again (the relay logs
//     the possible duplicate).
//   - Editing: send with editTimestamp (signal-cli 0.11.10 and later).
//     Signal clients accept at most 10 edits of a message within 24 hours;
//     the adapter keeps count, reserves the last edits for replacing a
//     streamed message with the final reply and for closing a prompt, and
//     refuses edits of messages older than the window (the relay then
//     posts the text anew). Each edit targets the newest revision, as
//     Signal clients do. The counts live in memory: after a restart an
//     old message may get a few edits more than clients show.
//   - Approvals: Signal has no buttons. A prompt's text gains "react 👍 to
//     approve, 👎 to deny" next to the request code; a reaction (👍 ✅
//     approve, 👎 ❌ deny, any skin tone) on the prompt arrives as an
//     Action whose Ref is the prompt's timestamp. Removing a reaction is
//     not a decision.
//   - Voice and files: attachments are fetched with signal-cli's
//     getAttachment method (0.11.5 and later; files up to what one line of
//     its answer holds, about 36 MB); with an older daemon, or for a
//     larger file, from signal-cli's attachments folder when configured
//     (attachments_dir). A file the envelope says is over the relay's
//     limit is not asked for. SendVoice
//     posts audio as an attachment (a data URI).
//   - Errors: signal-cli's error objects become errors naming the method;
//     rate limits (RateLimitException, RATE_LIMIT_FAILURE, a captcha
//     challenge) become RetryAfterError, an unregistered recipient or a
//     request signal-cli refuses becomes Permanent, and a changed safety
//     number is retried with a message saying to run signal-cli trust.
//
// Security: whoever can reach the socket can read and send as the
// number, and whoever serves it can feed Hestia forged messages. On Linux
// the adapter reads the socket's peer credentials and refuses a daemon
// running as anyone but Hestia's own user, root (socket activation) or
// the configured daemon user. The TCP port has no authentication at all,
// so only loopback addresses are accepted, and any local user could
// impersonate the daemon there: prefer the socket. Message content is
// never logged.
//
// Not supported: typing indicators, quotes and mentions, stickers, polls,
// and Signal usernames as identities.
package signal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Config is what the adapter needs, as plain values.
type Config struct {
	// Name is the channel's configured name ("signal").
	Name string
	// Account is the assistant's own number ("+15550001111").
	Account string
	// Socket is signal-cli's UNIX socket; Address its loopback TCP
	// address. Exactly one is set (unless Dial is).
	Socket  string
	Address string
	// PeerUIDs are the users besides Hestia's own and root that may
	// serve the socket (the daemon user).
	PeerUIDs []int
	// Identities are the ids listed in owners and contacts, so a sender
	// listed by UUID is reported by UUID.
	Identities []string
	// AttachmentsDir is signal-cli's attachments folder, read only when
	// the daemon lacks getAttachment or a file is too large for it.
	AttachmentsDir string
	// Dial replaces dialing Socket or Address (tests).
	Dial func(ctx context.Context) (net.Conn, error)
	// CallTimeout bounds one call (default 90s: a send to a large group
	// takes a while).
	CallTimeout time.Duration
	// ConnectWait is how long a send waits for a connection that is
	// being made (default 5s); after it, the send fails and is retried.
	ConnectWait time.Duration
	// Clock is the time source (default time.Now).
	Clock func() time.Time
}

// Edits: Signal clients show at most maxEdits edits of a message, made
// within editWindow of sending it (the margin covers clock skew).
const (
	maxEdits       = 10
	replaceReserve = 2 // kept for the final reply and a prompt's outcome
	editWindow     = 24*time.Hour - 10*time.Minute
)

// Adapter is the Signal channels.Platform.
type Adapter struct {
	cfg  Config
	log  *slog.Logger
	ids  identities
	dial func(ctx context.Context) (net.Conn, error)
	peer func(*net.UnixConn) (int, error) // who serves the socket (tests stand in)

	mu        sync.Mutex // guards the fields below
	conn      *rpcConn   // the receiving connection; nil while there is none
	connected chan struct{}
	edits     map[int64]*editState // by the original message's timestamp
	revs      map[int64]int64      // a revision's timestamp → the original's
}

// editState is what the adapter knows of one sent message's edits.
type editState struct {
	key    string // the Outgoing.Key it was sent with
	latest int64  // the newest revision's timestamp
	count  int
}

var (
	_ channels.Platform    = (*Adapter)(nil)
	_ channels.VoiceSender = (*Adapter)(nil)
	_ channels.Checker     = (*Adapter)(nil)
)

// New builds an adapter; it connects when Receive is called.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		cfg.Name = "signal"
	}
	if !numberRe.MatchString(cfg.Account) {
		return nil, fmt.Errorf("signal: the account %q is not a number in international format with +", cfg.Account)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 90 * time.Second
	}
	if cfg.ConnectWait <= 0 {
		cfg.ConnectWait = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	a := &Adapter{cfg: cfg, log: log, ids: newIdentities(cfg.Identities), dial: cfg.Dial, peer: peerUID,
		connected: make(chan struct{}), edits: map[int64]*editState{}, revs: map[int64]int64{}}
	if a.dial == nil {
		var d net.Dialer
		switch {
		case cfg.Socket != "" && cfg.Address != "":
			return nil, errors.New("signal: set the socket or the address, not both")
		case cfg.Socket != "":
			a.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", cfg.Socket) }
		case cfg.Address != "":
			if !loopback(cfg.Address) {
				return nil, fmt.Errorf("signal: %s is not a loopback address; signal-cli's TCP port has no authentication", cfg.Address)
			}
			a.dial = func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", cfg.Address) }
		default:
			return nil, errors.New("signal: neither signal-cli's socket nor its address is set")
		}
	}
	return a, nil
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Name is the channel's configured name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Kind is "signal".
func (a *Adapter) Kind() string { return "signal" }

// Limits: edits (rationed, see the package doc), reactions, no buttons,
// no idempotent sends.
func (a *Adapter) Limits() channels.Limits {
	return channels.Limits{MaxText: splitAt, Edit: true, EditInterval: 3 * time.Second, Reactions: true}
}

func (a *Adapter) where() string {
	if a.cfg.Socket != "" {
		return a.cfg.Socket
	}
	if a.cfg.Address != "" {
		return a.cfg.Address
	}
	return "the configured dialer"
}

// connect dials the daemon and checks who serves the socket.
func (a *Adapter) connect(ctx context.Context) (*rpcConn, error) {
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, err := a.dial(dctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to signal-cli at %s (is the daemon running?): %w", a.where(), err)
	}
	if uc, ok := c.(*net.UnixConn); ok {
		uid, err := a.peer(uc)
		if err == nil && !a.allowedPeer(uid) {
			err = fmt.Errorf("the socket is served by uid %d, not by this user, root or channels.signal.daemon_user", uid)
		}
		if err != nil && !errors.Is(err, errNoPeerCreds) {
			_ = c.Close()
			a.log.Error("refusing signal-cli's socket: another user may be impersonating the daemon", "socket", a.cfg.Socket, "err", err)
			return nil, fmt.Errorf("signal-cli socket %s refused: %w", a.cfg.Socket, err)
		}
	}
	return newRPCConn(c, a.log), nil
}

func (a *Adapter) allowedPeer(uid int) bool {
	if uid == os.Getuid() || uid == 0 {
		return true
	}
	for _, u := range a.cfg.PeerUIDs {
		if u == uid {
			return true
		}
	}
	return false
}

func (a *Adapter) setConn(rc *rpcConn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conn = rc
	select {
	case <-a.connected: // already open (a second Receive; not the relay's way)
	default:
		close(a.connected)
	}
}

func (a *Adapter) clearConn(rc *rpcConn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == rc {
		a.conn = nil
		a.connected = make(chan struct{})
	}
}

// errNotConnected: calls go over the receiving connection (a second one
// would also be handed messages, which it could only drop), and there is
// none right now.
var errNotConnected = errors.New("not connected to signal-cli (the channel reconnects on its own)")

// call makes one call over the receiving connection, waiting a moment for
// one being made.
func (a *Adapter) call(ctx context.Context, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	wait := time.NewTimer(a.cfg.ConnectWait)
	defer wait.Stop()
	for {
		a.mu.Lock()
		rc, connected := a.conn, a.connected
		a.mu.Unlock()
		if rc != nil {
			return rc.call(ctx, method, params, out)
		}
		select {
		case <-connected:
		case <-ctx.Done():
			return fmt.Errorf("signal-cli %s: %w", method, ctx.Err())
		case <-wait.C:
			return fmt.Errorf("signal-cli %s: %w", method, errNotConnected)
		}
	}
}

// Check is the connection test: signal-cli answers version and, in a
// daemon serving several accounts (signal-cli daemon without -a),
// listAccounts, which must include the configured account. Both only read.
// It uses the receiving connection when there is one and otherwise a
// short one of its own that subscribes to nothing, so no message is taken
// from the daemon. A single-account daemon (signal-cli -a NUMBER daemon)
// has no listAccounts and does not say which number it serves; its
// messages name it, and Receive warns when it is another. Errors name the
// setting to fix.
func (a *Adapter) Check(ctx context.Context) (string, error) {
	a.mu.Lock()
	rc := a.conn
	a.mu.Unlock()
	if rc == nil {
		var err error
		if rc, err = a.connect(ctx); err != nil {
			return "", fmt.Errorf("%w (check channels.signal.socket or channels.signal.address, and that signal-cli runs as a daemon)", err)
		}
		defer rc.close()
		stop := context.AfterFunc(ctx, rc.close)
		defer stop()
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := rc.call(ctx, "version", nil, &v); err != nil {
		return "", fmt.Errorf("%w (is %s signal-cli's JSON-RPC socket?)", err, a.where())
	}
	via := "signal-cli"
	if v.Version != "" {
		via += " " + v.Version
	}
	var accounts []struct {
		Number string `json:"number"`
	}
	err := rc.call(ctx, "listAccounts", nil, &accounts)
	var re *RPCError
	if errors.As(err, &re) && re.Code == codeMethodNotFound {
		return fmt.Sprintf("%s via %s (single-account daemon)", a.cfg.Account, via), nil
	}
	if err != nil {
		return "", err
	}
	var numbers []string
	for _, acct := range accounts {
		if acct.Number == a.cfg.Account {
			return fmt.Sprintf("%s via %s", a.cfg.Account, via), nil
		}
		numbers = append(numbers, acct.Number)
	}
	if len(numbers) == 0 {
		return "", fmt.Errorf("%s at %s has no registered account; register or link %s with signal-cli (channels.signal.account)", via, a.where(), a.cfg.Account)
	}
	return "", fmt.Errorf("%s at %s serves %s but not %s; check channels.signal.account, or register or link that number with signal-cli",
		via, a.where(), strings.Join(numbers, ", "), a.cfg.Account)
}

// Receive connects, subscribes to the account's messages and hands them
// to h until ctx ends (nil) or the connection does (an error: the relay
// calls Receive again, which reconnects).
func (a *Adapter) Receive(ctx context.Context, h channels.Handler) error {
	rc, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer rc.close()
	stop := context.AfterFunc(ctx, rc.close)
	defer stop()
	a.setConn(rc)
	defer a.clearConn(rc)
	sub, err := a.subscribe(ctx, rc)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.log.Info("connected to signal-cli", "channel", a.cfg.Name, "at", a.where())
	var foreign bool
	for {
		for _, p := range rc.drain() {
			if ctx.Err() != nil {
				return nil
			}
			a.dispatch(ctx, p, sub, h, &foreign)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-rc.wake:
		case <-rc.done:
			for _, p := range rc.drain() {
				if ctx.Err() != nil {
					return nil
				}
				a.dispatch(ctx, p, sub, h, &foreign)
			}
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("receiving from signal-cli at %s: %w", a.where(), rc.failure())
		}
	}
}

// subscribe asks for the account's messages on this connection. A daemon
// too old for subscribeReceive delivers on its own (nil subscription).
func (a *Adapter) subscribe(ctx context.Context, rc *rpcConn) (*int, error) {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	var id int
	err := rc.call(cctx, "subscribeReceive", map[string]any{"account": a.cfg.Account}, &id)
	var re *RPCError
	if errors.As(err, &re) && re.Code == codeMethodNotFound {
		a.log.Info("signal-cli has no subscribeReceive; relying on its automatic delivery", "channel", a.cfg.Name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s's messages: %w", a.cfg.Account, err)
	}
	return &id, nil
}

// dispatch turns one notification into an update for h.
func (a *Adapter) dispatch(ctx context.Context, params []byte, sub *int, h channels.Handler, foreign *bool) {
	ev, err := parseNotification(params, a.cfg.Account, a.ids)
	if err != nil {
		a.log.Warn("a message from signal-cli could not be read; skipped", "channel", a.cfg.Name, "err", err)
		return
	}
	if ev.Account != "" && ev.Account != a.cfg.Account {
		if !*foreign {
			*foreign = true
			a.log.Warn("signal-cli delivers messages for another account; they are ignored (check channels.signal.account)",
				"channel", a.cfg.Name, "daemonAccount", ev.Account)
		}
		return
	}
	if sub != nil && ev.Sub != nil && *ev.Sub != *sub {
		return // the daemon's automatic delivery, beside our subscription
	}
	if ev.Skip != "" {
		a.log.Debug("signal message ignored", "channel", a.cfg.Name, "why", ev.Skip)
		return
	}
	u := ev.Update
	if ev.Voice != nil {
		att, sender, group := *ev.Voice, u.Sender, ev.GroupID
		u.Voice.Fetch = func(ctx context.Context) ([]byte, error) {
			return a.fetchAttachment(ctx, "fetching a voice note", att, sender, group, maxAttachment)
		}
	}
	for i, att := range ev.Files {
		sender, group := u.Sender, ev.GroupID
		u.Attachments[i].Fetch = func(ctx context.Context, limit int64) ([]byte, error) {
			return a.fetchAttachment(ctx, "fetching an attachment", att, sender, group, limit)
		}
	}
	if u.Action != nil {
		// A reaction to a revision of a message counts for the message.
		a.mu.Lock()
		if orig, ok := a.revs[ev.Target]; ok {
			u.Action.Ref = strconv.FormatInt(orig, 10)
		}
		a.mu.Unlock()
	}
	h(ctx, u)
}

// attachmentIDRe is what a stored attachment's name looks like; the id
// comes from the sender's client, so it is checked before it names a file.
var attachmentIDRe = lazyre.New(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$`)

// maxAttachment bounds a voice note read from disk.
const maxAttachment = 32 << 20

// maxRPCAttachment is the largest file getAttachment can hand over: its
// base64 must fit in one line from signal-cli (maxLine).
const maxRPCAttachment = (maxLine - 4096) / 4 * 3

// fetchAttachment gets an attachment's bytes from signal-cli (or its
// attachments folder, from a daemon too old for getAttachment), at most
// max bytes: a file the envelope says is larger is not asked for.
func (a *Adapter) fetchAttachment(ctx context.Context, op string, att attachment, sender, group string, max int64) ([]byte, error) {
	if !attachmentIDRe.MatchString(att.ID) || strings.Contains(att.ID, "..") {
		return nil, fmt.Errorf("signal: refusing attachment id %.60q", att.ID)
	}
	if att.Size > max {
		return nil, fmt.Errorf("signal: %s: %w (%d bytes, at most %d)", op, channels.ErrTooLarge, att.Size, max)
	}
	if att.Size > maxRPCAttachment && a.cfg.AttachmentsDir != "" {
		return readAttachmentFile(a.cfg.AttachmentsDir, att.ID, max)
	}
	if att.Size > maxRPCAttachment {
		return nil, &channels.RefusedError{Reason: fmt.Sprintf("signal-cli hands over files up to %d MB here (set channels.signal.attachments_dir for larger ones)", maxRPCAttachment>>20),
			Err: fmt.Errorf("signal: %s: %d bytes", op, att.Size)}
	}
	params := map[string]any{"account": a.cfg.Account, "id": att.ID}
	if group != "" {
		params["groupId"] = group
	} else {
		params["recipient"] = sender
	}
	var res struct {
		Data string `json:"data"`
	}
	err := a.call(ctx, "getAttachment", params, &res)
	var re *RPCError
	if errors.As(err, &re) && re.Code == codeMethodNotFound && a.cfg.AttachmentsDir != "" {
		return readAttachmentFile(a.cfg.AttachmentsDir, att.ID, max)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if int64(base64.StdEncoding.DecodedLen(len(res.Data))) > max+3 {
		return nil, fmt.Errorf("signal: %s: %w (over %d bytes)", op, channels.ErrTooLarge, max)
	}
	b, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		return nil, fmt.Errorf("signal-cli getAttachment: the data is not base64: %w", err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("signal: %s: %w (over %d bytes)", op, channels.ErrTooLarge, max)
	}
	return b, nil
}

// readAttachmentFile reads a stored attachment, refusing anything but a
// regular file inside dir.
func readAttachmentFile(dir, id string, max int64) ([]byte, error) {
	path := filepath.Join(dir, id)
	info, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("reading an attachment from signal-cli's attachments folder: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("signal: the attachment %s is not a regular file", path)
	}
	if info.Size() > max {
		return nil, fmt.Errorf("signal: the attachment %s is %w (%d bytes, over %d)", path, channels.ErrTooLarge, info.Size(), max)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading an attachment from signal-cli's attachments folder: %w", err)
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max+1))
}

// target adds a conversation's recipient to send params.
func target(conv string, params map[string]any) error {
	if g, ok := strings.CutPrefix(conv, groupPrefix); ok {
		if !groupIDRe.MatchString(g) {
			return channels.Permanent(fmt.Errorf("signal: %.60q is not a group id", g))
		}
		params["groupId"] = g
		return nil
	}
	if !numberRe.MatchString(conv) && !uuidRe.MatchString(conv) {
		return channels.Permanent(fmt.Errorf("signal: %.60q is neither a number nor an account UUID", conv))
	}
	params["recipient"] = []string{conv}
	return nil
}

// promptHint tells how to answer a prompt without typing the code.
func promptHint(p *channels.Prompt) string {
	if p == nil || p.Closed {
		return ""
	}
	if p.Question {
		return "\nOr react 👎 to this message to decline."
	}
	return "\nOr react 👍 to this message to approve, 👎 to deny."
}

// messageParams renders m for conv.
func (a *Adapter) messageParams(conv string, m channels.Outgoing) (map[string]any, error) {
	r := Render(m.Text + promptHint(m.Prompt)).truncate(maxBody)
	if strings.TrimSpace(r.Text) == "" {
		return nil, channels.Permanent(errors.New("signal: nothing to send, the message is empty"))
	}
	params := map[string]any{"account": a.cfg.Account, "message": r.Text}
	if len(r.Spans) > 0 {
		params["textStyle"] = r.Styles()
	}
	if err := target(conv, params); err != nil {
		return nil, err
	}
	return params, nil
}

// send calls send and judges its results.
func (a *Adapter) send(ctx context.Context, params map[string]any) (sendResult, error) {
	var res sendResult
	if err := a.call(ctx, "send", params, &res); err != nil {
		return res, classify(err)
	}
	if err := res.failure(nil); err != nil {
		return res, err
	}
	if res.Timestamp <= 0 {
		return res, errors.New("signal-cli send answered without the message's timestamp")
	}
	return res, nil
}

// Send posts m and returns its timestamp.
func (a *Adapter) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	params, err := a.messageParams(conv, m)
	if err != nil {
		return "", err
	}
	res, err := a.send(ctx, params)
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	a.prune()
	a.edits[res.Timestamp] = &editState{key: m.Key, latest: res.Timestamp}
	a.mu.Unlock()
	return strconv.FormatInt(res.Timestamp, 10), nil
}

// prune forgets messages too old to edit. a.mu is held.
func (a *Adapter) prune() {
	cutoff := a.cfg.Clock().Add(-editWindow - time.Hour).UnixMilli()
	for ts, st := range a.edits {
		if ts < cutoff {
			delete(a.edits, ts)
			delete(a.revs, st.latest)
		}
	}
	for rev, orig := range a.revs {
		if orig < cutoff {
			delete(a.revs, rev)
		}
	}
}

var errStreamEdits = errors.New("signal: this message's streaming edits are used up; the rest are kept for the final text")

// Edit replaces a sent message's text: a send with editTimestamp naming
// its newest revision.
func (a *Adapter) Edit(ctx context.Context, conv, ref string, m channels.Outgoing) error {
	orig, err := strconv.ParseInt(ref, 10, 64)
	if err != nil || orig <= 0 {
		return channels.Permanent(fmt.Errorf("signal: %.40q is not a message timestamp", ref))
	}
	if age := a.cfg.Clock().Sub(time.UnixMilli(orig)); age > editWindow {
		return channels.Permanent(fmt.Errorf("signal: the message is %s old; Signal shows edits only within a day of sending", age.Round(time.Minute)))
	}
	params, err := a.messageParams(conv, m)
	if err != nil {
		return err
	}
	a.mu.Lock()
	st := a.edits[orig]
	if st == nil { // sent before a restart: its edits so far are unknown
		st = &editState{latest: orig}
		a.edits[orig] = st
	}
	// An edit under the key the message was sent with re-renders it as it
	// grows (streaming); one under another key replaces it (the final
	// reply, a prompt's outcome) and may use the reserve.
	stream := st.key != "" && m.Key == st.key
	limit := maxEdits
	if stream {
		limit -= replaceReserve
	}
	if st.count >= limit {
		a.mu.Unlock()
		if stream {
			return errStreamEdits
		}
		return channels.Permanent(fmt.Errorf("signal: the message was edited %d times, Signal's limit", st.count))
	}
	st.count++
	params["editTimestamp"] = st.latest
	a.mu.Unlock()
	res, err := a.send(ctx, params)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		st.count--
		return err
	}
	st.latest = res.Timestamp
	a.revs[res.Timestamp] = orig
	return nil
}

var mimeRe = lazyre.New(`^[a-z0-9][a-z0-9.+-]{0,63}/[a-z0-9][a-z0-9.+-]{0,63}$`)

// SendVoice posts audio as an attachment.
func (a *Adapter) SendVoice(ctx context.Context, conv string, audio []byte, mime string) error {
	mime = strings.ToLower(strings.TrimSpace(strings.SplitN(mime, ";", 2)[0]))
	if !mimeRe.MatchString(mime) {
		mime = "application/octet-stream"
	}
	ext := map[string]string{"audio/ogg": ".ogg", "audio/mpeg": ".mp3", "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/aac": ".aac", "audio/mp4": ".m4a", "audio/opus": ".opus"}[mime]
	params := map[string]any{"account": a.cfg.Account,
		"attachments": []string{"data:" + mime + ";filename=reply" + ext + ";base64," + base64.StdEncoding.EncodeToString(audio)}}
	if err := target(conv, params); err != nil {
		return err
	}
	_, err := a.send(ctx, params)
	return err
}
