// Package signaltest is an in-process fake of a signal-cli daemon in
// JSON-RPC mode (`signal-cli -a NUMBER daemon --socket PATH`) for tests:
// newline-delimited JSON-RPC 2.0 on a UNIX socket in a temporary folder,
// with signal-cli's shapes. It delivers "receive" notifications the test
// pushes (text, group messages, reactions, voice notes, sync messages,
// receipts, raw lines), per subscription (subscribeReceive) or, in the
// automatic receive mode, to every connection; it answers send with a
// timestamp and per-recipient results, keeps what the recipient's phone
// would show (edits included), serves getAttachment, version and, when
// made a multi-account daemon, listAccounts, and fails on demand
// with signal-cli's real error objects (rate limits, unregistered users,
// untrusted keys, I/O errors, a daemon that dies mid-send). It is
// stricter than signal-cli where Signal's clients are: a text style must
// lie inside the message, an edit must name one of the account's messages
// in the same conversation, at most 10 edits within 24 hours.
package signaltest

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// Account is the assistant's number the fake serves; Version the
// signal-cli version it claims.
const (
	Account = "+15550001111"
	Version = "0.13.22"
)

// Person is someone who writes to the assistant.
type Person struct {
	Number string // empty for someone who hides their number
	UUID   string
	Name   string
}

// Revision is one edit of a sent message.
type Revision struct {
	Timestamp int64 // the edit's own timestamp
	Target    int64 // the revision it named (editTimestamp)
	Text      string
	Styles    []string
}

// Message is a message the assistant sent, as the recipient sees it.
type Message struct {
	Timestamp   int64
	Recipient   string // number or UUID; empty for a group
	GroupID     string
	Text        string   // the text as first sent
	Styles      []string // its text styles
	Attachments []string // data URIs
	Edits       []Revision
}

// Current is the text and styles shown now (the last edit's).
func (m Message) Current() (string, []string) {
	if n := len(m.Edits); n > 0 {
		return m.Edits[n-1].Text, m.Edits[n-1].Styles
	}
	return m.Text, m.Styles
}

// Failure kinds the next call of a method can fail with.
type Failure int

const (
	// RateLimit is newer signal-cli's answer: error -5 carrying the
	// results (RATE_LIMIT_FAILURE).
	RateLimit Failure = iota + 1
	// RateLimitResult is older signal-cli's: a success answer whose only
	// result is RATE_LIMIT_FAILURE.
	RateLimitResult
	// ProofRequired is a captcha challenge with retryAfterSeconds.
	ProofRequired
	// Unregistered is error -1 "The user … is not registered."
	Unregistered
	// UntrustedKey is error -4 (a safety number changed).
	UntrustedKey
	// IOError is error -3 (the network).
	IOError
	// Internal is error -32603.
	Internal
	// Drop sends the message, then closes the connection without
	// answering (the daemon restarting mid-send).
	Drop
)

// Server is the fake daemon.
type Server struct {
	Socket string
	t      testing.TB
	ln     net.Listener

	mu           sync.Mutex // guards the fields below
	conns        map[*conn]bool
	nextSub      int
	nextTS       int64
	auto         bool     // signal-cli's automatic receive mode
	wrapped      bool     // subscription notifications as {"subscription","result"}
	noSubscribe  bool     // a daemon older than subscribeReceive
	noAttachment bool     // a daemon older than getAttachment
	multi        bool     // started without -a: listAccounts answers
	accounts     []string // what listAccounts names
	held         []map[string]any
	sent         []*Message
	attachments  map[string][]byte
	unregistered map[string]bool
	groups       map[string]bool
	fail         map[string][]failure
	calls        map[string]int
	requests     []Request
	changed      chan struct{} // closed and replaced on every change
}

type failure struct {
	kind  Failure
	after int64
}

// Request is one call as the fake received it.
type Request struct {
	Method string
	Params map[string]any
}

type conn struct {
	c    net.Conn
	wmu  sync.Mutex
	auto int   // the automatic subscription's id, or -1
	subs []int // subscribeReceive subscriptions
}

// New starts a fake daemon in manual receive mode (messages wait until a
// connection subscribes), on a socket in a fresh folder.
func New(t testing.TB) *Server {
	t.Helper()
	// Socket paths are short (108 bytes): not under t.TempDir's long name.
	dir, err := os.MkdirTemp("", "sigcli")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Socket: filepath.Join(dir, "socket"), t: t, conns: map[*conn]bool{}, nextTS: time.Now().UnixMilli(),
		attachments: map[string][]byte{}, unregistered: map[string]bool{}, groups: map[string]bool{},
		fail: map[string][]failure{}, calls: map[string]int{}, changed: make(chan struct{})}
	ln, err := net.Listen("unix", s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	go s.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		s.Restart()
		_ = os.RemoveAll(dir)
	})
	return s
}

// AutoReceive switches to signal-cli's automatic mode: every connection
// gets every message under an automatic subscription, and messages
// arriving with nobody connected are lost.
func (s *Server) AutoReceive(on bool) { s.set(func() { s.auto = on }) }

// Wrapped makes subscription notifications {"subscription": N,
// "result": {"envelope": …}} (the shape signal-cli's manual documents).
func (s *Server) Wrapped(on bool) { s.set(func() { s.wrapped = on }) }

// Old makes the daemon lack subscribeReceive and getAttachment.
func (s *Server) Old() { s.set(func() { s.noSubscribe, s.noAttachment = true, true }) }

// MultiAccount makes the daemon one started without -a, serving the
// given numbers: listAccounts names them (a daemon started with -a NUMBER,
// the default, has no listAccounts).
func (s *Server) MultiAccount(numbers ...string) {
	s.set(func() { s.multi, s.accounts = true, numbers })
}

// Unregister makes sends to id fail as to someone not on Signal.
func (s *Server) Unregister(id string) { s.set(func() { s.unregistered[id] = true }) }

// AddGroup makes a group the assistant is a member of.
func (s *Server) AddGroup(id string) { s.set(func() { s.groups[id] = true }) }

// Fail makes the next call of method fail; after is the wait a rate
// limit or captcha asks for, in seconds (0: none given).
func (s *Server) Fail(method string, kind Failure, after int64) {
	s.set(func() { s.fail[method] = append(s.fail[method], failure{kind, after}) })
}

func (s *Server) set(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
}

// notify wakes waiters. s.mu is held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Restart closes every connection, as a restarting daemon does.
func (s *Server) Restart() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[*conn]bool{}
	s.notify()
	s.mu.Unlock()
	for c := range conns {
		_ = c.c.Close()
	}
}

// Calls counts the calls of a method.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Requests are the calls of a method so far.
func (s *Server) Requests(method string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// Sent is what the assistant sent, oldest first (copies).
func (s *Server) Sent() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.sent))
	for i, m := range s.sent {
		out[i] = *m
		out[i].Edits = append([]Revision(nil), m.Edits...)
	}
	return out
}

// Wait waits until cond holds or fails the test; cond may call the
// Server's methods (Sent, Calls, …), and is checked after every change.
func (s *Server) Wait(what string, cond func() bool) {
	s.t.Helper()
	s.wait(what, cond, false)
}

// wait checks cond under the lock when locked.
func (s *Server) wait(what string, cond func() bool, locked bool) {
	s.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		ch := s.changed
		var ok bool
		if locked {
			ok = cond()
		}
		s.mu.Unlock()
		if !locked {
			ok = cond()
		}
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			s.t.Fatalf("signaltest: timed out waiting for %s", what)
		}
	}
}

// WaitSubscribed waits for n subscribed (or, in automatic mode,
// connected) connections.
func (s *Server) WaitSubscribed(n int) {
	s.t.Helper()
	s.wait(fmt.Sprintf("%d subscribed connection(s)", n), func() bool {
		k := 0
		for c := range s.conns {
			if len(c.subs) > 0 || (s.auto && s.noSubscribe) {
				k++
			}
		}
		return k >= n
	}, true)
}

// WaitSent waits until n messages were sent and returns them.
func (s *Server) WaitSent(n int) []Message {
	s.t.Helper()
	s.wait(fmt.Sprintf("%d sent message(s)", n), func() bool { return len(s.sent) >= n }, true)
	return s.Sent()
}

// WaitEdits waits until message i has n edits and returns it.
func (s *Server) WaitEdits(i, n int) Message {
	s.t.Helper()
	s.wait(fmt.Sprintf("%d edit(s) of message %d", n, i), func() bool { return len(s.sent) > i && len(s.sent[i].Edits) >= n }, true)
	return s.Sent()[i]
}

// timestamp is a fresh, strictly increasing timestamp. s.mu is held.
func (s *Server) timestamp() int64 {
	s.nextTS = max(s.nextTS+1, time.Now().UnixMilli())
	return s.nextTS
}

// envelope starts an envelope from p.
func (s *Server) envelope(p Person, ts int64) map[string]any {
	env := map[string]any{"sourceDevice": 1, "timestamp": ts, "serverReceivedTimestamp": ts + 3, "serverDeliveredTimestamp": ts + 5}
	src := p.Number
	if src == "" {
		src = p.UUID
	}
	env["source"] = src
	if p.Number != "" {
		env["sourceNumber"] = p.Number
	} else {
		env["sourceNumber"] = nil
	}
	if p.UUID != "" {
		env["sourceUuid"] = p.UUID
	}
	if p.Name != "" {
		env["sourceName"] = p.Name
	}
	return env
}

func dataMessage(ts int64, text string) map[string]any {
	dm := map[string]any{"timestamp": ts, "message": text, "expiresInSeconds": 0, "isExpirationUpdate": false, "viewOnce": false}
	if text == "" {
		dm["message"] = nil
	}
	return dm
}

// Text delivers a 1:1 message from p and returns its timestamp.
func (s *Server) Text(p Person, text string) int64 {
	s.mu.Lock()
	ts := s.timestamp()
	env := s.envelope(p, ts)
	env["dataMessage"] = dataMessage(ts, text)
	s.deliver(env)
	s.mu.Unlock()
	return ts
}

// GroupText delivers a group message from p.
func (s *Server) GroupText(p Person, groupID, text string) int64 {
	s.mu.Lock()
	ts := s.timestamp()
	env := s.envelope(p, ts)
	dm := dataMessage(ts, text)
	dm["groupInfo"] = map[string]any{"groupId": groupID, "groupName": "Family", "revision": 3, "type": "DELIVER"}
	env["dataMessage"] = dm
	s.deliver(env)
	s.mu.Unlock()
	return ts
}

// React delivers p's reaction to the message with timestamp target,
// written by author (a number; the assistant's when empty).
func (s *Server) React(p Person, target int64, emoji, author string, remove bool) int64 {
	if author == "" {
		author = Account
	}
	s.mu.Lock()
	ts := s.timestamp()
	env := s.envelope(p, ts)
	dm := dataMessage(ts, "")
	dm["reaction"] = map[string]any{"emoji": emoji, "targetAuthor": author, "targetAuthorNumber": author,
		"targetAuthorUuid": "2f5a0d4e-8c1b-4e57-9d0a-5b3c1e7f9a21", "targetSentTimestamp": target, "isRemove": remove}
	env["dataMessage"] = dm
	s.deliver(env)
	s.mu.Unlock()
	return ts
}

// Voice delivers a voice note from p; getAttachment serves its bytes.
func (s *Server) Voice(p Person, mime string, audio []byte) int64 {
	s.mu.Lock()
	ts := s.timestamp()
	id := "Vx" + strconv.FormatInt(ts, 36) + ".aac"
	s.attachments[id] = audio
	env := s.envelope(p, ts)
	dm := dataMessage(ts, "")
	dm["attachments"] = []any{map[string]any{"contentType": mime, "filename": nil, "id": id, "size": len(audio),
		"width": nil, "height": nil, "caption": nil, "uploadTimestamp": ts - 100}}
	env["dataMessage"] = dm
	s.deliver(env)
	s.mu.Unlock()
	return ts
}

// File is an attachment a person sends.
type File struct {
	Name, ContentType string // Name may be empty (a photo)
	Data              []byte
}

// Files delivers a message from p with text (may be empty) and files;
// getAttachment serves their bytes. It returns the message's timestamp.
func (s *Server) Files(p Person, text string, files ...File) int64 {
	s.mu.Lock()
	ts := s.timestamp()
	env := s.envelope(p, ts)
	dm := dataMessage(ts, text)
	var atts []any
	for i, f := range files {
		id := "F" + strconv.FormatInt(ts, 36) + strconv.Itoa(i) + ".bin"
		s.attachments[id] = f.Data
		var name any
		if f.Name != "" {
			name = f.Name
		}
		atts = append(atts, map[string]any{"contentType": f.ContentType, "filename": name, "id": id, "size": len(f.Data),
			"width": nil, "height": nil, "caption": nil, "uploadTimestamp": ts - 100})
	}
	dm["attachments"] = atts
	env["dataMessage"] = dm
	s.deliver(env)
	s.mu.Unlock()
	return ts
}

// Envelope delivers a raw envelope (sync messages, receipts, anything).
func (s *Server) Envelope(env map[string]any) {
	s.mu.Lock()
	s.deliver(env)
	s.mu.Unlock()
}

// RawLine writes line (and a newline) to every connection: malformed
// input, or notifications of shapes the helpers do not build.
func (s *Server) RawLine(line string) {
	s.mu.Lock()
	var cs []*conn
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.write([]byte(line))
	}
}

// deliver sends env to whoever receives it now, or holds it until a
// subscription in manual mode. s.mu is held.
func (s *Server) deliver(env map[string]any) {
	delivered := false
	for c := range s.conns {
		if s.auto && c.auto >= 0 {
			c.notify(map[string]any{"envelope": env, "account": Account, "subscription": c.auto})
			delivered = true
		}
		if s.auto && s.noSubscribe {
			c.notify(map[string]any{"envelope": env}) // an old daemon: no account, no subscription
			delivered = true
		}
		for _, id := range c.subs {
			if s.wrapped {
				c.notify(map[string]any{"subscription": id, "result": map[string]any{"envelope": env, "account": Account}})
			} else {
				c.notify(map[string]any{"envelope": env, "account": Account, "subscription": id})
			}
			delivered = true
		}
	}
	if !delivered && !s.auto {
		s.held = append(s.held, env) // the Signal server keeps it until someone receives
	}
	s.notify()
}

func (c *conn) notify(params map[string]any) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "receive", "params": params})
	if err != nil {
		panic(err)
	}
	c.write(b)
}

func (c *conn) write(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.c.Write(append(b, '\n'))
}

func (s *Server) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		c := &conn{c: nc, auto: -1}
		s.mu.Lock()
		if s.auto && !s.noSubscribe {
			c.auto = s.nextSub
			s.nextSub++
		}
		s.conns[c] = true
		s.notify()
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *Server) serve(c *conn) {
	defer func() {
		_ = c.c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.notify()
		s.mu.Unlock()
	}()
	r := bufio.NewReaderSize(c.c, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		if strings.TrimSpace(string(line)) == "" {
			continue
		}
		if !s.handle(c, line) {
			return
		}
	}
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// handle answers one request; false closes the connection.
func (s *Server) handle(c *conn, line []byte) bool {
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		ID      json.RawMessage `json:"id"`
	}
	reply := func(id json.RawMessage, result any, e *rpcError) {
		m := map[string]any{"jsonrpc": "2.0", "id": id}
		if len(id) == 0 {
			m["id"] = nil
		}
		if e != nil {
			m["error"] = e
		} else {
			m["result"] = result
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		c.write(b)
	}
	if err := json.Unmarshal(line, &req); err != nil {
		reply(nil, nil, &rpcError{Code: -32700, Message: "Failed to parse request: " + err.Error()})
		return true
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		reply(req.ID, nil, &rpcError{Code: -32600, Message: "method field must be set"})
		return true
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		s.t.Errorf("signaltest: %s sent as a notification (no id): its answer could not be matched", req.Method)
		return true
	}
	params := map[string]any{}
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, &params); err != nil {
			reply(req.ID, nil, &rpcError{Code: -32602, Message: "params must be an object: " + err.Error()})
			return true
		}
	}
	s.mu.Lock()
	s.calls[req.Method]++
	s.requests = append(s.requests, Request{Method: req.Method, Params: params})
	var f *failure
	if q := s.fail[req.Method]; len(q) > 0 {
		f, s.fail[req.Method] = &q[0], q[1:]
	}
	s.notify()
	s.mu.Unlock()
	if acct, ok := params["account"]; ok && acct != Account {
		reply(req.ID, nil, &rpcError{Code: -32602, Message: "Specified account does not exist"})
		return true
	}
	switch req.Method {
	case "subscribeReceive":
		if s.noSubscribeNow() {
			reply(req.ID, nil, &rpcError{Code: -32601, Message: "Method not implemented"})
			return true
		}
		s.mu.Lock()
		id := s.nextSub
		s.nextSub++
		c.subs = append(c.subs, id)
		held := s.held
		s.held = nil
		s.notify()
		s.mu.Unlock()
		reply(req.ID, id, nil)
		s.mu.Lock()
		for _, env := range held {
			s.deliver(env)
		}
		s.mu.Unlock()
	case "version":
		reply(req.ID, map[string]any{"version": Version}, nil)
	case "listAccounts":
		s.mu.Lock()
		multi, numbers := s.multi, s.accounts
		s.mu.Unlock()
		if !multi {
			reply(req.ID, nil, &rpcError{Code: -32601, Message: "Method not implemented"})
			return true
		}
		list := []map[string]string{}
		for _, n := range numbers {
			list = append(list, map[string]string{"number": n})
		}
		reply(req.ID, list, nil)
	case "getAttachment":
		s.getAttachment(req.ID, params, reply)
	case "send":
		return s.send(req.ID, params, f, reply)
	default:
		reply(req.ID, nil, &rpcError{Code: -32601, Message: "Method not implemented"})
	}
	return true
}

func (s *Server) noSubscribeNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noSubscribe
}

func (s *Server) getAttachment(id json.RawMessage, params map[string]any, reply func(json.RawMessage, any, *rpcError)) {
	s.mu.Lock()
	old := s.noAttachment
	data, ok := s.attachments[str(params["id"])]
	s.mu.Unlock()
	_, hasRecipient := params["recipient"]
	_, hasGroup := params["groupId"]
	switch {
	case old:
		reply(id, nil, &rpcError{Code: -32601, Message: "Method not implemented"})
	case str(params["id"]) == "":
		reply(id, nil, &rpcError{Code: -32600, Message: "argument --id is required"})
	case hasRecipient == hasGroup:
		reply(id, nil, &rpcError{Code: -32600, Message: "one of the arguments --recipient -g/--group-id is required"})
	case !ok:
		reply(id, nil, &rpcError{Code: -1, Message: "Could not find attachment with ID: " + str(params["id"])})
	default:
		reply(id, map[string]any{"data": base64.StdEncoding.EncodeToString(data)}, nil)
	}
}

var (
	numberRe = regexp.MustCompile(`^\+[1-9][0-9]{5,18}$`)
	uuidRe   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	styleRe  = regexp.MustCompile(`^(\d+):(\d+):(.+)$`)
	dataRe   = regexp.MustCompile(`^data:[a-z0-9.+-]+/[a-z0-9.+-]+(;filename=[^;,]+)?;base64,[A-Za-z0-9+/=]+$`)
	styles   = map[string]bool{"BOLD": true, "ITALIC": true, "SPOILER": true, "STRIKETHROUGH": true, "MONOSPACE": true}
)

func str(v any) string {
	s, _ := v.(string)
	return s
}

// list reads a parameter signal-cli takes as one value or an array.
func list(v any) ([]string, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case string:
		return []string{x}, true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

func (s *Server) send(id json.RawMessage, params map[string]any, f *failure, reply func(json.RawMessage, any, *rpcError)) bool {
	userErr := func(msg string) bool {
		reply(id, nil, &rpcError{Code: -1, Message: msg})
		return true
	}
	recipients, ok1 := list(params["recipient"])
	groups, ok2 := list(params["groupId"])
	texts, ok3 := list(params["textStyle"])
	atts, ok4 := list(params["attachments"])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		reply(id, nil, &rpcError{Code: -32602, Message: "Cannot deserialize value: recipient, groupId, textStyle and attachments are strings or arrays of strings"})
		return true
	}
	if len(recipients)+len(groups) != 1 {
		return userErr("this fake sends to exactly one recipient or group")
	}
	msg, hasMsg := params["message"].(string)
	if params["message"] != nil && !hasMsg {
		reply(id, nil, &rpcError{Code: -32602, Message: "message must be a string"})
		return true
	}
	if msg == "" && len(atts) == 0 {
		return userErr("Sending empty message is not allowed, either a message, attachment or sticker must be given.")
	}
	units := len(utf16.Encode([]rune(msg)))
	for _, t := range texts {
		m := styleRe.FindStringSubmatch(t)
		if m == nil {
			return userErr("Invalid textStyle syntax (" + t + ") expected 'start:length:STYLE'")
		}
		if !styles[m[3]] {
			return userErr("Invalid style: " + m[3])
		}
		start, _ := strconv.Atoi(m[1])
		length, _ := strconv.Atoi(m[2])
		if length == 0 || start+length > units {
			return userErr(fmt.Sprintf("text style %s lies outside the message (%d UTF-16 units)", t, units))
		}
	}
	for _, a := range atts {
		if !dataRe.MatchString(a) {
			return userErr("Failed to send message: Invalid data URI attachment (AttachmentInvalidException)")
		}
	}
	var recipient, group string
	if len(recipients) == 1 {
		recipient = recipients[0]
		if !numberRe.MatchString(recipient) && !uuidRe.MatchString(recipient) {
			return userErr("Invalid recipient: " + recipient)
		}
	} else {
		group = groups[0]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if group != "" && !s.groups[group] {
		reply(id, nil, &rpcError{Code: -1, Message: "Group not found: " + group})
		return true
	}
	if s.unregistered[recipient] {
		reply(id, nil, &rpcError{Code: -1, Message: "The user " + recipient + " is not registered."})
		return true
	}
	ts := s.timestamp()
	addr := map[string]any{"uuid": "6b1f0e0c-2a4d-4d5e-8f71-3c2b1a0d9e8f", "number": recipient}
	if uuidRe.MatchString(recipient) {
		addr = map[string]any{"uuid": recipient, "number": nil}
	}
	result := func(typ string, extra map[string]any) map[string]any {
		r := map[string]any{"recipientAddress": addr, "type": typ}
		if group != "" {
			r["groupId"] = group
		}
		for k, v := range extra {
			r[k] = v
		}
		return map[string]any{"timestamp": ts, "results": []any{r}}
	}
	if f != nil {
		switch f.kind {
		case RateLimit:
			extra := map[string]any{}
			if f.after > 0 {
				extra["retryAfterSeconds"] = f.after
			}
			reply(id, nil, &rpcError{Code: -5, Message: "Failed to send message due to rate limiting", Data: map[string]any{"response": result("RATE_LIMIT_FAILURE", extra)}})
			return true
		case RateLimitResult:
			reply(id, result("RATE_LIMIT_FAILURE", nil), nil)
			return true
		case ProofRequired:
			reply(id, nil, &rpcError{Code: -1, Message: "Failed to send message", Data: map[string]any{"response": result("RATE_LIMIT_FAILURE",
				map[string]any{"token": "f3a2c1d0-challenge", "retryAfterSeconds": f.after})}})
			return true
		case Unregistered:
			reply(id, nil, &rpcError{Code: -1, Message: "The user " + recipient + " is not registered."})
			return true
		case UntrustedKey:
			reply(id, nil, &rpcError{Code: -4, Message: "Failed to send message due to untrusted identities", Data: map[string]any{"response": result("IDENTITY_FAILURE", nil)}})
			return true
		case IOError:
			reply(id, nil, &rpcError{Code: -3, Message: "Failed to send message: Connection reset (IOException)"})
			return true
		case Internal:
			reply(id, nil, &rpcError{Code: -32603, Message: "java.lang.NullPointerException"})
			return true
		}
	}
	if et, ok := params["editTimestamp"]; ok {
		n, isNum := et.(float64)
		if !isNum || n != float64(int64(n)) {
			reply(id, nil, &rpcError{Code: -32602, Message: "editTimestamp must be an integer"})
			return true
		}
		target := int64(n)
		var orig *Message
		for _, m := range s.sent {
			if m.Recipient != recipient || m.GroupID != group {
				continue
			}
			if m.Timestamp == target {
				orig = m
			}
			for _, r := range m.Edits {
				if r.Timestamp == target {
					orig = m
				}
			}
		}
		switch {
		case orig == nil:
			reply(id, nil, &rpcError{Code: -1, Message: fmt.Sprintf("no message with timestamp %d in this conversation to edit", target)})
			return true
		case len(orig.Edits) >= 10:
			reply(id, nil, &rpcError{Code: -1, Message: "message edited 10 times already; Signal clients ignore more"})
			return true
		case time.Since(time.UnixMilli(orig.Timestamp)) > 24*time.Hour:
			reply(id, nil, &rpcError{Code: -1, Message: "message older than 24 hours; Signal clients ignore its edits"})
			return true
		}
		orig.Edits = append(orig.Edits, Revision{Timestamp: ts, Target: target, Text: msg, Styles: texts})
	} else {
		s.sent = append(s.sent, &Message{Timestamp: ts, Recipient: recipient, GroupID: group, Text: msg, Styles: texts, Attachments: atts})
	}
	s.notify()
	if f != nil && f.kind == Drop {
		return false // sent, never answered: the connection closes
	}
	reply(id, result("SUCCESS", nil), nil)
	return true
}
