// Package slacktest is an in-process fake of Slack for tests: the Web API
// methods the slack adapter calls (auth.test, apps.connections.open,
// chat.postMessage, chat.update, chat.postEphemeral,
// conversations.history and conversations.replies (paged by cursor, in
// time order, bounded by oldest and latest), users.info) and private
// file downloads, checked the way Slack checks them — the bearer token and
// its type per method, JSON bodies only where Slack reads them, Block Kit
// limits, the 40,000-character text limit, metadata shape, edits of the
// bot's own messages only, blocks kept by chat.update unless replaced —
// and answered in Slack's shapes ({"ok":false,"error":"…"}, 429 with
// Retry-After). Events reach the app either over Socket Mode (a WebSocket
// opened with a one-time ticket; envelopes redelivered until acknowledged;
// disconnect messages on demand) or, after UseEventsAPI, as signed POSTs
// to the app's routes, retried like Slack does. The bot's own posts are
// echoed back as message events, as Slack does for DMs. Nothing beyond
// loopback is used.
package slacktest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Credentials and ids of the fake workspace and app.
const (
	BotToken      = "xoxb-1111-2222-testbottoken"
	AppToken      = "xapp-1-A0TEST-3333-testapptoken"
	SigningSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	TeamID        = "T0TEST"
	AppID         = "A0TEST"
	BotUserID     = "U0BOT"
	BotID         = "B0BOT"
)

// Kinds of conversation.
const (
	IM      = "im"      // a DM with the bot
	Channel = "channel" // a public channel
	Group   = "group"   // a private channel
	MPIM    = "mpim"    // a group DM
)

// Message is a message as the conversation shows it now.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	User     string
	BotID    string
	Text     string
	Blocks   []Block
	Metadata *Metadata
	Files    []File
	Edits    int
}

// Block is a Block Kit block as sent.
type Block struct {
	Type     string    `json:"type"`
	BlockID  string    `json:"block_id,omitempty"`
	Text     *Text     `json:"text,omitempty"`
	Elements []Element `json:"elements,omitempty"`
}

// Text is a text object.
type Text struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

// Element is an interactive element (a button).
type Element struct {
	Type     string `json:"type"`
	ActionID string `json:"action_id"`
	Text     *Text  `json:"text,omitempty"`
	Value    string `json:"value,omitempty"`
	Style    string `json:"style,omitempty"`
}

// Metadata is message metadata.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// File is a file shared on a message.
type File struct {
	ID       string
	Name     string
	Mimetype string
	Subtype  string
	// URL overrides where the file is said to be (a foreign host).
	URL  string
	Data []byte
}

// Ephemeral is a message only one person sees.
type Ephemeral struct {
	Channel, User, ThreadTS, Text string
}

// Server is the fake Slack.
type Server struct {
	// URL is the server's root; APIURL the Web API root to configure.
	URL, APIURL string
	t           testing.TB

	mu         sync.Mutex // guards the fields below
	convs      map[string]*conv
	users      map[string]string // id → display name
	clock      int64             // seconds part of the next ts, less seq: the time the fake started
	seq        int
	calls      map[string]int
	throttle   map[string][]int    // per method: Retry-After of the next 429s
	failures   map[string][]string // per method: error codes of the next answers
	ephemerals []Ephemeral
	files      map[string][]byte // path → content
	fileTypes  map[string]string // path → the content type it is served with
	downloads  int               // authenticated file downloads served
	tickets    map[string]bool   // issued and not yet used
	connects   int
	conn       *websocket.Conn
	queue      []*delivery // not yet acknowledged (socket) or answered 200 (events)
	acked      []string
	badAcks    []string
	kick       chan struct{}
	// Events API: when set, deliveries are POSTed here, signed.
	eventsURL, interactiveURL string
	statuses                  []int // HTTP statuses the app answered

	// ackTimeout is how long an envelope waits for its acknowledgement
	// before Slack sends it again (Slack: a few seconds).
	ackTimeout time.Duration
}

// SetAckTimeout sets how long an envelope waits for its acknowledgement
// before it is sent again (2s by default).
func (s *Server) SetAckTimeout(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ackTimeout = d
}

type conv struct {
	id, kind string
	member   bool
	msgs     []*Message
}

type delivery struct {
	id       string
	kind     string // events_api or interactive
	payload  []byte
	attempts int
	sentAt   time.Time
	conn     *websocket.Conn // where it was last sent
}

// New starts a fake Slack closed with the test.
func New(t testing.TB) *Server {
	s := &Server{t: t, convs: map[string]*conv{}, users: map[string]string{}, clock: time.Now().Unix(), calls: map[string]int{},
		throttle: map[string][]int{}, failures: map[string][]string{}, files: map[string][]byte{}, fileTypes: map[string]string{}, tickets: map[string]bool{},
		kick: make(chan struct{}, 1), ackTimeout: 2 * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/{method}", s.serveAPI)
	mux.HandleFunc("GET /link/", s.serveSocket)
	mux.HandleFunc("GET /files-pri/", s.serveFile)
	ts := httptest.NewServer(mux)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.deliverLoop(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		s.mu.Lock()
		if s.conn != nil {
			s.conn.CloseNow()
		}
		s.mu.Unlock()
		ts.Close()
	})
	s.URL = ts.URL
	s.APIURL = ts.URL + "/api"
	return s
}

// AddConversation makes a conversation the bot can see; member says the
// bot is in it (DMs always).
func (s *Server) AddConversation(id, kind string, member bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.convs[id] = &conv{id: id, kind: kind, member: member || kind == IM}
}

// AddUser names a person for users.info.
func (s *Server) AddUser(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[id] = name
}

// Throttle makes the next len(retryAfter) calls of method fail with HTTP
// 429, Retry-After taken in turn from retryAfter.
func (s *Server) Throttle(method string, retryAfter ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle[method] = append(s.throttle[method], retryAfter...)
}

// Fail makes the next calls of method answer ok=false with these codes.
func (s *Server) Fail(method string, codes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], codes...)
}

// Calls returns how often method was called.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Messages returns the conversation's messages, oldest first (thread
// replies included), as copies.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[channel]
	if c == nil {
		return nil
	}
	var out []Message
	for _, m := range c.msgs {
		out = append(out, *m)
	}
	return out
}

// Message returns the message at ts.
func (s *Server) Message(channel, ts string) (Message, bool) {
	for _, m := range s.Messages(channel) {
		if m.TS == ts {
			return m, true
		}
	}
	return Message{}, false
}

// Ephemerals returns the ephemeral messages posted.
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ephemerals)
}

// nextTS returns a new message timestamp.
func (s *Server) nextTS() string {
	s.seq++
	return fmt.Sprintf("%d.%06d", s.clock+int64(s.seq), s.seq)
}

// answer writes a Web API answer.
func answer(w http.ResponseWriter, v map[string]any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code string, details ...string) {
	v := map[string]any{"ok": false, "error": code}
	if len(details) > 0 {
		v["response_metadata"] = map[string]any{"messages": details}
	}
	answer(w, v)
}

// jsonMethods are the methods that read a JSON body; the others read only
// form or query arguments, as Slack's do.
var jsonMethods = map[string]bool{"chat.postMessage": true, "chat.update": true, "chat.postEphemeral": true}

// botMethods take the bot token; appMethods the app-level token.
var (
	botMethods = map[string]bool{"auth.test": true, "chat.postMessage": true, "chat.update": true, "chat.postEphemeral": true,
		"conversations.history": true, "conversations.replies": true, "users.info": true}
	appMethods = map[string]bool{"apps.connections.open": true}
)

// args is a call's arguments: strings from a form, anything from JSON.
type args map[string]any

func (a args) str(k string) string {
	switch v := a[k].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// decoded returns a JSON-valued argument, which a form carries as a string.
func (a args) decoded(k string) (any, bool) {
	v, ok := a[k]
	if !ok {
		return nil, false
	}
	if s, isStr := v.(string); isStr {
		var out any
		if json.Unmarshal([]byte(s), &out) != nil {
			return s, true
		}
		return out, true
	}
	return v, true
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	s.mu.Lock()
	s.calls[method]++
	if q := s.throttle[method]; len(q) > 0 {
		s.throttle[method] = q[1:]
		s.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(q[0]))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"ok":false,"error":"ratelimited"}`)
		return
	}
	var failure string
	if q := s.failures[method]; len(q) > 0 {
		s.failures[method], failure = q[1:], q[0]
	}
	s.mu.Unlock()
	if !botMethods[method] && !appMethods[method] {
		w.WriteHeader(http.StatusNotFound)
		fail(w, "unknown_method")
		return
	}
	if r.Method != http.MethodPost {
		s.t.Errorf("slacktest: %s called with %s; the adapter posts", method, r.Method)
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || token == "":
		fail(w, "not_authed")
		return
	case token != BotToken && token != AppToken:
		fail(w, "invalid_auth")
		return
	case appMethods[method] != (token == AppToken):
		fail(w, "not_allowed_token_type")
		return
	}
	a, err := readArgs(r, jsonMethods[method])
	if err != nil {
		fail(w, "invalid_form_data", err.Error())
		return
	}
	if failure != "" {
		fail(w, failure)
		return
	}
	switch method {
	case "auth.test":
		answer(w, map[string]any{"ok": true, "url": "https://hestia-test.slack.com/", "team": "Hestia Test", "user": "hestia",
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID, "is_enterprise_install": false})
	case "apps.connections.open":
		s.mu.Lock()
		s.seq++
		ticket := fmt.Sprintf("ticket-%d", s.seq)
		s.tickets[ticket] = true
		s.mu.Unlock()
		answer(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(s.URL, "http") + "/link/?ticket=" + ticket + "&app_id=" + AppID})
	case "chat.postMessage":
		s.postMessage(w, a)
	case "chat.update":
		s.update(w, a)
	case "chat.postEphemeral":
		s.postEphemeral(w, a)
	case "conversations.history", "conversations.replies":
		s.history(w, method, a)
	case "users.info":
		s.mu.Lock()
		name, ok := s.users[a.str("user")]
		s.mu.Unlock()
		if !ok {
			fail(w, "user_not_found")
			return
		}
		answer(w, map[string]any{"ok": true, "user": map[string]any{"id": a.str("user"), "name": strings.ToLower(name), "real_name": name,
			"profile": map[string]any{"display_name": name, "real_name": name}}})
	}
}

// readArgs reads query and form arguments, and a JSON body where the
// method reads one; a JSON body sent to another method is ignored, as
// Slack ignores it.
func readArgs(r *http.Request, takesJSON bool) (args, error) {
	out := args{}
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			return nil, err
		}
		if takesJSON {
			if err := json.Unmarshal(body, &out); err != nil {
				return nil, fmt.Errorf("the JSON body does not parse: %v", err)
			}
		}
		for k, v := range r.URL.Query() {
			out[k] = v[0]
		}
		return out, nil
	}
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	for k, v := range r.Form {
		out[k] = v[0]
	}
	return out, nil
}

var (
	tsRe        = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	eventTypeRe = regexp.MustCompile(`^[a-zA-Z0-9_]{1,255}$`)
)

// content validates and decodes text, blocks and metadata of a post or
// update; code is Slack's error for what is wrong.
func content(a args) (text string, blocks []Block, hasBlocks bool, md *Metadata, code string, details []string) {
	text = a.str("text")
	if utf8.RuneCountInString(text) > 40000 {
		return "", nil, false, nil, "msg_too_long", nil
	}
	if raw, ok := a.decoded("blocks"); ok {
		hasBlocks = true
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &blocks); err != nil {
			return "", nil, false, nil, "invalid_blocks_format", []string{"[ERROR] " + err.Error()}
		}
		if errs := checkBlocks(blocks); len(errs) > 0 {
			return "", nil, false, nil, "invalid_blocks", errs
		}
	}
	if raw, ok := a.decoded("metadata"); ok {
		b, _ := json.Marshal(raw)
		var m Metadata
		if err := json.Unmarshal(b, &m); err != nil || !eventTypeRe.MatchString(m.EventType) || m.EventPayload == nil {
			return "", nil, false, nil, "invalid_metadata_format", nil
		}
		md = &m
	}
	return text, blocks, hasBlocks, md, "", nil
}

// checkBlocks applies the Block Kit limits the adapter's blocks meet.
func checkBlocks(blocks []Block) []string {
	var errs []string
	bad := func(ptr, msg string) { errs = append(errs, "[ERROR] "+msg+" [json-pointer:"+ptr+"]") }
	if len(blocks) > 50 {
		bad("/blocks", "no more than 50 items allowed")
	}
	actionIDs := map[string]bool{}
	blockIDs := map[string]bool{}
	for i, b := range blocks {
		p := fmt.Sprintf("/blocks/%d", i)
		if b.BlockID != "" {
			if blockIDs[b.BlockID] || len(b.BlockID) > 255 {
				bad(p+"/block_id", "must be unique and no longer than 255 characters")
			}
			blockIDs[b.BlockID] = true
		}
		switch b.Type {
		case "section":
			if b.Text == nil || (b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text") {
				bad(p+"/text", "must provide a text object of type mrkdwn or plain_text")
				continue
			}
			if n := utf8.RuneCountInString(b.Text.Text); n == 0 || n > 3000 {
				bad(p+"/text/text", "must be between 1 and 3000 characters")
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				bad(p+"/elements", "must have between 1 and 25 items")
			}
			for j, e := range b.Elements {
				ep := fmt.Sprintf("%s/elements/%d", p, j)
				if e.Type != "button" {
					bad(ep+"/type", "unsupported element type")
					continue
				}
				if e.Text == nil || e.Text.Type != "plain_text" || e.Text.Text == "" || utf8.RuneCountInString(e.Text.Text) > 75 {
					bad(ep+"/text", "must be plain_text of 1 to 75 characters")
				}
				if e.ActionID == "" || len(e.ActionID) > 255 || actionIDs[e.ActionID] {
					bad(ep+"/action_id", "must be unique in the message and no longer than 255 characters")
				}
				actionIDs[e.ActionID] = true
				if len(e.Value) > 2000 {
					bad(ep+"/value", "must be no longer than 2000 characters")
				}
				if e.Style != "" && e.Style != "primary" && e.Style != "danger" {
					bad(ep+"/style", "must be primary or danger")
				}
			}
		default:
			bad(p+"/type", "unsupported block type "+b.Type)
		}
	}
	return errs
}

func (s *Server) postMessage(w http.ResponseWriter, a args) {
	text, blocks, _, md, code, details := content(a)
	if code != "" {
		fail(w, code, details...)
		return
	}
	if strings.TrimSpace(text) == "" && len(blocks) == 0 {
		fail(w, "no_text")
		return
	}
	thread := a.str("thread_ts")
	if thread != "" && !tsRe.MatchString(thread) {
		fail(w, "invalid_thread_ts")
		return
	}
	s.mu.Lock()
	c := s.convs[a.str("channel")]
	switch {
	case c == nil:
		s.mu.Unlock()
		fail(w, "channel_not_found")
		return
	case !c.member:
		s.mu.Unlock()
		fail(w, "not_in_channel")
		return
	}
	m := &Message{Channel: c.id, TS: s.nextTS(), ThreadTS: thread, User: BotUserID, BotID: BotID, Text: text, Blocks: blocks, Metadata: md}
	c.msgs = append(c.msgs, m)
	echo := s.messageEvent(c, m, "")
	s.mu.Unlock()
	// Slack tells the app about its own posts too (message.im,
	// message.channels): the adapter must skip them.
	s.enqueue("events_api", echo)
	answer(w, map[string]any{"ok": true, "channel": c.id, "ts": m.TS, "message": s.wireMessage(m, true)})
}

func (s *Server) update(w http.ResponseWriter, a args) {
	text, blocks, hasBlocks, md, code, details := content(a)
	if code != "" {
		fail(w, code, details...)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[a.str("channel")]
	if c == nil {
		fail(w, "channel_not_found")
		return
	}
	var m *Message
	for _, x := range c.msgs {
		if x.TS == a.str("ts") {
			m = x
		}
	}
	switch {
	case m == nil:
		fail(w, "message_not_found")
		return
	case m.BotID != BotID:
		fail(w, "cant_update_message")
		return
	}
	if _, ok := a["text"]; ok {
		m.Text = text
	}
	if hasBlocks {
		// Slack keeps a message's blocks unless the update names them; an
		// empty list removes them.
		m.Blocks = blocks
	}
	if strings.TrimSpace(m.Text) == "" && len(m.Blocks) == 0 {
		fail(w, "no_text")
		return
	}
	if md != nil {
		m.Metadata = md
	}
	m.Edits++
	answer(w, map[string]any{"ok": true, "channel": c.id, "ts": m.TS, "text": m.Text})
}

func (s *Server) postEphemeral(w http.ResponseWriter, a args) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[a.str("channel")]
	if c == nil {
		fail(w, "channel_not_found")
		return
	}
	if a.str("user") == "" {
		fail(w, "user_not_in_channel")
		return
	}
	if strings.TrimSpace(a.str("text")) == "" {
		fail(w, "no_text")
		return
	}
	s.ephemerals = append(s.ephemerals, Ephemeral{Channel: c.id, User: a.str("user"), ThreadTS: a.str("thread_ts"), Text: a.str("text")})
	answer(w, map[string]any{"ok": true, "message_ts": s.nextTS()})
}

// history pages through a conversation (newest first, top-level messages
// and thread roots) or a thread (oldest first, its root leading), within
// oldest and latest (exclusive unless inclusive is set; a thread's root
// is returned whatever they say, as Slack does).
func (s *Server) history(w http.ResponseWriter, method string, a args) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[a.str("channel")]
	if c == nil {
		fail(w, "channel_not_found")
		return
	}
	if !c.member && c.kind != Channel {
		fail(w, "not_in_channel")
		return
	}
	oldest, latest := a.str("oldest"), a.str("latest")
	for _, v := range []string{oldest, latest} {
		if v != "" && !tsRe.MatchString(v) {
			fail(w, "invalid_ts_oldest")
			return
		}
	}
	inclusive := a.str("inclusive") == "true" || a.str("inclusive") == "1"
	within := func(ts string) bool {
		if oldest != "" && (tsLess(ts, oldest) || (!inclusive && ts == oldest)) {
			return false
		}
		if latest != "" && (tsLess(latest, ts) || (!inclusive && ts == latest)) {
			return false
		}
		return true
	}
	// In time order whatever order the messages were added in.
	ordered := slices.Clone(c.msgs)
	slices.SortStableFunc(ordered, func(x, y *Message) int {
		switch {
		case tsLess(x.TS, y.TS):
			return -1
		case tsLess(y.TS, x.TS):
			return 1
		}
		return 0
	})
	var list []*Message
	if method == "conversations.replies" {
		root := a.str("ts")
		if root == "" {
			fail(w, "invalid_arguments")
			return
		}
		found := false
		for _, m := range ordered {
			switch {
			case m.TS == root:
				found = true
				list = append([]*Message{m}, list...)
			case m.ThreadTS == root && within(m.TS):
				list = append(list, m)
			}
		}
		if !found {
			fail(w, "thread_not_found")
			return
		}
	} else {
		for i := len(ordered) - 1; i >= 0; i-- {
			if m := ordered[i]; (m.ThreadTS == "" || m.ThreadTS == m.TS) && within(m.TS) {
				list = append(list, m)
			}
		}
	}
	limit, _ := strconv.Atoi(a.str("limit"))
	if limit <= 0 || limit > 999 {
		limit = 100
	}
	start, _ := strconv.Atoi(a.str("cursor"))
	if start > len(list) {
		start = len(list)
	}
	end := min(start+limit, len(list))
	withMeta := a.str("include_all_metadata") == "true" || a.str("include_all_metadata") == "1"
	var msgs []map[string]any
	for _, m := range list[start:end] {
		msgs = append(msgs, s.wireMessage(m, withMeta))
	}
	next := ""
	if end < len(list) {
		next = strconv.Itoa(end)
	}
	answer(w, map[string]any{"ok": true, "messages": msgs, "has_more": next != "", "response_metadata": map[string]any{"next_cursor": next}})
}

// wireMessage is a message as the Web API shows it; s.mu is held.
func (s *Server) wireMessage(m *Message, withMeta bool) map[string]any {
	out := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "team": TeamID}
	if m.User != "" {
		out["user"] = m.User
	}
	if m.BotID != "" {
		out["bot_id"] = m.BotID
		out["app_id"] = AppID
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
		if c := s.convs[m.Channel]; c != nil && m.ThreadTS != m.TS {
			for _, x := range c.msgs {
				if x.TS == m.ThreadTS {
					out["parent_user_id"] = x.User
				}
			}
		}
	}
	if len(m.Blocks) > 0 {
		out["blocks"] = m.Blocks
	}
	if withMeta && m.Metadata != nil {
		out["metadata"] = m.Metadata
	}
	if len(m.Files) > 0 {
		var files []map[string]any
		for _, f := range m.Files {
			u := f.URL
			if u == "" {
				u = s.URL + "/files-pri/" + TeamID + "-" + f.ID + "/download/" + url.PathEscape(f.Name)
			}
			files = append(files, map[string]any{"id": f.ID, "name": f.Name, "mimetype": f.Mimetype, "subtype": f.Subtype, "size": len(f.Data),
				"url_private": u, "url_private_download": u})
		}
		out["files"] = files
	}
	return out
}

// messageEvent is the event_callback telling the app about m; s.mu is held.
func (s *Server) messageEvent(c *conv, m *Message, eventType string) []byte {
	ev := s.wireMessage(m, false)
	ev["channel"] = c.id
	ev["channel_type"] = c.kind
	ev["event_ts"] = m.TS
	if eventType != "" {
		ev["type"] = eventType
	}
	if m.ThreadTS != "" && m.ThreadTS != m.TS {
		for _, x := range c.msgs {
			if x.TS == m.ThreadTS {
				ev["parent_user_id"] = x.User
			}
		}
	}
	if eventType == "app_mention" {
		delete(ev, "channel_type")
	}
	if m.BotID != "" {
		ev["subtype"] = "bot_message"
		if m.User != "" {
			// Modern bot posts carry the bot user and no subtype.
			delete(ev, "subtype")
		}
	}
	s.seq++
	return mustJSON(map[string]any{"token": "verification-token-unused", "team_id": TeamID, "api_app_id": AppID, "type": "event_callback",
		"event_id": fmt.Sprintf("Ev%08d", s.seq), "event_time": s.clock + int64(s.seq), "event": ev})
}

// tsLess orders two timestamps by their seconds, then their fraction.
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	if ai != bi {
		return ai < bi
	}
	af, bf = (af + "000000000")[:9], (bf + "000000000")[:9]
	return af < bf
}

// TS is the Slack timestamp of a moment (to place an AddMessage in time).
func TS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Say is a person writing text in a conversation (threadTS "" for the top
// level); the message is stored and its message event delivered, plus an
// app_mention when it mentions the bot in a channel, as Slack sends both.
// It returns the message's ts.
func (s *Server) Say(channel, user, text, threadTS string, files ...File) string {
	s.mu.Lock()
	c := s.convs[channel]
	if c == nil {
		s.mu.Unlock()
		s.t.Fatalf("slacktest: Say in unknown conversation %s", channel)
	}
	m := &Message{Channel: channel, TS: s.nextTS(), ThreadTS: threadTS, User: user, Text: text, Files: files}
	for _, f := range files {
		s.files["/files-pri/"+TeamID+"-"+f.ID+"/download/"+f.Name] = f.Data
		s.fileTypes["/files-pri/"+TeamID+"-"+f.ID+"/download/"+f.Name] = f.Mimetype
	}
	c.msgs = append(c.msgs, m)
	events := [][]byte{s.messageEvent(c, m, "")}
	if c.kind != IM && strings.Contains(text, "<@"+BotUserID+">") {
		events = append(events, s.messageEvent(c, m, "app_mention"))
	}
	s.mu.Unlock()
	for _, ev := range events {
		s.enqueue("events_api", ev)
	}
	return m.TS
}

// AddMessage stores a message as it is (another app's post, history from
// before the test, a message posted while the app was not connected,
// which Slack never delivers) without delivering any event, and returns
// its ts. A TS given places it in time (an old message); history is
// returned in ts order whatever the order of adding.
func (s *Server) AddMessage(m Message) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[m.Channel]
	if c == nil {
		s.t.Fatalf("slacktest: AddMessage in unknown conversation %s", m.Channel)
	}
	if m.TS == "" {
		m.TS = s.nextTS()
	}
	c.msgs = append(c.msgs, &m)
	return m.TS
}

// EventCallback wraps an event in the Events API's outer shape.
func EventCallback(eventID string, event map[string]any) []byte {
	return mustJSON(map[string]any{"token": "verification-token-unused", "team_id": TeamID, "api_app_id": AppID, "type": "event_callback",
		"event_id": eventID, "event_time": 1700000000, "event": event})
}

// Deliver queues a raw payload ("events_api" or "interactive", or any
// other envelope type) for the app, by Socket Mode or the Events API.
func (s *Server) Deliver(kind string, payload []byte) {
	s.enqueue(kind, payload)
}

// Press is a person pressing the button with actionID on the message at
// ts, as Slack reports it: the value is whatever the app put on the
// button. It fails the test when the message has no such button.
func (s *Server) Press(channel, ts, user, actionID string) {
	s.mu.Lock()
	c := s.convs[channel]
	var m *Message
	if c != nil {
		for _, x := range c.msgs {
			if x.TS == ts {
				m = x
			}
		}
	}
	if m == nil {
		s.mu.Unlock()
		s.t.Fatalf("slacktest: Press on unknown message %s/%s", channel, ts)
	}
	var btn *Element
	var blockID string
	for _, b := range m.Blocks {
		for i := range b.Elements {
			if b.Elements[i].ActionID == actionID {
				btn, blockID = &b.Elements[i], b.BlockID
			}
		}
	}
	if btn == nil {
		s.mu.Unlock()
		s.t.Fatalf("slacktest: message %s/%s has no button %q", channel, ts, actionID)
	}
	s.seq++
	name := s.users[user]
	payload := mustJSON(map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": user, "username": strings.ToLower(name), "name": strings.ToLower(name), "team_id": TeamID},
		"api_app_id": AppID, "token": "verification-token-unused", "trigger_id": fmt.Sprintf("%d.trigger", s.seq),
		"team":         map[string]any{"id": TeamID, "domain": "hestia-test"},
		"container":    map[string]any{"type": "message", "message_ts": m.TS, "channel_id": channel, "is_ephemeral": false, "thread_ts": m.ThreadTS},
		"channel":      map[string]any{"id": channel, "name": "directmessage"},
		"message":      s.wireMessage(m, false),
		"response_url": s.URL + "/actions/" + channel + "/" + ts,
		"actions": []map[string]any{{"action_id": btn.ActionID, "block_id": blockID, "text": btn.Text, "value": btn.Value, "type": "button",
			"action_ts": fmt.Sprintf("%d.%06d", s.clock+int64(s.seq), s.seq)}},
	})
	s.mu.Unlock()
	s.enqueue("interactive", payload)
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[r.URL.Path]
	ct := s.fileTypes[r.URL.Path]
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		// Slack answers an unauthenticated file request with its sign-in
		// page, status 200.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!DOCTYPE html><html><body>Sign in to Slack</body></html>")
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.downloads++
	s.mu.Unlock()
	// Slack serves a file with its own type (a web page as text/html).
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Write(data)
}

// Downloads counts the authenticated file downloads served.
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads
}

// Deliveries.

// UseEventsAPI sends deliveries as signed POSTs to the app's Events API
// and interactivity routes instead of Socket Mode.
func (s *Server) UseEventsAPI(eventsURL, interactiveURL string) {
	s.mu.Lock()
	s.eventsURL, s.interactiveURL = eventsURL, interactiveURL
	s.mu.Unlock()
	s.wake()
}

// Statuses returns the HTTP statuses the app answered Events API
// deliveries with.
func (s *Server) Statuses() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses)
}

// Acked returns the envelope ids the app acknowledged.
func (s *Server) Acked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acked)
}

// BadAcks returns acknowledgements that named no envelope sent.
func (s *Server) BadAcks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.badAcks)
}

// Pending is how many deliveries await acknowledgement.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Connects is how many Socket Mode connections were opened.
func (s *Server) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// Connected reports whether a Socket Mode connection is open.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

func (s *Server) enqueue(kind string, payload []byte) {
	s.mu.Lock()
	s.seq++
	s.queue = append(s.queue, &delivery{id: fmt.Sprintf("env-%04d-%s", s.seq, kind), kind: kind, payload: payload})
	s.mu.Unlock()
	s.wake()
}

func (s *Server) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Disconnect sends a disconnect message with reason ("warning",
// "refresh_requested", "link_disabled") on the open connection; for all
// but "warning" the connection is closed a moment later, as Slack does.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		s.t.Fatal("slacktest: Disconnect with no connection open")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Write(ctx, websocket.MessageText, mustJSON(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "applink-test"}}))
	if reason != "warning" {
		go func() {
			time.Sleep(500 * time.Millisecond)
			c.Close(websocket.StatusNormalClosure, "")
		}()
	}
}

// Drop closes the open connection abruptly (a network blip).
func (s *Server) Drop() {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil {
		c.CloseNow()
	}
}

// SendRaw writes a raw text frame on the open connection (a malformed
// envelope, an unknown type).
func (s *Server) SendRaw(data []byte) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		s.t.Fatal("slacktest: SendRaw with no connection open")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Write(ctx, websocket.MessageText, data)
}

// serveSocket is the Socket Mode WebSocket, opened with a ticket from
// apps.connections.open; each ticket opens one connection.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[ticket]
	delete(s.tickets, ticket)
	s.mu.Unlock()
	if !valid {
		http.Error(w, "invalid or used ticket", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx := r.Context()
	if err := c.Write(ctx, websocket.MessageText, mustJSON(map[string]any{"type": "hello", "num_connections": 1,
		"debug_info": map[string]any{"host": "applink-test", "approximate_connection_time": 18060}, "connection_info": map[string]any{"app_id": AppID}})); err != nil {
		return
	}
	s.mu.Lock()
	if s.conn != nil {
		s.conn.CloseNow()
	}
	s.conn = c
	s.connects++
	// Whatever was sent on an older connection and not acknowledged goes
	// out again on this one.
	for _, d := range s.queue {
		d.conn = nil
	}
	s.mu.Unlock()
	s.wake()
	defer func() {
		s.mu.Lock()
		if s.conn == c {
			s.conn = nil
		}
		s.mu.Unlock()
		c.CloseNow()
	}()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		s.mu.Lock()
		found := false
		if json.Unmarshal(data, &ack) == nil {
			for i, d := range s.queue {
				if d.id == ack.EnvelopeID && d.conn != nil {
					s.queue = slices.Delete(s.queue, i, i+1)
					s.acked = append(s.acked, ack.EnvelopeID)
					found = true
					break
				}
			}
		}
		if !found {
			s.badAcks = append(s.badAcks, string(data))
		}
		s.mu.Unlock()
	}
}

// deliverLoop sends queued deliveries: over the open Socket Mode
// connection (again after the ack timeout without an acknowledgement), or to
// the Events API routes (again while the app answers other than 200, at
// most three retries, as Slack does).
func (s *Server) deliverLoop(stop chan struct{}) {
	client := &http.Client{Timeout: 30 * time.Second}
	for {
		s.mu.Lock()
		var next *delivery
		now := time.Now()
		events := s.eventsURL != ""
		c := s.conn
		for _, d := range s.queue {
			if (events && (d.attempts == 0 || now.Sub(d.sentAt) > 100*time.Millisecond)) || (!events && c != nil && (d.conn != c || now.Sub(d.sentAt) > s.ackTimeout)) {
				next = d
				break
			}
		}
		if next != nil {
			next.attempts++
			next.sentAt = now
			next.conn = c
		}
		target := s.eventsURL
		if next != nil && next.kind == "interactive" {
			target = s.interactiveURL
		}
		s.mu.Unlock()
		if next == nil {
			select {
			case <-stop:
				return
			case <-s.kick:
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if events {
			s.post(client, target, next)
			continue
		}
		env := map[string]any{"envelope_id": next.id, "type": next.kind, "payload": json.RawMessage(next.payload),
			"accepts_response_payload": next.kind == "interactive", "retry_attempt": next.attempts - 1, "retry_reason": ""}
		if next.attempts > 1 {
			env["retry_reason"] = "timeout"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.Write(ctx, websocket.MessageText, mustJSON(env))
		cancel()
	}
}

// post sends one Events API delivery, signed.
func (s *Server) post(client *http.Client, target string, d *delivery) {
	body := d.payload
	ctype := "application/json"
	if d.kind == "interactive" {
		body = []byte(url.Values{"payload": {string(d.payload)}}.Encode())
		ctype = "application/x-www-form-urlencoded"
	}
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		s.t.Errorf("slacktest: delivery target %q: %v", target, err)
		return
	}
	req.Header.Set("Content-Type", ctype)
	Sign(req.Header, SigningSecret, time.Now(), body)
	if d.attempts > 1 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(d.attempts-1))
		req.Header.Set("X-Slack-Retry-Reason", "http_error")
	}
	status := 0
	if resp, err := client.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, status)
	if status == http.StatusOK || d.attempts > 3 {
		if i := slices.Index(s.queue, d); i >= 0 {
			s.queue = slices.Delete(s.queue, i, i+1)
		}
		if status == http.StatusOK {
			s.acked = append(s.acked, d.id)
		}
	}
}

// Sign sets Slack's v0 signature headers for body at time at.
func Sign(h http.Header, secret string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
}

// PostSigned POSTs body to target signed with secret at time at (a forger
// uses another secret or an old time) and returns the status and body.
func PostSigned(target, contentType, secret string, at time.Time, body []byte) (int, string) {
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", contentType)
	if secret != "" {
		Sign(req.Header, secret, at, body)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
