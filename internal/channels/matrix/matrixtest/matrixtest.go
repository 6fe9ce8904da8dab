// Package matrixtest is an in-process fake Matrix homeserver for tests: the
// client-server API endpoints a bot uses, holding rooms, members and
// events the way a homeserver would. It checks the access token (401
// M_MISSING_TOKEN / M_UNKNOWN_TOKEN), serves /sync with since tokens,
// filters (timeline limit and types), long polling, invites and "limited"
// timelines with prev_batch, /rooms/{roomId}/messages for filling gaps,
// joined_members, join and leave, sends with transaction-id idempotency
// (per token and path), reactions (duplicate annotations refused), edits
// (m.replace applied as a client shows them), the 64 KiB event limit
// (413 M_TOO_LARGE), authenticated media download and upload, and rate
// limits on demand (429 M_LIMIT_EXCEEDED with retry_after_ms and
// Retry-After).
//
// Where a real server would accept what a client cannot show (a message
// without a body, formatted_body that is not well-formed HTML of the
// spec's tag set, an edit of someone else's event), the fake refuses it
// with 400 M_BAD_JSON and a message starting "fake:", so such mistakes fail
// tests instead of passing silently.
package matrixtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Identity of the fake.
const (
	Token      = "syt_aGVzdGlh_FAKEtokenNOTreal_0aBc12"
	ServerName = "fake.test"
	Bot        = "@hestia:fake.test"
	// MaxEvent is the homeserver's limit on an event's JSON size.
	MaxEvent = 65536
)

// Event is an event as the fake stores it.
type Event struct {
	Type     string         `json:"type"`
	ID       string         `json:"event_id"`
	Room     string         `json:"room_id"`
	Sender   string         `json:"sender"`
	TS       int64          `json:"origin_server_ts"`
	StateKey *string        `json:"state_key,omitempty"`
	Content  map[string]any `json:"content"`
	Unsigned map[string]any `json:"unsigned,omitempty"`

	pos int64 // stream position
}

type room struct {
	id      string
	members map[string]string // user → membership
	names   map[string]string // user → display name
	events  []*Event
}

type media struct {
	data  []byte
	ctype string
	name  string
}

// Server is the fake homeserver.
type Server struct {
	URL string
	t   testing.TB
	ts  *httptest.Server

	mu       sync.Mutex // guards the fields below
	pos      int64
	nextID   int
	rooms    map[string]*room
	txns     map[string]string // token and path → event id
	media    map[string]media
	throttle map[string][]int // endpoint class → retry_after_ms of the next 429s
	fail     map[string][]int // endpoint class → status of the next failures
	calls    map[string]int
	wake     chan struct{} // closed when an event is added
	token    string
	clock    func() time.Time
	syncs    []string // since of every sync ("" for none)
	filters  []string
}

// New starts a fake homeserver closed with the test.
func New(t testing.TB) *Server {
	s := &Server{t: t, rooms: map[string]*room{}, txns: map[string]string{}, media: map[string]media{},
		throttle: map[string][]int{}, fail: map[string][]int{}, calls: map[string]int{}, wake: make(chan struct{}),
		token: Token, clock: time.Now}
	mux := http.NewServeMux()
	c := "/_matrix/client/v3"
	mux.HandleFunc("GET "+c+"/account/whoami", s.auth("whoami", s.whoami))
	mux.HandleFunc("GET "+c+"/sync", s.auth("sync", s.sync))
	mux.HandleFunc("PUT "+c+"/rooms/{room}/send/{type}/{txn}", s.auth("send", s.send))
	mux.HandleFunc("POST "+c+"/rooms/{room}/join", s.auth("join", s.join))
	mux.HandleFunc("POST "+c+"/join/{room}", s.auth("join", s.join))
	mux.HandleFunc("POST "+c+"/rooms/{room}/leave", s.auth("leave", s.leave))
	mux.HandleFunc("GET "+c+"/rooms/{room}/joined_members", s.auth("joined_members", s.joinedMembers))
	mux.HandleFunc("GET "+c+"/rooms/{room}/messages", s.auth("messages", s.messages))
	mux.HandleFunc("GET /_matrix/client/v1/media/download/{server}/{media}", s.auth("download", s.download))
	mux.HandleFunc("POST /_matrix/media/v3/upload", s.auth("upload", s.upload))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, 404, "M_UNRECOGNIZED", "Unrecognized request")
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	s.URL, s.ts = ts.URL, ts
	return s
}

// Client is an HTTP client for the fake.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// SetClock sets the server's clock (origin_server_ts of new events).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	s.clock = now
	s.mu.Unlock()
}

// RevokeToken makes the server refuse the token (M_UNKNOWN_TOKEN).
func (s *Server) RevokeToken() {
	s.mu.Lock()
	s.token = ""
	s.mu.Unlock()
}

// Throttle makes the next len(retryMS) calls of an endpoint class fail
// with 429 M_LIMIT_EXCEEDED, retry_after_ms taken in turn. Classes: sync,
// send, join, leave, joined_members, messages, download, upload, whoami.
func (s *Server) Throttle(class string, retryMS ...int) {
	s.mu.Lock()
	s.throttle[class] = append(s.throttle[class], retryMS...)
	s.mu.Unlock()
}

// Fail makes the next calls of an endpoint class fail with these HTTP
// statuses (500 M_UNKNOWN, 403 M_FORBIDDEN, …).
func (s *Server) Fail(class string, status ...int) {
	s.mu.Lock()
	s.fail[class] = append(s.fail[class], status...)
	s.mu.Unlock()
}

// Calls reports how many authenticated calls of a class arrived
// (refused ones included).
func (s *Server) Calls(class string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[class]
}

// Syncs returns the since parameter of every sync so far.
func (s *Server) Syncs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.syncs...)
}

// Filters returns the filter parameter of every sync so far.
func (s *Server) Filters() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.filters...)
}

func (s *Server) auth(class string, h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		authz := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(authz, "Bearer ")
		if !ok || tok == "" {
			writeErr(w, 401, "M_MISSING_TOKEN", "Missing access token")
			return
		}
		if r.URL.Query().Has("access_token") {
			s.t.Errorf("matrixtest: the access token was sent in the URL of %s", r.URL.Path)
		}
		s.mu.Lock()
		s.calls[class]++
		valid := s.token != "" && tok == s.token
		var retry, status int
		if q := s.throttle[class]; valid && len(q) > 0 {
			retry, s.throttle[class] = q[0], q[1:]
		} else if q := s.fail[class]; valid && len(q) > 0 {
			status, s.fail[class] = q[0], q[1:]
		}
		s.mu.Unlock()
		switch {
		case !valid:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			json.NewEncoder(w).Encode(map[string]any{"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed.", "soft_logout": false})
		case retry > 0:
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(float64(retry)/1000))))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			json.NewEncoder(w).Encode(map[string]any{"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests", "retry_after_ms": retry})
		case status == 403:
			writeErr(w, 403, "M_FORBIDDEN", "You don't have permission to do that")
		case status != 0:
			writeErr(w, status, "M_UNKNOWN", "Internal server error")
		default:
			h(w, r)
		}
	}
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"errcode": code, "error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"user_id": Bot, "device_id": "FAKEDEVICE", "is_guest": false})
}

// --- building rooms (the test's side) ---

// RoomOptions describes a room to create.
type RoomOptions struct {
	Creator   string
	Members   []string // joined besides the creator
	Names     map[string]string
	Encrypted bool
	// InviteBot: the creator invites the bot; JoinBot: the bot is joined
	// already (invited and joined).
	InviteBot, JoinBot bool
}

// CreateRoom makes a room and returns its id.
func (s *Server) CreateRoom(o RoomOptions) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := fmt.Sprintf("!room%d:%s", s.nextID, ServerName)
	rm := &room{id: id, members: map[string]string{}, names: map[string]string{}}
	s.rooms[id] = rm
	for k, v := range o.Names {
		rm.names[k] = v
	}
	s.addLocked(rm, "m.room.create", o.Creator, ptr(""), map[string]any{"creator": o.Creator, "room_version": "10"})
	for _, u := range append([]string{o.Creator}, o.Members...) {
		s.memberLocked(rm, u, u, "join")
	}
	if o.Encrypted {
		s.addLocked(rm, "m.room.encryption", o.Creator, ptr(""), map[string]any{"algorithm": "m.megolm.v1.aes-sha2"})
	}
	if o.InviteBot || o.JoinBot {
		s.memberLocked(rm, o.Creator, Bot, "invite")
	}
	if o.JoinBot {
		s.memberLocked(rm, Bot, Bot, "join")
	}
	return id
}

func ptr(s string) *string { return &s }

// memberLocked records a membership change as a homeserver does, with
// the previous membership in unsigned.prev_content.
func (s *Server) memberLocked(rm *room, sender, user, membership string) *Event {
	c := map[string]any{"membership": membership}
	if n := rm.names[user]; n != "" {
		c["displayname"] = n
	}
	var unsigned map[string]any
	if prev := rm.members[user]; prev != "" {
		unsigned = map[string]any{"prev_content": map[string]any{"membership": prev}}
	}
	rm.members[user] = membership
	ev := s.addLocked(rm, "m.room.member", sender, ptr(user), c)
	ev.Unsigned = unsigned
	return ev
}

// addLocked appends an event at the next stream position and wakes syncs.
func (s *Server) addLocked(rm *room, typ, sender string, stateKey *string, content map[string]any) *Event {
	s.pos++
	s.nextID++
	ev := &Event{Type: typ, ID: fmt.Sprintf("$ev%d-%s", s.nextID, strings.Repeat("x", 3)), Room: rm.id, Sender: sender,
		TS: s.clock().UnixMilli(), StateKey: stateKey, Content: content, pos: s.pos}
	rm.events = append(rm.events, ev)
	close(s.wake)
	s.wake = make(chan struct{})
	return ev
}

func (s *Server) roomLocked(id string) *room {
	rm := s.rooms[id]
	if rm == nil {
		s.t.Fatalf("matrixtest: no room %s", id)
	}
	return rm
}

// Invite has from invite the bot to a room.
func (s *Server) Invite(roomID, from string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memberLocked(s.roomLocked(roomID), from, Bot, "invite")
}

// Join makes user join a room (or the bot, with Bot).
func (s *Server) Join(roomID, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memberLocked(s.roomLocked(roomID), user, user, "join")
}

// Leave makes user leave a room.
func (s *Server) Leave(roomID, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memberLocked(s.roomLocked(roomID), user, user, "leave")
}

// Membership is user's membership of a room ("" when never a member).
func (s *Server) Membership(roomID, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.roomLocked(roomID).members[user]
}

// Post adds an event from sender (any type) and returns its id.
func (s *Server) Post(roomID, sender, typ string, content map[string]any) string {
	return s.PostAt(roomID, sender, typ, content, time.Time{})
}

// PostAt is Post with an origin_server_ts (zero: now), for history.
func (s *Server) PostAt(roomID, sender, typ string, content map[string]any, at time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.roomLocked(roomID)
	if rm.members[sender] != "join" {
		s.t.Fatalf("matrixtest: %s posts in %s without being joined", sender, roomID)
	}
	ev := s.addLocked(rm, typ, sender, nil, content)
	if !at.IsZero() {
		ev.TS = at.UnixMilli()
	}
	return ev.ID
}

// Say posts an m.text message.
func (s *Server) Say(roomID, sender, text string) string {
	return s.Post(roomID, sender, "m.room.message", map[string]any{"msgtype": "m.text", "body": text})
}

// React posts sender's reaction to an event.
func (s *Server) React(roomID, sender, target, key string) string {
	return s.Post(roomID, sender, "m.reaction", map[string]any{"m.relates_to": map[string]any{"rel_type": "m.annotation", "event_id": target, "key": key}})
}

// SendFile stores data in the media repository and posts it as sender's
// message of msgtype (m.file, m.image, m.video): the body is the caption
// when there is one, else the file name (spec v1.10). It returns the
// event id.
func (s *Server) SendFile(roomID, sender, msgtype string, data []byte, ctype, filename, caption string) string {
	mxc := s.AddMedia(data, ctype)
	c := map[string]any{"msgtype": msgtype, "body": filename, "url": mxc, "info": map[string]any{"mimetype": ctype, "size": len(data)}}
	if caption != "" {
		c["body"], c["filename"] = caption, filename
	}
	return s.Post(roomID, sender, "m.room.message", c)
}

// AddMedia stores a file in the media repository and returns its mxc URI.
func (s *Server) AddMedia(data []byte, ctype string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := fmt.Sprintf("media%d", s.nextID)
	s.media[id] = media{data: data, ctype: ctype}
	return "mxc://" + ServerName + "/" + id
}

// Media returns an uploaded file by its mxc URI.
func (s *Server) Media(mxc string) ([]byte, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.media[strings.TrimPrefix(mxc, "mxc://"+ServerName+"/")]
	return m.data, m.ctype, ok
}

// --- what a client shows (the test's side) ---

// Message is an m.room.message as a client shows it: the latest valid
// edit applied.
type Message struct {
	ID      string
	Sender  string
	MsgType string
	Body    string
	HTML    string // formatted_body, "" when none
	Edits   int
	Content map[string]any // the original content
}

// Messages returns the room's messages (edits folded in) in order.
func (s *Server) Messages(roomID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.roomLocked(roomID)
	var out []Message
	idx := map[string]int{}
	for _, ev := range rm.events {
		if ev.Type != "m.room.message" {
			continue
		}
		if rel, _ := ev.Content["m.relates_to"].(map[string]any); rel["rel_type"] == "m.replace" {
			i, ok := idx[str(rel["event_id"])]
			nc, _ := ev.Content["m.new_content"].(map[string]any)
			if !ok || out[i].Sender != ev.Sender || nc == nil {
				continue
			}
			out[i].Body, out[i].HTML, out[i].MsgType = str(nc["body"]), str(nc["formatted_body"]), str(nc["msgtype"])
			out[i].Edits++
			continue
		}
		idx[ev.ID] = len(out)
		out = append(out, Message{ID: ev.ID, Sender: ev.Sender, MsgType: str(ev.Content["msgtype"]), Body: str(ev.Content["body"]),
			HTML: str(ev.Content["formatted_body"]), Content: ev.Content})
	}
	return out
}

// BotMessages returns the messages the bot sent to a room.
func (s *Server) BotMessages(roomID string) []Message {
	var out []Message
	for _, m := range s.Messages(roomID) {
		if m.Sender == Bot {
			out = append(out, m)
		}
	}
	return out
}

// Reaction is an annotation on an event.
type Reaction struct {
	ID, Sender, Key string
}

// Reactions returns the reactions to an event.
func (s *Server) Reactions(roomID, target string) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Reaction
	for _, ev := range s.roomLocked(roomID).events {
		if rel, _ := ev.Content["m.relates_to"].(map[string]any); ev.Type == "m.reaction" && str(rel["event_id"]) == target {
			out = append(out, Reaction{ID: ev.ID, Sender: ev.Sender, Key: str(rel["key"])})
		}
	}
	return out
}

// Events returns a copy of the room's events of a type ("" for all).
func (s *Server) Events(roomID, typ string) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, ev := range s.roomLocked(roomID).events {
		if typ == "" || ev.Type == typ {
			out = append(out, *ev)
		}
	}
	return out
}

func str(v any) string { s, _ := v.(string); return s }

// --- the API (the bot's side) ---

type filter struct {
	Room struct {
		Timeline struct {
			Limit    *int     `json:"limit"`
			Types    []string `json:"types"`
			NotTypes []string `json:"not_types"`
		} `json:"timeline"`
	} `json:"room"`
}

func (f filter) timelineLimit() int {
	if l := f.Room.Timeline.Limit; l != nil && *l > 0 {
		return min(*l, 100)
	}
	return 10 // Synapse's default
}

func typeAllowed(typ string, types, notTypes []string) bool {
	if slices.Contains(notTypes, typ) || slices.Contains(notTypes, "*") {
		return false
	}
	return types == nil || slices.Contains(types, typ) || slices.Contains(types, "*")
}

func parsePos(tok string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(tok, "s"), 10, 64)
	return n, err == nil && strings.HasPrefix(tok, "s") && n >= 0
}

func (s *Server) sync(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var f filter
	if raw := q.Get("filter"); raw != "" {
		if !strings.HasPrefix(raw, "{") {
			writeErr(w, 400, "M_INVALID_PARAM", "fake: only inline filters are supported")
			return
		}
		if err := json.Unmarshal([]byte(raw), &f); err != nil {
			writeErr(w, 400, "M_INVALID_PARAM", "Invalid filter JSON")
			return
		}
	}
	since := int64(-1)
	if tok := q.Get("since"); tok != "" {
		n, ok := parsePos(tok)
		if !ok {
			writeErr(w, 400, "M_INVALID_PARAM", "Invalid stream token")
			return
		}
		since = n
	}
	timeout := 0
	if t := q.Get("timeout"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			writeErr(w, 400, "M_INVALID_PARAM", "timeout must be a non-negative integer")
			return
		}
		timeout = n
	}
	s.mu.Lock()
	s.syncs = append(s.syncs, q.Get("since"))
	s.filters = append(s.filters, q.Get("filter"))
	s.mu.Unlock()
	deadline := time.After(time.Duration(timeout) * time.Millisecond)
	for {
		s.mu.Lock()
		resp, news := s.syncLocked(since, f)
		wake := s.wake
		s.mu.Unlock()
		if news || since < 0 {
			writeJSON(w, 200, resp)
			return
		}
		select {
		case <-wake:
		case <-deadline:
			writeJSON(w, 200, resp)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// syncLocked builds a sync response for the bot from position since (-1:
// an initial sync).
func (s *Server) syncLocked(since int64, f filter) (map[string]any, bool) {
	limit := f.timelineLimit()
	types, notTypes := f.Room.Timeline.Types, f.Room.Timeline.NotTypes
	join, invite, leave := map[string]any{}, map[string]any{}, map[string]any{}
	news := false
	for _, id := range sortedRooms(s.rooms) {
		rm := s.rooms[id]
		var mine *Event // the bot's latest membership event
		for _, ev := range rm.events {
			if ev.Type == "m.room.member" && ev.StateKey != nil && *ev.StateKey == Bot {
				mine = ev
			}
		}
		if mine == nil {
			continue
		}
		switch rm.members[Bot] {
		case "invite":
			if mine.pos > since {
				invite[id] = map[string]any{"invite_state": map[string]any{"events": s.strippedLocked(rm, mine)}}
				news = true
			}
		case "leave", "ban":
			if since >= 0 && mine.pos > since {
				leave[id] = map[string]any{"timeline": map[string]any{"events": []*Event{mine}}}
				news = true
			}
		case "join":
			var visible []*Event
			newlyJoined := since < 0 || mine.pos > since
			for _, ev := range rm.events {
				if typeAllowed(ev.Type, types, notTypes) && (newlyJoined || ev.pos > since) {
					visible = append(visible, ev)
				}
			}
			if len(visible) == 0 {
				continue
			}
			news = true
			limited := len(visible) > limit
			if limited {
				visible = visible[len(visible)-limit:]
			}
			// The state before the timeline: the latest of each state key
			// among the events left out (all of them for a new room).
			first := visible[0].pos
			st := map[string]*Event{}
			for _, ev := range rm.events {
				if ev.StateKey != nil && ev.pos < first && (newlyJoined || ev.pos > since) {
					st[ev.Type+"\x00"+*ev.StateKey] = ev
				}
			}
			var state []*Event
			for _, k := range sortedRooms(st) {
				state = append(state, st[k])
			}
			join[id] = map[string]any{
				"timeline":             map[string]any{"events": visible, "limited": limited, "prev_batch": fmt.Sprintf("s%d", first-1)},
				"state":                map[string]any{"events": state},
				"ephemeral":            map[string]any{"events": []any{}},
				"account_data":         map[string]any{"events": []any{}},
				"unread_notifications": map[string]any{"highlight_count": 0, "notification_count": 1},
				"summary":              map[string]any{},
			}
		}
	}
	resp := map[string]any{
		"next_batch":                 fmt.Sprintf("s%d", s.pos),
		"rooms":                      map[string]any{"join": join, "invite": invite, "leave": leave},
		"presence":                   map[string]any{"events": []any{}},
		"account_data":               map[string]any{"events": []any{}},
		"device_one_time_keys_count": map[string]any{"signed_curve25519": 0},
	}
	return resp, news
}

// strippedLocked is an invite's stripped state: create, encryption, the
// inviter's membership and the bot's invite.
func (s *Server) strippedLocked(rm *room, invite *Event) []map[string]any {
	var out []map[string]any
	for _, ev := range rm.events {
		if ev.StateKey == nil || ev.pos > invite.pos {
			continue
		}
		if ev.Type == "m.room.create" || ev.Type == "m.room.encryption" || (ev.Type == "m.room.member" && *ev.StateKey == invite.Sender) {
			out = append(out, map[string]any{"type": ev.Type, "state_key": *ev.StateKey, "sender": ev.Sender, "content": ev.Content})
		}
	}
	return append(out, map[string]any{"type": invite.Type, "state_key": Bot, "sender": invite.Sender, "content": invite.Content})
}

func sortedRooms[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *Server) joinedRoom(w http.ResponseWriter, id string) (*room, bool) {
	rm := s.rooms[id]
	if rm == nil || rm.members[Bot] != "join" {
		writeErr(w, 403, "M_FORBIDDEN", fmt.Sprintf("User %s not in room %s", Bot, id))
		return nil, false
	}
	return rm, true
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	id, typ, txn := r.PathValue("room"), r.PathValue("type"), r.PathValue("txn")
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeErr(w, 400, "M_UNKNOWN", "reading the body")
		return
	}
	var content map[string]any
	if err := json.Unmarshal(raw, &content); err != nil || content == nil {
		writeErr(w, 400, "M_NOT_JSON", "Content not JSON.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rm, ok := s.joinedRoom(w, id)
	if !ok {
		return
	}
	txnKey := s.token + "\x00" + r.URL.EscapedPath()
	if ev, ok := s.txns[txnKey]; ok {
		writeJSON(w, 200, map[string]any{"event_id": ev})
		return
	}
	// The event as the server would store it: the envelope counts too.
	size := len(raw) + 600
	if size > MaxEvent {
		writeErr(w, 413, "M_TOO_LARGE", "event too large")
		return
	}
	if msg := s.checkLocked(rm, typ, content); msg != "" {
		code := "M_BAD_JSON"
		if strings.HasPrefix(msg, "duplicate") {
			code = "M_DUPLICATE_ANNOTATION"
		}
		writeErr(w, 400, code, msg)
		return
	}
	ev := s.addLocked(rm, typ, Bot, nil, content)
	ev.Unsigned = map[string]any{"transaction_id": txn}
	s.txns[txnKey] = ev.ID
	writeJSON(w, 200, map[string]any{"event_id": ev.ID})
}

// checkLocked refuses what a client could not show, or what Synapse
// refuses (a duplicate annotation).
func (s *Server) checkLocked(rm *room, typ string, c map[string]any) string {
	find := func(id string) *Event {
		for _, ev := range rm.events {
			if ev.ID == id {
				return ev
			}
		}
		return nil
	}
	rel, _ := c["m.relates_to"].(map[string]any)
	switch typ {
	case "m.room.message":
		if msg := checkMessage(c); msg != "" {
			return msg
		}
		switch str(rel["rel_type"]) {
		case "m.replace":
			orig := find(str(rel["event_id"]))
			nc, _ := c["m.new_content"].(map[string]any)
			switch {
			case orig == nil:
				return "fake: an edit of an event not in the room"
			case orig.Sender != Bot:
				return "fake: an edit of someone else's event (clients ignore it)"
			case orig.Type != "m.room.message":
				return "fake: an edit of an event that is not a message"
			case nc == nil:
				return "fake: an edit without m.new_content"
			}
			if origRel, _ := orig.Content["m.relates_to"].(map[string]any); str(origRel["rel_type"]) == "m.replace" {
				return "fake: an edit of an edit (edits relate to the original)"
			}
			if msg := checkMessage(nc); msg != "" {
				return "m.new_content: " + msg
			}
		case "m.thread":
			if find(str(rel["event_id"])) == nil {
				return "fake: a thread reply to an event not in the room"
			}
		}
	case "m.reaction":
		if str(rel["rel_type"]) != "m.annotation" || str(rel["key"]) == "" {
			return "fake: a reaction without an m.annotation relation and key"
		}
		if find(str(rel["event_id"])) == nil {
			return "fake: a reaction to an event not in the room"
		}
		for _, ev := range rm.events {
			if r2, _ := ev.Content["m.relates_to"].(map[string]any); ev.Type == "m.reaction" && ev.Sender == Bot &&
				str(r2["event_id"]) == str(rel["event_id"]) && str(r2["key"]) == str(rel["key"]) {
				return "duplicate annotation: can't send same reaction twice"
			}
		}
	}
	return ""
}

func checkMessage(c map[string]any) string {
	body, ok := c["body"].(string)
	if !ok {
		return "fake: m.room.message without a string body (clients show nothing)"
	}
	if _, ok := c["msgtype"].(string); !ok {
		return "fake: m.room.message without msgtype"
	}
	if strings.ContainsRune(body, 0) {
		return "fake: a NUL in the body"
	}
	format, hasFormat := c["format"]
	fb, hasFB := c["formatted_body"]
	switch {
	case !hasFormat && !hasFB:
	case format != "org.matrix.custom.html":
		return "fake: format must be org.matrix.custom.html"
	default:
		s, ok := fb.(string)
		if !ok {
			return "fake: formatted_body must be a string"
		}
		if err := CheckHTML(s); err != nil {
			return "fake: formatted_body: " + err.Error()
		}
	}
	return ""
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("room")
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[id]
	if rm == nil {
		writeErr(w, 404, "M_NOT_FOUND", "No known servers")
		return
	}
	switch rm.members[Bot] {
	case "join":
	case "invite":
		s.memberLocked(rm, Bot, Bot, "join")
	default:
		writeErr(w, 403, "M_FORBIDDEN", "You are not invited to this room.")
		return
	}
	writeJSON(w, 200, map[string]any{"room_id": id})
}

func (s *Server) leave(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("room")
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[id]
	if rm == nil || (rm.members[Bot] != "join" && rm.members[Bot] != "invite") {
		writeErr(w, 403, "M_FORBIDDEN", "User not in room")
		return
	}
	s.memberLocked(rm, Bot, Bot, "leave")
	writeJSON(w, 200, map[string]any{})
}

func (s *Server) joinedMembers(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm, ok := s.joinedRoom(w, r.PathValue("room"))
	if !ok {
		return
	}
	joined := map[string]any{}
	for u, m := range rm.members {
		if m == "join" {
			var name any
			if n := rm.names[u]; n != "" {
				name = n
			}
			joined[u] = map[string]any{"display_name": name, "avatar_url": nil}
		}
	}
	writeJSON(w, 200, map[string]any{"joined": joined})
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("dir") != "b" {
		writeErr(w, 400, "M_INVALID_PARAM", "fake: only dir=b is supported")
		return
	}
	from, ok := parsePos(q.Get("from"))
	if !ok {
		writeErr(w, 400, "M_INVALID_PARAM", "Invalid from token")
		return
	}
	to := int64(-1)
	if t := q.Get("to"); t != "" {
		if to, ok = parsePos(t); !ok {
			writeErr(w, 400, "M_INVALID_PARAM", "Invalid to token")
			return
		}
	}
	limit := 10
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 {
		limit = min(l, 1000)
	}
	var rf struct {
		Types []string `json:"types"`
	}
	if raw := q.Get("filter"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &rf); err != nil {
			writeErr(w, 400, "M_INVALID_PARAM", "Invalid filter JSON")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rm, ok := s.joinedRoom(w, r.PathValue("room"))
	if !ok {
		return
	}
	var chunk []*Event
	end := ""
	for i := len(rm.events) - 1; i >= 0; i-- {
		ev := rm.events[i]
		if ev.pos > from {
			continue
		}
		if ev.pos <= to {
			break
		}
		if len(chunk) == limit {
			end = fmt.Sprintf("s%d", chunk[len(chunk)-1].pos-1)
			break
		}
		if typeAllowed(ev.Type, rf.Types, nil) {
			chunk = append(chunk, ev)
		}
	}
	resp := map[string]any{"chunk": chunk, "start": q.Get("from")}
	if end != "" {
		resp["end"] = end
	}
	writeJSON(w, 200, resp)
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	m, ok := s.media[r.PathValue("media")]
	s.mu.Unlock()
	if r.PathValue("server") != ServerName || !ok {
		writeErr(w, 404, "M_NOT_FOUND", "Not found")
		return
	}
	w.Header().Set("Content-Type", m.ctype)
	w.Header().Set("Content-Disposition", "attachment")
	w.Write(m.data)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		writeErr(w, 400, "M_UNKNOWN", "fake: upload without a Content-Type")
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 50<<20+1))
	if err != nil || len(data) > 50<<20 {
		writeErr(w, 413, "M_TOO_LARGE", "Upload request body is too large")
		return
	}
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("up%d", s.nextID)
	s.media[id] = media{data: data, ctype: ct, name: r.URL.Query().Get("filename")}
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"content_uri": "mxc://" + ServerName + "/" + id})
}
