// Package discordtest is an in-process fake of Discord for tests: the
// Gateway (a WebSocket speaking JSON: Hello, Identify with the token and
// intents checked, heartbeats acknowledged, dispatches with sequence
// numbers, Resume that replays what was missed — and a new session that
// replays nothing —, Reconnect, Invalid Session, the close codes Discord
// uses) and the REST endpoints a bot uses for direct messages
// (gateway/bot, users/@me, channels, a channel's messages paged by after
// and before, newest first, create and edit
// messages with nonce enforcement and component validation, interaction
// callbacks and follow-ups, attachment downloads from a CDN path that
// must not see the bot token). Ids are snowflakes of the time they were
// made, as Discord's are. It answers with Discord's error shapes
// (HTTP status, JSON code and message, nested form errors) and rate
// limits (429 with retry_after and the X-RateLimit headers) on demand.
// Only loopback is used.
package discordtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Identities the fake knows.
const (
	Token = "MTEwMDAwMDAwMDAwMDAwMDAx.Gfake1.not-a-real-discord-bot-token"
	BotID = "1100000000000000001"
	// BotName is the bot user's name (GET /users/@me).
	BotName = "hestia-test"
	// AppID is the application; for bots it equals the bot user's id.
	AppID = BotID
)

// Gateway intents the fake filters by.
const (
	IntentGuildMessages  = 1 << 9
	IntentDirectMessages = 1 << 12
	IntentMessageContent = 1 << 15
)

// User is a Discord account.
type User struct {
	ID   string
	Name string
	Bot  bool
}

// Button is a button as sent.
type Button struct {
	Style    int    `json:"style"`
	Label    string `json:"label"`
	CustomID string `json:"custom_id"`
}

// Message is a message as the channel shows it now.
type Message struct {
	ID        string
	ChannelID string
	GuildID   string
	Author    User
	Content   string
	Buttons   []Button
	Flags     int
	Nonce     string
	ReplyTo   string
	Edits     int
	Files     []File
	// wire is what the message's MESSAGE_CREATE carried beyond the
	// message itself (attachments, mentions), shown by the REST API too.
	wire map[string]any
}

// File is an uploaded attachment.
type File struct {
	Name, Type string
	Data       []byte
}

// Response is how an interaction was answered.
type Response struct {
	Type    int
	Content string
	Flags   int
	At      time.Duration // after the interaction was dispatched
}

// Interaction is a button press the fake dispatched and what answered it.
type Interaction struct {
	ID        string
	Token     string
	MessageID string
	created   time.Time
	Response  *Response
	FollowUps []Response
}

type channel struct {
	id, guild string
	typ       int
	recipient string
}

type logged struct {
	seq  int64
	data []byte
}

type session struct {
	id      string
	seq     int64
	log     []logged
	intents int
}

// wsConn is one gateway connection.
type wsConn struct {
	c      *websocket.Conn
	sess   *session
	noAck  bool
	lastHB time.Time
}

// Server is the fake.
type Server struct {
	// URL is the fake's root; API is the REST root to configure
	// (URL + "/api/v10").
	URL, API string
	t        testing.TB
	start    time.Time

	mu           sync.Mutex // guards the fields below
	nextID       int64
	low          uint64 // the low bits of the next id made for a given time
	interval     time.Duration
	privileged   bool
	channels     map[string]*channel
	messages     map[string]*Message
	order        []string
	nonces       map[string]nonceSeen
	nonceWindow  time.Duration
	interactions map[string]*Interaction
	sessions     map[string]*session
	current      *session
	conn         *wsConn
	identifies   int
	resumes      int
	invalidNext  bool
	throttle     map[string][]float64
	fail         map[string][]failure
	drain        map[string]float64
	blobs        map[string][]byte
	calls        map[string]int
	lastHBSeq    *int64
	hosts        []string
	identifyData map[string]any
}

type nonceSeen struct {
	msg string
	at  time.Time
}

type failure struct {
	status, code int
	message      string
}

// New starts a fake closed with the test.
func New(t testing.TB) *Server {
	s := &Server{t: t, start: time.Now(), interval: 41250 * time.Millisecond,
		channels: map[string]*channel{}, messages: map[string]*Message{}, nonces: map[string]nonceSeen{}, nonceWindow: 5 * time.Minute,
		interactions: map[string]*Interaction{}, sessions: map[string]*session{}, throttle: map[string][]float64{},
		fail: map[string][]failure{}, drain: map[string]float64{}, blobs: map[string][]byte{}, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v10/gateway/bot", s.bot(s.gatewayBot))
	mux.HandleFunc("GET /api/v10/users/@me", s.bot(s.me))
	mux.HandleFunc("GET /api/v10/channels/{cid}", s.bot(s.getChannel))
	mux.HandleFunc("GET /api/v10/channels/{cid}/messages", s.bot(s.listMessages))
	mux.HandleFunc("POST /api/v10/channels/{cid}/messages", s.bot(s.createMessage))
	mux.HandleFunc("PATCH /api/v10/channels/{cid}/messages/{mid}", s.bot(s.editMessage))
	mux.HandleFunc("POST /api/v10/interactions/{iid}/{token}/callback", s.route(s.callback))
	mux.HandleFunc("POST /api/v10/webhooks/{app}/{token}", s.route(s.followUp))
	mux.HandleFunc("GET /attachments/{cid}/{aid}/{name}", s.attachment)
	mux.HandleFunc("GET /{$}", s.gateway)
	mux.HandleFunc("GET /resume", s.gateway)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		s.mu.Lock()
		c := s.conn
		s.mu.Unlock()
		if c != nil {
			_ = c.c.CloseNow()
		}
		ts.Close()
	})
	s.URL = ts.URL
	s.API = ts.URL + "/api/v10"
	return s
}

// discordEpoch is the first moment of snowflakes (2015), in ms.
const discordEpoch = 1420070400000

// id returns a new snowflake of now, above every one made before; s.mu is
// held.
func (s *Server) id() string {
	next := max((time.Now().UnixMilli()-discordEpoch)<<22, s.nextID+1)
	s.nextID = next
	return strconv.FormatInt(next, 10)
}

// idAt returns a new snowflake of the moment at; s.mu is held.
func (s *Server) idAt(at time.Time) string {
	for {
		s.low++
		id := strconv.FormatInt((at.UnixMilli()-discordEpoch)<<22|int64(s.low&0x3fffff), 10)
		if _, taken := s.messages[id]; !taken {
			return id
		}
	}
}

// idTime is the moment a snowflake was made.
func idTime(id string) time.Time {
	n, _ := strconv.ParseInt(id, 10, 64)
	return time.UnixMilli(n>>22 + discordEpoch)
}

// idLess orders two snowflakes.
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// SetHeartbeatInterval sets the interval Hello announces to connections
// made from now on.
func (s *Server) SetHeartbeatInterval(d time.Duration) {
	s.mu.Lock()
	s.interval = d
	s.mu.Unlock()
}

// AllowPrivilegedIntents lets Identify ask for MESSAGE_CONTENT (off by
// default: an application must switch it on in the Developer Portal).
func (s *Server) AllowPrivilegedIntents() {
	s.mu.Lock()
	s.privileged = true
	s.mu.Unlock()
}

// SetNonceWindow sets how long an enforced nonce is remembered.
func (s *Server) SetNonceWindow(d time.Duration) {
	s.mu.Lock()
	s.nonceWindow = d
	s.mu.Unlock()
}

// ---- REST ----

// writeJSON writes a JSON answer with the rate-limit headers every
// Discord answer carries.
func (s *Server) writeJSON(w http.ResponseWriter, route string, status int, v any) {
	s.mu.Lock()
	remaining, after := "4", "1.000"
	if d, ok := s.drain[route]; ok {
		delete(s.drain, route)
		remaining, after = "0", strconv.FormatFloat(d, 'f', 3, 64)
	}
	s.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", remaining)
	h.Set("X-RateLimit-Reset-After", after)
	h.Set("X-RateLimit-Bucket", fmt.Sprintf("%x", len(route)))
	if v == nil {
		w.WriteHeader(status)
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError writes Discord's error shape.
func (s *Server) apiError(w http.ResponseWriter, route string, status, code int, msg string, errs map[string]any) {
	body := map[string]any{"code": code, "message": msg}
	if errs != nil {
		body["errors"] = errs
	}
	s.writeJSON(w, route, status, body)
}

// formError is a 400 50035 naming one field.
func (s *Server) formError(w http.ResponseWriter, route, path, code, msg string) {
	var tree any = map[string]any{"_errors": []any{map[string]any{"code": code, "message": msg}}}
	parts := strings.Split(path, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		tree = map[string]any{parts[i]: tree}
	}
	s.apiError(w, route, http.StatusBadRequest, 50035, "Invalid Form Body", tree.(map[string]any))
}

type handler func(w http.ResponseWriter, r *http.Request, route string)

// route applies injected rate limits and failures.
func (s *Server) route(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		route := strings.Replace(r.Pattern, "/api/v10", "", 1)
		s.mu.Lock()
		s.calls[route]++
		var after float64 = -1
		if q := s.throttle[route]; len(q) > 0 {
			after, s.throttle[route] = q[0], q[1:]
		}
		var f *failure
		if q := s.fail[route]; len(q) > 0 && after < 0 {
			f, s.fail[route] = &q[0], q[1:]
		}
		s.mu.Unlock()
		if !strings.HasPrefix(r.Header.Get("User-Agent"), "DiscordBot (") {
			// Discord's edge refuses clients that do not say who they are.
			s.apiError(w, route, http.StatusForbidden, 0, "User-Agent must be 'DiscordBot ($url, $versionNumber)'", nil)
			return
		}
		if after >= 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(after+0.999)))
			w.Header().Set("X-RateLimit-Scope", "user")
			s.mu.Lock()
			s.drain[route] = after
			s.mu.Unlock()
			s.writeJSON(w, route, http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.", "retry_after": after, "global": false})
			return
		}
		if f != nil {
			s.apiError(w, route, f.status, f.code, f.message, nil)
			return
		}
		h(w, r, route)
	}
}

// bot is route for endpoints that need the bot token.
func (s *Server) bot(h handler) http.HandlerFunc {
	return s.route(func(w http.ResponseWriter, r *http.Request, route string) {
		if r.Header.Get("Authorization") != "Bot "+Token {
			s.apiError(w, route, http.StatusUnauthorized, 0, "401: Unauthorized", nil)
			return
		}
		h(w, r, route)
	})
}

// Throttle makes the next calls of route (a pattern without the API
// root, e.g. "POST /channels/{cid}/messages") answer 429 with these
// retry_after values in turn.
func (s *Server) Throttle(route string, retryAfter ...float64) {
	s.mu.Lock()
	s.throttle[route] = append(s.throttle[route], retryAfter...)
	s.mu.Unlock()
}

// Drain makes the next answer on route say its bucket is empty for
// resetAfter seconds (X-RateLimit-Remaining: 0).
func (s *Server) Drain(route string, resetAfter float64) {
	s.mu.Lock()
	s.drain[route] = resetAfter
	s.mu.Unlock()
}

// Fail makes the next call of route answer an error in Discord's shape.
func (s *Server) Fail(route string, status, code int, message string) {
	s.mu.Lock()
	s.fail[route] = append(s.fail[route], failure{status, code, message})
	s.mu.Unlock()
}

// Calls counts requests that reached route.
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

func (s *Server) gatewayBot(w http.ResponseWriter, r *http.Request, route string) {
	s.writeJSON(w, route, http.StatusOK, map[string]any{"url": "ws" + strings.TrimPrefix(s.URL, "http"), "shards": 1,
		"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}})
}

// me is the bot's own user object.
func (s *Server) me(w http.ResponseWriter, r *http.Request, route string) {
	s.writeJSON(w, route, http.StatusOK, map[string]any{"id": BotID, "username": BotName, "discriminator": "0", "global_name": nil,
		"avatar": nil, "bot": true, "verified": true, "flags": 0, "mfa_enabled": false})
}

func (s *Server) getChannel(w http.ResponseWriter, r *http.Request, route string) {
	s.mu.Lock()
	ch := s.channels[r.PathValue("cid")]
	s.mu.Unlock()
	if ch == nil {
		s.apiError(w, route, http.StatusNotFound, 10003, "Unknown Channel", nil)
		return
	}
	out := map[string]any{"id": ch.id, "type": ch.typ}
	if ch.guild != "" {
		out["guild_id"] = ch.guild
	} else {
		out["recipients"] = []any{map[string]any{"id": ch.recipient}}
	}
	s.writeJSON(w, route, http.StatusOK, out)
}

type outBody struct {
	Content    *string `json:"content"`
	Nonce      any     `json:"nonce"`
	Enforce    bool    `json:"enforce_nonce"`
	Flags      *int    `json:"flags"`
	Components *[]struct {
		Type       int `json:"type"`
		Components []struct {
			Type     int    `json:"type"`
			Style    int    `json:"style"`
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
			URL      string `json:"url"`
		} `json:"components"`
	} `json:"components"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
	Reference *struct {
		MessageID       string `json:"message_id"`
		FailIfNotExists *bool  `json:"fail_if_not_exists"`
	} `json:"message_reference"`
	Attachments []struct {
		ID       int    `json:"id"`
		Filename string `json:"filename"`
	} `json:"attachments"`
}

// validate checks what Discord checks of a message body; it writes the
// error and returns false when the body is refused.
func (s *Server) validate(w http.ResponseWriter, route string, b *outBody) ([]Button, bool) {
	if b.Content != nil && utf8.RuneCountInString(*b.Content) > 2000 {
		s.formError(w, route, "content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
		return nil, false
	}
	if b.Flags != nil && *b.Flags&^(1<<2|1<<12) != 0 {
		s.formError(w, route, "flags", "MESSAGE_FLAGS_INVALID", "Invalid flags.")
		return nil, false
	}
	var buttons []Button
	if b.Components != nil {
		if len(*b.Components) > 5 {
			s.formError(w, route, "components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.")
			return nil, false
		}
		seen := map[string]bool{}
		for i, row := range *b.Components {
			if row.Type != 1 || len(row.Components) == 0 || len(row.Components) > 5 {
				s.formError(w, route, fmt.Sprintf("components.%d", i), "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "An action row needs 1 to 5 buttons.")
				return nil, false
			}
			for j, c := range row.Components {
				at := fmt.Sprintf("components.%d.components.%d", i, j)
				switch {
				case c.Type != 2:
					s.formError(w, route, at+".type", "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (2,).")
					return nil, false
				case c.Style < 1 || c.Style > 5:
					s.formError(w, route, at+".style", "BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5}.")
					return nil, false
				case utf8.RuneCountInString(c.Label) > 80:
					s.formError(w, route, at+".label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.")
					return nil, false
				case c.Style != 5 && (c.CustomID == "" || c.URL != ""):
					s.formError(w, route, at+".custom_id", "BUTTON_COMPONENT_CUSTOM_ID_REQUIRED", "A custom id is required")
					return nil, false
				case utf8.RuneCountInString(c.CustomID) > 100:
					s.formError(w, route, at+".custom_id", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
					return nil, false
				case c.CustomID != "" && seen[c.CustomID]:
					s.formError(w, route, at+".custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated")
					return nil, false
				}
				seen[c.CustomID] = true
				buttons = append(buttons, Button{Style: c.Style, Label: c.Label, CustomID: c.CustomID})
			}
		}
	}
	if n, ok := b.Nonce.(string); ok && utf8.RuneCountInString(n) > 25 {
		s.formError(w, route, "nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
		return nil, false
	}
	return buttons, true
}

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request, route string) {
	cid := r.PathValue("cid")
	var b outBody
	var files []File
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
			s.apiError(w, route, http.StatusBadRequest, 50109, "The request body contains invalid JSON.", nil)
			return
		}
	case "multipart/form-data":
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				s.apiError(w, route, http.StatusBadRequest, 50109, "The request body contains invalid multipart data.", nil)
				return
			}
			data, _ := io.ReadAll(io.LimitReader(part, 11<<20))
			switch {
			case part.FormName() == "payload_json":
				if err := json.Unmarshal(data, &b); err != nil {
					s.apiError(w, route, http.StatusBadRequest, 50109, "The request body contains invalid JSON.", nil)
					return
				}
			case strings.HasPrefix(part.FormName(), "files["):
				if len(data) > 10<<20 {
					s.apiError(w, route, http.StatusRequestEntityTooLarge, 40005, "Request entity too large", nil)
					return
				}
				files = append(files, File{Name: part.FileName(), Type: part.Header.Get("Content-Type"), Data: data})
			}
		}
	default:
		s.apiError(w, route, http.StatusBadRequest, 50035, "Invalid Form Body", nil)
		return
	}
	buttons, ok := s.validate(w, route, &b)
	if !ok {
		return
	}
	content := ""
	if b.Content != nil {
		content = *b.Content
	}
	if strings.TrimSpace(content) == "" && len(buttons) == 0 && len(files) == 0 {
		s.apiError(w, route, http.StatusBadRequest, 50006, "Cannot send an empty message", nil)
		return
	}
	nonce := ""
	switch n := b.Nonce.(type) {
	case string:
		nonce = n
	case float64:
		nonce = strconv.FormatFloat(n, 'f', 0, 64)
	}
	s.mu.Lock()
	ch := s.channels[cid]
	if ch == nil {
		s.mu.Unlock()
		s.apiError(w, route, http.StatusNotFound, 10003, "Unknown Channel", nil)
		return
	}
	if b.Enforce && nonce != "" {
		if seen, ok := s.nonces[cid+"\x00"+nonce]; ok && time.Since(seen.at) < s.nonceWindow {
			m := *s.messages[seen.msg]
			s.mu.Unlock()
			s.writeJSON(w, route, http.StatusOK, messageJSON(&m))
			return
		}
	}
	if b.Reference != nil {
		if _, ok := s.messages[b.Reference.MessageID]; !ok && (b.Reference.FailIfNotExists == nil || *b.Reference.FailIfNotExists) {
			s.mu.Unlock()
			s.formError(w, route, "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
			return
		}
	}
	m := &Message{ID: s.id(), ChannelID: cid, GuildID: ch.guild, Author: User{ID: BotID, Name: "hestia", Bot: true}, Content: content, Buttons: buttons, Nonce: nonce, Files: files}
	if b.Flags != nil {
		m.Flags = *b.Flags
	}
	if b.Reference != nil {
		m.ReplyTo = b.Reference.MessageID
	}
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	if b.Enforce && nonce != "" {
		s.nonces[cid+"\x00"+nonce] = nonceSeen{msg: m.ID, at: time.Now()}
	}
	out := messageJSON(m)
	if nonce != "" {
		out["nonce"] = nonce
	}
	s.mu.Unlock()
	s.writeJSON(w, route, http.StatusOK, out)
	// The bot sees its own messages, as on Discord.
	s.dispatchMessage(m, nil)
}

// listMessages is GET /channels/{cid}/messages: at most limit (1–100,
// default 50) messages, newest first — the newest of the channel, the
// newest before `before`, or the oldest after `after` — in the shape the
// gateway sent them.
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, route string) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.formError(w, route, "limit", "NUMBER_TYPE_MAX", "Must be between 1 and 100.")
			return
		}
		limit = n
	}
	var anchors []string
	for _, k := range []string{"around", "before", "after"} {
		if !q.Has(k) {
			continue
		}
		anchors = append(anchors, k)
		if v := q.Get(k); !snowflakeID(v) {
			s.formError(w, route, k, "NUMBER_TYPE_COERCE", fmt.Sprintf("Value %q is not snowflake.", v))
			return
		}
	}
	if len(anchors) > 1 || slices.Contains(anchors, "around") {
		// Discord takes one of them; the fake wants callers to mean one,
		// and does not page around a message.
		s.formError(w, route, anchors[0], "BASE_TYPE_BAD", "Use one of before or after.")
		return
	}
	cid := r.PathValue("cid")
	s.mu.Lock()
	if s.channels[cid] == nil {
		s.mu.Unlock()
		s.apiError(w, route, http.StatusNotFound, 10003, "Unknown Channel", nil)
		return
	}
	var in []*Message
	for _, m := range s.messages {
		if m.ChannelID == cid {
			in = append(in, m)
		}
	}
	slices.SortFunc(in, func(a, b *Message) int {
		switch {
		case idLess(a.ID, b.ID):
			return -1
		case idLess(b.ID, a.ID):
			return 1
		}
		return 0
	})
	var page []*Message
	switch {
	case q.Has("after"):
		after := q.Get("after")
		for _, m := range in {
			if idLess(after, m.ID) && len(page) < limit {
				page = append(page, m)
			}
		}
	case q.Has("before"):
		before := q.Get("before")
		i := 0
		for i < len(in) && idLess(in[i].ID, before) {
			i++
		}
		page = in[max(0, i-limit):i]
	default:
		page = in[max(0, len(in)-limit):]
	}
	out := make([]any, 0, len(page))
	for i := len(page) - 1; i >= 0; i-- {
		m := page[i]
		j := messageJSON(m)
		for k, v := range m.wire {
			if k != "member" { // the REST message carries no member
				j[k] = v
			}
		}
		out = append(out, j)
	}
	s.mu.Unlock()
	s.writeJSON(w, route, http.StatusOK, out)
}

// snowflakeID reports whether v is 1–20 digits.
func snowflakeID(v string) bool {
	if v == "" || len(v) > 20 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (s *Server) editMessage(w http.ResponseWriter, r *http.Request, route string) {
	var b outBody
	if r.Header.Get("Content-Type") != "application/json" {
		s.apiError(w, route, http.StatusBadRequest, 50035, "Invalid Form Body", nil)
		return
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
		s.apiError(w, route, http.StatusBadRequest, 50109, "The request body contains invalid JSON.", nil)
		return
	}
	buttons, ok := s.validate(w, route, &b)
	if !ok {
		return
	}
	s.mu.Lock()
	m := s.messages[r.PathValue("mid")]
	if m == nil || m.ChannelID != r.PathValue("cid") {
		s.mu.Unlock()
		s.apiError(w, route, http.StatusNotFound, 10008, "Unknown Message", nil)
		return
	}
	if m.Author.ID != BotID {
		s.mu.Unlock()
		s.apiError(w, route, http.StatusForbidden, 50005, "Cannot edit a message authored by another user", nil)
		return
	}
	if b.Content != nil {
		m.Content = *b.Content
	}
	if b.Components != nil {
		m.Buttons = buttons
	}
	if strings.TrimSpace(m.Content) == "" && len(m.Buttons) == 0 && len(m.Files) == 0 {
		s.mu.Unlock()
		s.apiError(w, route, http.StatusBadRequest, 50006, "Cannot send an empty message", nil)
		return
	}
	m.Edits++
	out := messageJSON(m)
	s.mu.Unlock()
	s.writeJSON(w, route, http.StatusOK, out)
}

func messageJSON(m *Message) map[string]any {
	var rows []any
	if len(m.Buttons) > 0 {
		var bs []any
		for _, b := range m.Buttons {
			bs = append(bs, map[string]any{"type": 2, "style": b.Style, "label": b.Label, "custom_id": b.CustomID})
		}
		rows = append(rows, map[string]any{"type": 1, "components": bs})
	}
	out := map[string]any{"id": m.ID, "channel_id": m.ChannelID, "type": 0, "content": m.Content, "flags": m.Flags,
		"author": userJSON(m.Author), "components": rows, "attachments": []any{}, "mentions": []any{}, "timestamp": idTime(m.ID).UTC().Format("2006-01-02T15:04:05.000000+00:00")}
	if m.GuildID != "" {
		out["guild_id"] = m.GuildID
	}
	return out
}

func userJSON(u User) map[string]any {
	out := map[string]any{"id": u.ID, "username": u.Name, "global_name": u.Name, "discriminator": "0"}
	if u.Bot {
		out["bot"] = true
	}
	return out
}

// callback answers an interaction: once, within 3 s, with a type that
// fits a button press.
func (s *Server) callback(w http.ResponseWriter, r *http.Request, route string) {
	var b struct {
		Type int `json:"type"`
		Data *struct {
			Content string `json:"content"`
			Flags   int    `json:"flags"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
		s.apiError(w, route, http.StatusBadRequest, 50109, "The request body contains invalid JSON.", nil)
		return
	}
	s.mu.Lock()
	in := s.interactions[r.PathValue("iid")]
	var refuse func()
	switch {
	case in == nil || in.Token != r.PathValue("token") || time.Since(in.created) > 3*time.Second:
		refuse = func() { s.apiError(w, route, http.StatusNotFound, 10062, "Unknown interaction", nil) }
	case in.Response != nil:
		refuse = func() {
			s.apiError(w, route, http.StatusBadRequest, 40060, "Interaction has already been acknowledged.", nil)
		}
	case b.Type == 4 && (b.Data == nil || strings.TrimSpace(b.Data.Content) == ""):
		refuse = func() { s.apiError(w, route, http.StatusBadRequest, 50006, "Cannot send an empty message", nil) }
	case b.Type < 4 || b.Type > 7:
		refuse = func() {
			s.formError(w, route, "type", "INTERACTION_RESPONSE_TYPE_INVALID", "Invalid interaction response type")
		}
	default:
		resp := &Response{Type: b.Type, At: time.Since(in.created)}
		if b.Type == 4 {
			resp.Content, resp.Flags = b.Data.Content, b.Data.Flags
		}
		in.Response = resp
	}
	s.mu.Unlock()
	if refuse != nil {
		refuse()
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) followUp(w http.ResponseWriter, r *http.Request, route string) {
	var b struct {
		Content string `json:"content"`
		Flags   int    `json:"flags"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
		s.apiError(w, route, http.StatusBadRequest, 50109, "The request body contains invalid JSON.", nil)
		return
	}
	s.mu.Lock()
	var in *Interaction
	for _, x := range s.interactions {
		if x.Token == r.PathValue("token") {
			in = x
		}
	}
	var refuse func()
	switch {
	case in == nil || r.PathValue("app") != AppID || time.Since(in.created) > 15*time.Minute:
		refuse = func() { s.apiError(w, route, http.StatusNotFound, 10015, "Unknown Webhook", nil) }
	case in.Response == nil:
		refuse = func() {
			s.apiError(w, route, http.StatusBadRequest, 40060, "Interaction has not been acknowledged.", nil)
		}
	default:
		in.FollowUps = append(in.FollowUps, Response{Type: 0, Content: b.Content, Flags: b.Flags, At: time.Since(in.created)})
	}
	id := s.id()
	s.mu.Unlock()
	if refuse != nil {
		refuse()
		return
	}
	s.writeJSON(w, route, http.StatusOK, map[string]any{"id": id, "content": b.Content, "flags": b.Flags})
}

// attachment serves a blob as the CDN does: signed URL, no bot token.
func (s *Server) attachment(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		s.t.Errorf("discordtest: an Authorization header was sent to the CDN")
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	data, ok := s.blobs[r.PathValue("aid")]
	s.mu.Unlock()
	if !ok || r.URL.Query().Get("hm") == "" {
		http.Error(w, "This content is no longer available.", http.StatusNotFound)
		return
	}
	_, _ = w.Write(data)
}

// ---- the gateway ----

func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.SetReadLimit(1 << 20)
	ctx := context.Background()
	if r.URL.Query().Get("v") != "10" {
		_ = c.Close(4012, "Invalid API version.")
		return
	}
	if e := r.URL.Query().Get("encoding"); e != "" && e != "json" {
		_ = c.Close(4002, "Error while decoding payload.")
		return
	}
	s.mu.Lock()
	if s.conn != nil {
		// One shard: a second connection replaces the first.
		_ = s.conn.c.CloseNow()
	}
	wc := &wsConn{c: c, lastHB: time.Now()}
	s.conn = wc
	s.hosts = append(s.hosts, r.URL.Path)
	interval := s.interval
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.conn == wc {
			s.conn = nil
		}
		s.mu.Unlock()
		_ = c.CloseNow()
	}()
	if !s.write(wc, map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": interval.Milliseconds()}}) {
		return
	}
	// The watchdog closes a connection that stops heartbeating.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(interval / 4)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.mu.Lock()
				late := time.Since(wc.lastHB) > 2*interval+500*time.Millisecond
				s.mu.Unlock()
				if late {
					_ = c.Close(4009, "Session timed out.")
					return
				}
			}
		}
	}()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			// A client closing with 1000 or 1001 ends its session.
			if code := websocket.CloseStatus(err); code == websocket.StatusNormalClosure || code == websocket.StatusGoingAway {
				s.mu.Lock()
				if wc.sess != nil {
					delete(s.sessions, wc.sess.id)
				}
				s.mu.Unlock()
			}
			return
		}
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			_ = c.Close(4002, "Error while decoding payload.")
			return
		}
		switch p.Op {
		case 1:
			var seq *int64
			if err := json.Unmarshal(p.D, &seq); err != nil {
				_ = c.Close(4002, "Error while decoding payload.")
				return
			}
			s.mu.Lock()
			wc.lastHB = time.Now()
			s.lastHBSeq = seq
			ack := !wc.noAck
			s.mu.Unlock()
			if ack && !s.write(wc, map[string]any{"op": 11}) {
				return
			}
		case 2:
			if !s.identify(wc, p.D) {
				return
			}
		case 6:
			if !s.resume(wc, p.D) {
				return
			}
		default:
			_ = c.Close(4001, "Unknown opcode.")
			return
		}
	}
}

func (s *Server) identify(wc *wsConn, d json.RawMessage) bool {
	var id struct {
		Token      string            `json:"token"`
		Intents    *int              `json:"intents"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(d, &id); err != nil || id.Intents == nil || id.Properties["os"] == "" || id.Properties["browser"] == "" || id.Properties["device"] == "" {
		_ = wc.c.Close(4002, "Error while decoding payload.")
		return false
	}
	s.mu.Lock()
	already := wc.sess != nil
	privileged := s.privileged
	s.mu.Unlock()
	switch {
	case already:
		_ = wc.c.Close(4005, "Already authenticated.")
		return false
	case id.Token != Token:
		_ = wc.c.Close(4004, "Authentication failed.")
		return false
	case *id.Intents < 0 || *id.Intents >= 1<<26:
		_ = wc.c.Close(4013, "Invalid intent(s).")
		return false
	case *id.Intents&IntentMessageContent != 0 && !privileged:
		_ = wc.c.Close(4014, "Disallowed intent(s).")
		return false
	}
	var raw map[string]any
	_ = json.Unmarshal(d, &raw)
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	sess := &session{id: hex.EncodeToString(b), intents: *id.Intents}
	s.mu.Lock()
	s.identifies++
	s.identifyData = raw
	s.sessions[sess.id] = sess
	s.current = sess
	wc.sess = sess
	s.mu.Unlock()
	return s.dispatch(sess, "READY", map[string]any{
		"v": 10, "user": userJSON(User{ID: BotID, Name: "hestia", Bot: true}), "guilds": []any{}, "session_id": sess.id,
		"resume_gateway_url": "ws" + strings.TrimPrefix(s.URL, "http") + "/resume", "application": map[string]any{"id": AppID, "flags": 0},
	})
}

func (s *Server) resume(wc *wsConn, d json.RawMessage) bool {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       *int64 `json:"seq"`
	}
	if err := json.Unmarshal(d, &rs); err != nil || rs.Seq == nil {
		_ = wc.c.Close(4002, "Error while decoding payload.")
		return false
	}
	if rs.Token != Token {
		_ = wc.c.Close(4004, "Authentication failed.")
		return false
	}
	s.mu.Lock()
	sess := s.sessions[rs.SessionID]
	if s.invalidNext {
		s.invalidNext, sess = false, nil
		delete(s.sessions, rs.SessionID)
	}
	if sess == nil {
		s.mu.Unlock()
		// Not resumable: the client waits and identifies on this connection.
		return s.write(wc, map[string]any{"op": 9, "d": false})
	}
	if *rs.Seq > sess.seq {
		s.mu.Unlock()
		_ = wc.c.Close(4007, "Invalid seq.")
		return false
	}
	s.resumes++
	wc.sess = sess
	// Replayed under the lock, so no new event overtakes a missed one.
	for _, l := range sess.log {
		if l.seq <= *rs.Seq {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := wc.c.Write(ctx, websocket.MessageText, l.data)
		cancel()
		if err != nil {
			s.mu.Unlock()
			return false
		}
	}
	s.mu.Unlock()
	return s.dispatch(sess, "RESUMED", map[string]any{})
}

// write sends one payload on a connection.
func (s *Server) write(wc *wsConn, v any) bool {
	data, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return wc.c.Write(ctx, websocket.MessageText, data) == nil
}

// dispatch numbers an event in a session, logs it for resuming, and sends
// it when the session has a live connection. It reports false when the
// write failed.
func (s *Server) dispatch(sess *session, event string, d any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess.seq++
	data, _ := json.Marshal(map[string]any{"op": 0, "t": event, "s": sess.seq, "d": d})
	sess.log = append(sess.log, logged{seq: sess.seq, data: data})
	if len(sess.log) > 1000 {
		sess.log = sess.log[1:]
	}
	if s.conn == nil || s.conn.sess != sess {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.conn.c.Write(ctx, websocket.MessageText, data) == nil
}

// dispatchMessage sends MESSAGE_CREATE as the current session's intents
// allow: DMs need DIRECT_MESSAGES, guild messages GUILD_MESSAGES, and a
// guild message's content is blanked without MESSAGE_CONTENT unless it
// mentions the bot.
func (s *Server) dispatchMessage(m *Message, extra map[string]any) {
	s.mu.Lock()
	sess := s.current
	s.mu.Unlock()
	if sess == nil {
		return
	}
	out := messageJSON(m)
	for k, v := range extra {
		out[k] = v
	}
	if len(extra) > 0 {
		s.mu.Lock()
		m.wire = extra
		s.mu.Unlock()
	}
	if m.GuildID == "" {
		if sess.intents&IntentDirectMessages == 0 {
			return
		}
	} else {
		if sess.intents&IntentGuildMessages == 0 {
			return
		}
		mentioned := strings.Contains(m.Content, "<@"+BotID+">")
		if sess.intents&IntentMessageContent == 0 && !mentioned {
			out["content"] = ""
		}
	}
	s.dispatch(sess, "MESSAGE_CREATE", out)
}

// dm returns the DM channel between the bot and user, making it.
func (s *Server) dm(u User) string {
	for _, ch := range s.channels {
		if ch.typ == 1 && ch.recipient == u.ID {
			return ch.id
		}
	}
	ch := &channel{id: s.id(), typ: 1, recipient: u.ID}
	s.channels[ch.id] = ch
	return ch.id
}

// DMChannel returns the DM channel id between the bot and user.
func (s *Server) DMChannel(u User) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dm(u)
}

// AddMessage stores a message user wrote in a channel at the moment at,
// without any event (history from before the test, or a message posted
// while the bot had no session: a new session never sees it); it returns
// the message id, a snowflake of at.
func (s *Server) AddMessage(u User, channelID, text string, at time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	if ch == nil {
		s.t.Fatalf("discordtest: AddMessage in unknown channel %s", channelID)
	}
	m := &Message{ID: s.idAt(at), ChannelID: channelID, GuildID: ch.guild, Author: u, Content: text}
	s.messages[m.ID] = m
	return m.ID
}

// GuildChannel makes a text channel in a guild.
func (s *Server) GuildChannel(guild string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := &channel{id: s.id(), typ: 0, guild: guild}
	s.channels[ch.id] = ch
	return ch.id
}

// DM has user write text to the bot; it returns the message id.
func (s *Server) DM(u User, text string) string {
	s.mu.Lock()
	m := &Message{ID: s.id(), ChannelID: s.dm(u), Author: u, Content: text}
	s.messages[m.ID] = m
	s.mu.Unlock()
	s.dispatchMessage(m, nil)
	return m.ID
}

// Post has user write text in a guild channel; mentions lists user ids
// mentioned (put "<@BOT_ID>" in text too, as the client does).
func (s *Server) Post(u User, channelID, text string, mentions ...string) string {
	s.mu.Lock()
	ch := s.channels[channelID]
	m := &Message{ID: s.id(), ChannelID: channelID, GuildID: ch.guild, Author: u, Content: text}
	s.messages[m.ID] = m
	s.mu.Unlock()
	var ms []any
	for _, id := range mentions {
		ms = append(ms, map[string]any{"id": id, "username": "x"})
	}
	s.dispatchMessage(m, map[string]any{"mentions": ms, "member": map[string]any{"nick": u.Name + " (nick)"}})
	return m.ID
}

// VoiceDM has user send a voice message (an audio/ogg attachment served
// from the fake's CDN path); it returns the message id.
func (s *Server) VoiceDM(u User, audio []byte) string {
	s.mu.Lock()
	m := &Message{ID: s.id(), ChannelID: s.dm(u), Author: u}
	aid := s.id()
	s.blobs[aid] = audio
	s.messages[m.ID] = m
	s.mu.Unlock()
	url := fmt.Sprintf("%s/attachments/%s/%s/voice-message.ogg?ex=1&is=2&hm=abc", s.URL, m.ChannelID, aid)
	s.dispatchMessage(m, map[string]any{"flags": 1 << 13, "attachments": []any{map[string]any{
		"id": aid, "filename": "voice-message.ogg", "content_type": "audio/ogg", "size": len(audio), "url": url, "proxy_url": url, "duration_secs": 1.5, "waveform": "AAAA",
	}}})
	return m.ID
}

// Upload is a file a user attaches to a message.
type Upload struct {
	Name, ContentType string
	Data              []byte
}

// FilesDM has user send a DM with text and attachments (served from the
// fake's CDN path with a signed query, like Discord's); it returns the
// message id.
func (s *Server) FilesDM(u User, text string, files ...Upload) string {
	s.mu.Lock()
	m := &Message{ID: s.id(), ChannelID: s.dm(u), Author: u, Content: text}
	var atts []any
	for _, f := range files {
		aid := s.id()
		s.blobs[aid] = f.Data
		url := fmt.Sprintf("%s/attachments/%s/%s/%s?ex=1&is=2&hm=abc", s.URL, m.ChannelID, aid, f.Name)
		a := map[string]any{"id": aid, "filename": f.Name, "size": len(f.Data), "url": url, "proxy_url": url}
		if f.ContentType != "" {
			a["content_type"] = f.ContentType
		}
		atts = append(atts, a)
	}
	s.messages[m.ID] = m
	s.mu.Unlock()
	s.dispatchMessage(m, map[string]any{"attachments": atts})
	return m.ID
}

// Dispatch sends an arbitrary event in the current session (for
// malformed-payload tests).
func (s *Server) Dispatch(event string, d any) {
	s.mu.Lock()
	sess := s.current
	s.mu.Unlock()
	if sess != nil {
		s.dispatch(sess, event, d)
	}
}

// Raw writes a frame as is on the live connection.
func (s *Server) Raw(frame string) {
	s.mu.Lock()
	wc := s.conn
	s.mu.Unlock()
	if wc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = wc.c.Write(ctx, websocket.MessageText, []byte(frame))
	}
}

// Press has user press the button carrying customID on the message ref
// ("CHANNEL_ID/MESSAGE_ID"); it returns the interaction id. The press is
// dispatched as Discord does, whatever the message holds, so tests can
// forge presses.
func (s *Server) Press(u User, ref, customID string) string {
	cid, mid, _ := strings.Cut(ref, "/")
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	s.mu.Lock()
	in := &Interaction{ID: s.id(), Token: "aW50ZXJhY3Rpb246" + hex.EncodeToString(b), MessageID: mid, created: time.Now()}
	s.interactions[in.ID] = in
	m := s.messages[mid]
	ch := s.channels[cid]
	s.mu.Unlock()
	msg := map[string]any{"id": mid, "channel_id": cid, "type": 0, "content": "", "author": userJSON(User{ID: BotID, Name: "hestia", Bot: true})}
	if m != nil {
		msg = messageJSON(m)
	}
	d := map[string]any{"id": in.ID, "application_id": AppID, "type": 3, "token": in.Token, "version": 1, "channel_id": cid,
		"data": map[string]any{"custom_id": customID, "component_type": 2}, "message": msg}
	if ch != nil {
		d["channel"] = map[string]any{"id": cid, "type": ch.typ}
	}
	if ch != nil && ch.guild != "" {
		d["guild_id"] = ch.guild
		d["member"] = map[string]any{"user": userJSON(u), "nick": nil}
	} else {
		d["user"] = userJSON(u)
	}
	s.Dispatch("INTERACTION_CREATE", d)
	return in.ID
}

// PressRaw dispatches an INTERACTION_CREATE built by the test.
func (s *Server) PressRaw(d map[string]any) {
	token, _ := d["token"].(string)
	id, _ := d["id"].(string)
	if token != "" && id != "" {
		s.mu.Lock()
		s.interactions[id] = &Interaction{ID: id, Token: token, created: time.Now()}
		s.mu.Unlock()
	}
	s.Dispatch("INTERACTION_CREATE", d)
}

// Interaction returns a copy of what answered an interaction.
func (s *Server) Interaction(id string) Interaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.interactions[id]
	if in == nil {
		return Interaction{}
	}
	out := *in
	if in.Response != nil {
		r := *in.Response
		out.Response = &r
	}
	out.FollowUps = append([]Response(nil), in.FollowUps...)
	return out
}

// Messages returns the bot's messages in a channel, oldest first.
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, id := range s.order {
		if m := s.messages[id]; m.ChannelID == channelID {
			out = append(out, *m)
		}
	}
	return out
}

// Reconnect asks the client to reconnect (opcode 7).
func (s *Server) Reconnect() {
	s.mu.Lock()
	wc := s.conn
	s.mu.Unlock()
	if wc != nil {
		s.write(wc, map[string]any{"op": 7, "d": nil})
	}
}

// Drop cuts the live connection without a close frame (a network blip);
// the session stays resumable.
func (s *Server) Drop() {
	s.mu.Lock()
	wc := s.conn
	s.conn = nil
	s.mu.Unlock()
	if wc != nil {
		_ = wc.c.CloseNow()
	}
}

// Close closes the live connection with a close code.
func (s *Server) Close(code int, reason string) {
	s.mu.Lock()
	wc := s.conn
	s.mu.Unlock()
	if wc != nil {
		go func() { _ = wc.c.Close(websocket.StatusCode(code), reason) }()
	}
}

// StopAcks makes the live connection stop acknowledging heartbeats (a
// zombie connection).
func (s *Server) StopAcks() {
	s.mu.Lock()
	if s.conn != nil {
		s.conn.noAck = true
	}
	s.mu.Unlock()
}

// InvalidateNextResume makes the next Resume fail with Invalid Session.
func (s *Server) InvalidateNextResume() {
	s.mu.Lock()
	s.invalidNext = true
	s.mu.Unlock()
}

// Identifies and Resumes count the sessions started and resumed.
func (s *Server) Identifies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identifies
}

// Resumes counts successful resumes.
func (s *Server) Resumes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumes
}

// IdentifyPayload returns the last Identify's d.
func (s *Server) IdentifyPayload() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identifyData
}

// Paths lists the gateway paths connected to, in order ("/" for the
// gateway, "/resume" for resume_gateway_url).
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hosts...)
}

// LastHeartbeatSeq is the sequence the last heartbeat carried (nil for null).
func (s *Server) LastHeartbeatSeq() *int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastHBSeq
}

// Ready reports whether a connection with a session is live.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil && s.conn.sess != nil
}
