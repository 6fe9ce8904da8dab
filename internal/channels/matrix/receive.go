package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Sync tuning.
const (
	// timelineLimit is how many events of a room one sync carries; more
	// are fetched from /messages (fillGap).
	timelineLimit = 50
	// gapPages bounds how far back one gap is filled (pages of 100).
	gapPages = 10
)

// timelineTypes are the only events the adapter reads.
var timelineTypes = [...]string{"m.room.message", "m.reaction", "m.room.encrypted", "m.room.member", "m.room.encryption"}

// syncFilter is the inline filter of every /sync: no presence, account
// data, receipts or typing; a room's timeline carries only the events
// read here; members are lazy-loaded (the member list comes from
// joined_members when it is needed).
func syncFilter() string {
	none := map[string]any{"not_types": []string{"*"}}
	f := map[string]any{
		"presence":     none,
		"account_data": none,
		"room": map[string]any{
			"account_data": none,
			"ephemeral":    none,
			"state":        map[string]any{"types": []string{"m.room.member", "m.room.encryption"}, "lazy_load_members": true},
			"timeline":     map[string]any{"limit": timelineLimit, "types": timelineTypes[:]},
		},
	}
	b, _ := marshal(f)
	return string(b)
}

// Receive long-polls /sync and hands each new message and reaction to h
// until ctx ends.
func (a *Adapter) Receive(ctx context.Context, h channels.Handler) error {
	if err := a.identify(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.loadState()
	filter := syncFilter()
	for ctx.Err() == nil {
		since := a.position()
		resp, err := a.sync(ctx, since, filter)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ra *channels.RetryAfterError
			if errors.As(err, &ra) {
				a.log.Info("matrix: sync rate limited", "channel", a.cfg.Name, "wait", ra.After)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(ra.After):
				}
				continue
			}
			return err
		}
		if err := a.process(ctx, since, resp, h); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// The position is not advanced: the batch is read again, and
			// what was handled is dropped by the relay's deduplication.
			return err
		}
		if ctx.Err() != nil {
			return nil // the batch may be cut short: read it again next time
		}
		a.advance(resp.NextBatch)
	}
	return nil
}

func (a *Adapter) sync(ctx context.Context, since, filter string) (*syncResponse, error) {
	q := url.Values{"filter": {filter}, "timeout": {strconv.FormatInt(a.cfg.PollTimeout.Milliseconds(), 10)}}
	if since != "" {
		q.Set("since", since)
	}
	data, _, err := a.call(ctx, request{op: "syncing", method: http.MethodGet, path: "/_matrix/client/v3/sync", query: q,
		timeout: a.cfg.PollTimeout + 30*time.Second, maxBytes: maxSyncBytes})
	if err != nil {
		return nil, err
	}
	resp, err := parseSync(data)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	return resp, nil
}

// process handles one sync batch: invites, left rooms, then each joined
// room's events in order.
func (a *Adapter) process(ctx context.Context, since string, resp *syncResponse, h channels.Handler) error {
	for _, id := range sortedKeys(resp.Rooms.Invite) {
		if err := a.handleInvite(ctx, id, resp.Rooms.Invite[id]); err != nil {
			return err
		}
	}
	for _, id := range sortedKeys(resp.Rooms.Leave) {
		a.mu.Lock()
		delete(a.rooms, id)
		a.mu.Unlock()
	}
	bot := a.UserID()
	for _, id := range sortedKeys(resp.Rooms.Join) {
		if !validID(id, '!') {
			continue
		}
		jr := resp.Rooms.Join[id]
		for _, ev := range jr.State.Events {
			a.noteState(id, ev)
		}
		evs := jr.Timeline.Events
		if jr.Timeline.Limited && since != "" && jr.Timeline.PrevBatch != "" {
			gap, err := a.fillGap(ctx, id, jr.Timeline.PrevBatch, since)
			if err != nil {
				return err
			}
			evs = append(gap, evs...)
		}
		// Without a position every event is history but those since the
		// adapter started; in a room just joined, so is everything from
		// before the bot was invited.
		cut := joinCut(evs, bot)
		if since == "" {
			cut = max(cut, a.startedAt().UnixMilli())
		}
		for _, ev := range evs {
			if err := a.handleEvent(ctx, id, ev, cut, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinCut is the time before which events are history in a room the bot
// joined in this batch: its invite's time (what was written between the
// invite and the join is meant for the bot), else its join's; 0 when the
// bot did not join here. A join event repeating "join" (a profile change)
// is not a join.
func joinCut(evs []event, bot string) int64 {
	var invite, join int64
	for _, ev := range evs {
		if ev.Type != "m.room.member" || ev.StateKey == nil || *ev.StateKey != bot {
			continue
		}
		switch membership(ev.Content) {
		case "invite":
			if invite == 0 {
				invite = ev.TS
			}
		case "join":
			if membership(ev.Unsigned.PrevContent) != "join" && join == 0 {
				join = ev.TS
			}
		}
	}
	if invite > 0 {
		return invite
	}
	return join
}

// fillGap fetches the events a limited timeline left out, back to the
// previous position, oldest first.
func (a *Adapter) fillGap(ctx context.Context, room, from, to string) ([]event, error) {
	filter, _ := marshal(map[string]any{"types": timelineTypes[:]})
	var back []event
	for page := 0; ; page++ {
		if page == gapPages {
			a.log.Warn("matrix: a room had more new events than are fetched; older ones were skipped", "channel", a.cfg.Name, "room", room)
			break
		}
		q := url.Values{"dir": {"b"}, "from": {from}, "to": {to}, "limit": {"100"}, "filter": {string(filter)}}
		data, _, err := a.call(ctx, request{op: "reading a room's missed messages", method: http.MethodGet,
			path: "/_matrix/client/v3/rooms/" + pathSeg(room) + "/messages", query: q, maxBytes: maxSyncBytes})
		if err != nil {
			return nil, err
		}
		var r messagesResponse
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("matrix: reading a room's missed messages: %w", err)
		}
		back = append(back, r.Chunk...)
		if r.End == "" || len(r.Chunk) == 0 || r.End == from {
			break
		}
		from = r.End
	}
	slices.Reverse(back)
	return back, nil
}

// noteState records what a state event says about a room: a membership
// change makes the member list stale; m.room.encryption marks it
// encrypted (it cannot be turned off).
func (a *Adapter) noteState(room string, ev event) {
	if ev.StateKey == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch ev.Type {
	case "m.room.member":
		a.room(room).members = nil
	case "m.room.encryption":
		a.room(room).encrypted = true
	}
}

// handleEvent turns one timeline event into an update, if it is one.
func (a *Adapter) handleEvent(ctx context.Context, room string, ev event, cut int64, h channels.Handler) error {
	a.noteState(room, ev)
	if ev.StateKey != nil || !validID(ev.EventID, '$') || !validID(ev.Sender, '@') || ev.Sender == a.UserID() {
		return nil
	}
	if ev.TS < cut {
		return nil // history, not a new message
	}
	u := channels.Update{ID: ev.EventID, Conv: room, Sender: ev.Sender}
	switch ev.Type {
	case "m.room.message":
		m, err := decodeMessage(ev.Content)
		if err != nil {
			a.log.Warn("matrix: an unreadable message was skipped", "channel", a.cfg.Name, "room", room, "event", ev.EventID, "err", err)
			return nil
		}
		if m.Skip {
			return nil
		}
		u.Text, u.ReplyTo = m.Text, m.Thread
		if au := m.Audio; au != nil {
			u.Voice = &channels.Voice{Size: au.Size, Mime: au.Mime, Filename: au.Filename,
				Fetch: func(ctx context.Context) ([]byte, error) {
					return a.download(ctx, "downloading a voice note", au.URL, maxMedia)
				}}
		}
		if f := m.File; f != nil {
			u.Attachments = []channels.Attachment{{Name: f.Filename, Mime: f.Mime, Size: f.Size,
				Fetch: func(ctx context.Context, limit int64) ([]byte, error) {
					return a.download(ctx, "downloading a file", f.URL, limit)
				}}}
		}
	case "m.reaction":
		target, verb, ok := decodeReaction(ev.Content)
		if !ok {
			return nil // some other reaction
		}
		u.Action = &channels.Action{Ref: target, Verb: verb}
	case "m.room.encrypted":
		a.mu.Lock()
		a.room(room).encrypted = true
		a.mu.Unlock()
		if a.inviters[ev.Sender] {
			a.noticeEncrypted(ctx, room)
			return nil
		}
		// A stranger's: an empty message, which the relay refuses and
		// audits like any other.
	default:
		return nil
	}
	members, err := a.members(ctx, room)
	if err != nil {
		var pe *channels.PermanentError
		if !errors.As(err, &pe) {
			return err // read the batch again
		}
		// The bot is no longer in the room: nobody reads along with it.
		a.log.Info("matrix: the members of a room could not be read", "channel", a.cfg.Name, "room", room, "err", err)
	}
	if _, ok := members[ev.Sender]; ok {
		u.SenderName = members[ev.Sender]
		_, botIn := members[a.UserID()]
		u.Private = botIn && len(members) == 2
	}
	h(ctx, u)
	return nil
}

// members returns a room's joined members and their display names,
// fetched when not known or stale.
func (a *Adapter) members(ctx context.Context, room string) (map[string]string, error) {
	a.mu.Lock()
	if m := a.room(room).members; m != nil {
		a.mu.Unlock()
		return m, nil
	}
	a.mu.Unlock()
	data, _, err := a.call(ctx, request{op: "reading a room's members", method: http.MethodGet,
		path: "/_matrix/client/v3/rooms/" + pathSeg(room) + "/joined_members", maxBytes: 8 << 20})
	if err != nil {
		return nil, err
	}
	var r struct {
		Joined map[string]struct {
			DisplayName *string `json:"display_name"`
		} `json:"joined"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("matrix: reading a room's members: %w", err)
	}
	m := make(map[string]string, len(r.Joined))
	for id, p := range r.Joined {
		if !validID(id, '@') {
			continue
		}
		name := ""
		if p.DisplayName != nil {
			name = truncate(*p.DisplayName, 100)
		}
		m[id] = name
	}
	a.mu.Lock()
	a.room(room).members = m
	a.mu.Unlock()
	return m, nil
}

// handleInvite accepts an invite from an owner or contact and declines
// any other. A failure that may pass (network, 5xx, rate limit) is
// returned so the batch, and the invite, are read again.
func (a *Adapter) handleInvite(ctx context.Context, room string, inv invitedRoom) error {
	if !validID(room, '!') {
		return nil
	}
	bot := a.UserID()
	inviter, encrypted := "", false
	for _, ev := range inv.InviteState.Events {
		switch {
		case ev.Type == "m.room.member" && ev.StateKey != nil && *ev.StateKey == bot && membership(ev.Content) == "invite":
			inviter = ev.Sender
		case ev.Type == "m.room.encryption":
			encrypted = true
		}
	}
	path := "/_matrix/client/v3/rooms/" + pathSeg(room)
	if inviter == "" || !a.inviters[inviter] {
		a.log.Warn("matrix: declined an invite from someone who is neither an owner nor a contact", "channel", a.cfg.Name, "room", room, "inviter", inviter)
		_, _, err := a.call(ctx, request{op: "declining an invite", method: http.MethodPost, path: path + "/leave", body: map[string]any{}})
		return transient(err)
	}
	if _, _, err := a.call(ctx, request{op: "joining a room", method: http.MethodPost, path: path + "/join", body: map[string]any{}}); err != nil {
		a.log.Warn("matrix: joining a room failed", "channel", a.cfg.Name, "room", room, "inviter", inviter, "err", err)
		return transient(err)
	}
	a.log.Info("matrix: joined a room", "channel", a.cfg.Name, "room", room, "inviter", inviter, "encrypted", encrypted)
	a.mu.Lock()
	r := a.room(room)
	r.members, r.encrypted = nil, r.encrypted || encrypted
	a.mu.Unlock()
	if encrypted {
		a.noticeEncrypted(ctx, room)
	}
	return nil
}

// transient returns err if it may pass on a retry, nil if it never will
// (then the batch moves on).
func transient(err error) error {
	var pe *channels.PermanentError
	if err == nil || errors.As(err, &pe) {
		return nil
	}
	return err
}

// encryptedNotice is posted once per encrypted room (and process).
const encryptedNotice = "🔒 This room is end-to-end encrypted, and I cannot read encrypted messages yet. " +
	"Please talk to me in a room without encryption: create a new room, turn encryption off, and invite me there."

// noticeEncrypted tells an owner or contact, once, that the bot cannot
// read the room. Sent in plain text: the bot has no keys. Best effort.
func (a *Adapter) noticeEncrypted(ctx context.Context, room string) {
	a.mu.Lock()
	r := a.room(room)
	done := r.noticed
	r.noticed = true
	a.mu.Unlock()
	if done {
		return
	}
	c := map[string]any{"msgtype": "m.notice", "body": encryptedNotice, "m.mentions": map[string]any{}}
	day := a.now().UTC().Format("2006-01-02")
	if _, err := a.sendEvent(ctx, "posting the encryption notice", room, "m.room.message", txnID("e2ee", room, day), c); err != nil {
		a.log.Warn("matrix: posting the encryption notice failed", "channel", a.cfg.Name, "room", room, "err", err)
	}
}

// download fetches an mxc:// URI through the authenticated media API
// (the bot's token, to its own homeserver only), at most max bytes.
func (a *Adapter) download(ctx context.Context, op, mxc string, max int64) ([]byte, error) {
	server, media, err := parseMXC(mxc)
	if err != nil {
		return nil, err
	}
	data, _, err := a.call(ctx, request{op: op, method: http.MethodGet,
		path:  "/_matrix/client/v1/media/download/" + pathSeg(server) + "/" + pathSeg(media),
		query: url.Values{"allow_redirect": {"false"}}, maxBytes: max, timeout: 2 * time.Minute})
	return data, err
}

func (a *Adapter) startedAt() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started.IsZero() {
		a.started = a.now()
	}
	return a.started
}

func (a *Adapter) position() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.since
}

// state is the state file's content. The user and homeserver are kept
// with the position: a position of another account or server is void.
type state struct {
	Since      string `json:"since"`
	UserID     string `json:"user_id"`
	Homeserver string `json:"homeserver"`
}

// loadState reads the saved position once.
func (a *Adapter) loadState() {
	a.startedAt()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loaded || a.cfg.StateFile == "" {
		a.loaded = true
		return
	}
	a.loaded = true
	data, err := os.ReadFile(a.cfg.StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var st state
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	switch {
	case err != nil:
		a.log.Warn("matrix: the sync state file is unreadable; starting from now", "channel", a.cfg.Name, "path", a.cfg.StateFile, "err", err)
	case st.UserID != a.userID || st.Homeserver != a.base:
		a.log.Info("matrix: the sync state belongs to another account or server; starting from now", "channel", a.cfg.Name)
	default:
		a.since = st.Since
	}
}

// advance records the position after a batch was handled, in memory and
// in the state file (written whole, then renamed, owner-only).
func (a *Adapter) advance(next string) {
	a.mu.Lock()
	a.since = next
	st := state{Since: next, UserID: a.userID, Homeserver: a.base}
	a.mu.Unlock()
	if a.cfg.StateFile == "" {
		return
	}
	if err := writeState(a.cfg.StateFile, st); err != nil {
		a.log.Warn("matrix: saving the sync position failed; a restart may read some messages again", "channel", a.cfg.Name, "err", err)
	}
}

func writeState(path string, st state) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".matrix-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
