// Package whatsapptest is an in-process fake of the WhatsApp Cloud API for
// tests. It serves what the whatsapp adapter calls and rejects what Meta
// rejects, with Meta's error shape ({"error":{"message","type","code",
// "error_subcode","error_data":{"details"},"fbtrace_id"}}):
//
//   - POST /{version}/{phone-number-id}/messages: bearer token checked
//     (missing: 104; wrong or expired: 190), the body decoded strictly
//     (unknown fields are errors, as typos would be at Meta), text up to
//     4,096 characters, interactive button messages (1 to 3 reply buttons,
//     unique ids of at most 256 bytes, unique titles of at most 20
//     characters, a body of at most 1,024), templates that exist in the
//     given language with the right number of body parameters (no newline,
//     tab or five spaces in a row), audio by uploaded media id, a context
//     message id that must name a known message; the 24-hour window (free
//     form only within 24 hours of the person's last message, else 131047,
//     answered at once or, as Meta often does, accepted and failed later
//     by a status webhook); unknown recipients (131026); queued failures
//     with any of Meta's codes (rate limits 130429, 131056, 80007, …);
//   - POST /{version}/{phone-number-id}/media: multipart uploads;
//   - GET /{version}/{phone-number-id} (the number's display_phone_number
//     and verified_name, ?fields= honoured);
//   - GET /{version}/{media-id} and the download URL it names, both only
//     with the bearer token;
//   - webhook deliveries to a target URL the test names, signed with the
//     app secret (X-Hub-Signature-256), and the subscription handshake.
//
// Nothing beyond loopback is used.
package whatsapptest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Credentials and ids the fake accepts.
const (
	Token         = "EAAtest-token-not-real"
	AppSecret     = "app-secret-not-real"
	VerifyToken   = "verify-token-not-real"
	PhoneNumberID = "106540352242922"
	DisplayNumber = "15550100001"
	VerifiedName  = "Hestia Test"
	WABAID        = "102290129340398"
	Version       = "v23.0"
)

// Sent is a message the business sent, as the fake accepted it.
type Sent struct {
	ID      string
	To      string
	Type    string // text, interactive, template, audio
	Text    string // the text body, or the interactive body
	Buttons []Button
	// Template is set for template messages.
	Template *Template
	Context  string // the quoted message id
	AudioID  string
}

// Button is a reply button as sent.
type Button struct {
	ID    string
	Title string
}

// Template is a template message as sent.
type Template struct {
	Name     string
	Language string
	Params   []string
}

// Msg is one inbound message built for a delivery.
type Msg struct {
	ID   string
	From string
	Name string
	obj  map[string]any
}

type mediaItem struct {
	data []byte
	mime string
	sum  string // the SHA-256 the API reports (tests may corrupt it)
}

// Server is the fake API.
type Server struct {
	URL string
	t   testing.TB

	mu          sync.Mutex // guards the fields below
	offset      time.Duration
	sent        []*Sent
	seq         int
	lastIn      map[string]time.Time
	known       map[string]bool
	messages    map[string]bool // ids of every message sent or received
	templates   map[string]int  // "name/lang" → body parameter count
	media       map[string]*mediaItem
	fail        []int
	retryAfter  int
	expired     bool
	asyncWindow bool
	target      string
	calls       map[string]int

	async sync.WaitGroup // deliveries of asynchronous statuses
}

// New starts a fake closed with the test.
func New(t testing.TB) *Server {
	s := &Server{t: t, lastIn: map[string]time.Time{}, known: map[string]bool{}, messages: map[string]bool{},
		templates: map[string]int{}, media: map[string]*mediaItem{}, calls: map[string]int{}}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.async.Wait()
		ts.Close()
	})
	s.URL = ts.URL
	return s
}

// Now is the fake's clock (real time plus what Advance added); give it
// to the adapter so both agree on the 24-hour window.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Add(s.offset)
}

// Advance moves the fake's clock forward.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	s.offset += d
	s.mu.Unlock()
}

// AddUser makes wa a WhatsApp user who can receive messages (templates
// only, until they write).
func (s *Server) AddUser(wa string) {
	s.mu.Lock()
	s.known[wa] = true
	s.mu.Unlock()
}

// AddTemplate approves a template with params body parameters.
func (s *Server) AddTemplate(name, lang string, params int) {
	s.mu.Lock()
	s.templates[name+"/"+lang] = params
	s.mu.Unlock()
}

// FailNext makes the next message sends fail with Meta's error codes, in
// turn (130429, 131056, 131047, 131026, 190, 131000, 100, …).
func (s *Server) FailNext(codes ...int) {
	s.mu.Lock()
	s.fail = append(s.fail, codes...)
	s.mu.Unlock()
}

// SetRetryAfter adds a Retry-After header of sec seconds to rate-limit
// answers (Meta usually sends none).
func (s *Server) SetRetryAfter(sec int) {
	s.mu.Lock()
	s.retryAfter = sec
	s.mu.Unlock()
}

// ExpireToken makes every later call fail with error 190 (expired).
func (s *Server) ExpireToken() {
	s.mu.Lock()
	s.expired = true
	s.mu.Unlock()
}

// AsyncWindowErrors: a free-form message outside the window is accepted
// and then failed by a status webhook (Meta's usual way) instead of being
// refused at once.
func (s *Server) AsyncWindowErrors(on bool) {
	s.mu.Lock()
	s.asyncWindow = on
	s.mu.Unlock()
}

// SetTarget names where deliveries go: the adapter's webhook route.
func (s *Server) SetTarget(u string) {
	s.mu.Lock()
	s.target = u
	s.mu.Unlock()
}

// Sent returns copies of the messages sent so far.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sent, len(s.sent))
	for i, m := range s.sent {
		out[i] = *m
	}
	return out
}

// Calls counts requests by kind: messages, upload, media, download.
func (s *Server) Calls(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[kind]
}

// AddMedia stores a file as if a user sent it and returns its media id.
func (s *Server) AddMedia(data []byte, mimeType string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addMediaLocked(data, mimeType)
}

func (s *Server) addMediaLocked(data []byte, mimeType string) string {
	s.seq++
	id := strconv.Itoa(1000000000000000 + s.seq)
	sum := sha256.Sum256(data)
	s.media[id] = &mediaItem{data: data, mime: mimeType, sum: hex.EncodeToString(sum[:])}
	return id
}

// CorruptMedia makes the API report a wrong SHA-256 for id.
func (s *Server) CorruptMedia(id string) {
	s.mu.Lock()
	if m := s.media[id]; m != nil {
		m.sum = strings.Repeat("0", 64)
	}
	s.mu.Unlock()
}

// Media returns an uploaded or added file.
func (s *Server) Media(id string) ([]byte, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.media[id]
	if m == nil {
		return nil, "", false
	}
	return m.data, m.mime, true
}

func (s *Server) newWamid() string {
	s.seq++
	return fmt.Sprintf("wamid.HBgLMTU1NTAxMDAwMDEVAgARGBI%010dAA==", s.seq)
}

// inbound records a message from a person: it opens their window.
func (s *Server) inbound(from, name string, obj map[string]any) Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().Add(s.offset)
	id := s.newWamid()
	s.known[from] = true
	s.lastIn[from] = now
	s.messages[id] = true
	obj["from"] = from
	obj["id"] = id
	obj["timestamp"] = strconv.FormatInt(now.Unix(), 10)
	return Msg{ID: id, From: from, Name: name, obj: obj}
}

// Text is a text message from a person.
func (s *Server) Text(from, name, body string) Msg {
	return s.inbound(from, name, map[string]any{"type": "text", "text": map[string]any{"body": body}})
}

// Press is a reply button press on the message ref.
func (s *Server) Press(from, name, ref, buttonID, title string) Msg {
	return s.inbound(from, name, map[string]any{"type": "interactive", "context": map[string]any{"from": DisplayNumber, "id": ref},
		"interactive": map[string]any{"type": "button_reply", "button_reply": map[string]any{"id": buttonID, "title": title}}})
}

// PressButton presses the button titled title on the sent message ref.
func (s *Server) PressButton(from, name, ref, title string) (Msg, error) {
	for _, m := range s.Sent() {
		if m.ID != ref {
			continue
		}
		for _, b := range m.Buttons {
			if b.Title == title {
				return s.Press(from, name, ref, b.ID, b.Title), nil
			}
		}
	}
	return Msg{}, fmt.Errorf("no button %q on message %s", title, ref)
}

// React is a reaction to the message ref.
func (s *Server) React(from, name, ref, emoji string) Msg {
	return s.inbound(from, name, map[string]any{"type": "reaction", "reaction": map[string]any{"message_id": ref, "emoji": emoji}})
}

// Voice is a voice note whose audio was stored with AddMedia.
func (s *Server) Voice(from, name, mediaID string) Msg {
	s.mu.Lock()
	m := s.media[mediaID]
	s.mu.Unlock()
	obj := map[string]any{"id": mediaID, "voice": true}
	if m != nil {
		obj["mime_type"], obj["sha256"] = m.mime, m.sum
	}
	return s.inbound(from, name, map[string]any{"type": "audio", "audio": obj})
}

// file is an image, video or document message whose bytes were stored
// with AddMedia (Meta names no size in the webhook; GET /{media-id} does).
func (s *Server) file(kind, from, name, mediaID, filename, caption string) Msg {
	s.mu.Lock()
	m := s.media[mediaID]
	s.mu.Unlock()
	obj := map[string]any{"id": mediaID}
	if m != nil {
		obj["mime_type"], obj["sha256"] = m.mime, m.sum
	}
	if caption != "" {
		obj["caption"] = caption
	}
	if filename != "" {
		obj["filename"] = filename
	}
	return s.inbound(from, name, map[string]any{"type": kind, kind: obj})
}

// Image is a picture (stored with AddMedia) with a caption.
func (s *Server) Image(from, name, mediaID, caption string) Msg {
	return s.file("image", from, name, mediaID, "", caption)
}

// Video is a video (stored with AddMedia) with a caption.
func (s *Server) Video(from, name, mediaID, caption string) Msg {
	return s.file("video", from, name, mediaID, "", caption)
}

// Document is a file (stored with AddMedia) with its name and a caption.
func (s *Server) Document(from, name, mediaID, filename, caption string) Msg {
	return s.file("document", from, name, mediaID, filename, caption)
}

// Sticker is a sticker, which is no file for the assistant.
func (s *Server) Sticker(from, name string) Msg {
	return s.inbound(from, name, map[string]any{"type": "sticker", "sticker": map[string]any{"id": "9990002", "mime_type": "image/webp", "animated": false}})
}

// Payload wraps messages in a delivery of the "messages" field.
func (s *Server) Payload(msgs ...Msg) []byte {
	var contacts, objs []map[string]any
	seen := map[string]bool{}
	for _, m := range msgs {
		if !seen[m.From] {
			seen[m.From] = true
			contacts = append(contacts, map[string]any{"profile": map[string]any{"name": m.Name}, "wa_id": m.From})
		}
		objs = append(objs, m.obj)
	}
	return s.wrap(map[string]any{"contacts": contacts, "messages": objs})
}

func (s *Server) wrap(value map[string]any) []byte {
	value["messaging_product"] = "whatsapp"
	value["metadata"] = map[string]any{"display_phone_number": DisplayNumber, "phone_number_id": PhoneNumberID}
	body, err := json.Marshal(map[string]any{"object": "whatsapp_business_account", "entry": []any{
		map[string]any{"id": WABAID, "changes": []any{map[string]any{"field": "messages", "value": value}}},
	}})
	if err != nil {
		s.t.Errorf("whatsapptest: encoding a delivery: %v", err)
	}
	return body
}

// StatusPayload is a delivery report for a sent message; code, when not
// zero, makes it a failure with that error.
func (s *Server) StatusPayload(id, recipient, status string, code int) []byte {
	st := map[string]any{"id": id, "status": status, "timestamp": strconv.FormatInt(s.Now().Unix(), 10), "recipient_id": recipient}
	if code != 0 {
		sh := shape(code)
		st["errors"] = []any{map[string]any{"code": code, "title": sh.title, "message": sh.title, "error_data": map[string]any{"details": sh.details}}}
	}
	return s.wrap(map[string]any{"statuses": []any{st}})
}

// Sign is the X-Hub-Signature-256 value Meta sends with body.
func Sign(body []byte) string {
	mac := hmac.New(sha256.New, []byte(AppSecret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Deliver posts the messages, signed, to the target and returns the
// answer's status.
func (s *Server) Deliver(msgs ...Msg) (int, error) {
	body := s.Payload(msgs...)
	return s.Post(body, Sign(body))
}

// Post sends body to the target with the given signature header ("" for
// none).
func (s *Server) Post(body []byte, signature string) (int, error) {
	s.mu.Lock()
	target := s.target
	s.mu.Unlock()
	if target == "" {
		return 0, fmt.Errorf("whatsapptest: no delivery target set")
	}
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "facebookexternalua")
	if signature != "" {
		req.Header.Set("X-Hub-Signature-256", signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Handshake performs the subscription check Meta runs when the webhook is
// configured and returns the answer's status and body.
func (s *Server) Handshake(mode, token, challenge string) (int, string, error) {
	s.mu.Lock()
	target := s.target
	s.mu.Unlock()
	q := url.Values{"hub.mode": {mode}, "hub.verify_token": {token}, "hub.challenge": {challenge}}
	resp, err := http.Get(target + "?" + q.Encode())
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// errShape is how Meta answers one error code.
type errShape struct {
	status   int
	title    string
	details  string
	typ      string
	subcode  int
	template bool
}

func shape(code int) errShape {
	switch code {
	case 130429:
		return errShape{status: 400, title: "Rate limit hit", details: "Cloud API message throughput has been reached."}
	case 131056:
		return errShape{status: 400, title: "(Business Account, Consumer Account) pair rate limit hit", details: "Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time."}
	case 131048:
		return errShape{status: 400, title: "Spam rate limit hit", details: "Message failed to send because there are restrictions on how many messages can be sent from this phone number."}
	case 80007:
		return errShape{status: 400, title: "Rate limit issues", details: "The WhatsApp Business Account has reached its rate limit."}
	case 4:
		return errShape{status: 400, title: "Application request limit reached", details: "Too many calls from this app."}
	case 131047:
		return errShape{status: 400, title: "Re-engagement message", details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number.", subcode: 2494010}
	case 131026:
		return errShape{status: 400, title: "Message Undeliverable", details: "Unable to deliver message. Reasons can include: the recipient's phone number is not a WhatsApp phone number; the recipient has not accepted the new Terms of Service; the recipient is using an old WhatsApp version."}
	case 131000:
		return errShape{status: 500, title: "Something went wrong", details: "Message failed to send due to an unknown error."}
	case 131016:
		return errShape{status: 503, title: "Service unavailable", details: "A service is temporarily unavailable."}
	case 190:
		return errShape{status: 401, title: "Error validating access token: Session has expired on Thursday, 01-Jan-26 00:00:00 PST.", typ: "OAuthException", subcode: 463}
	case 104:
		return errShape{status: 400, title: "An access token is required to request this resource.", typ: "OAuthException"}
	case 131009:
		return errShape{status: 400, title: "Parameter value is not valid"}
	case 131008:
		return errShape{status: 400, title: "Required parameter is missing"}
	case 132001:
		return errShape{status: 404, title: "Template name does not exist in the translation", template: true}
	case 132000:
		return errShape{status: 400, title: "Number of parameters does not match the expected number of params", template: true}
	case 132018:
		return errShape{status: 400, title: "There was an issue with the parameters in your template.", template: true}
	}
	return errShape{status: 400, title: "Invalid parameter"}
}

// writeError answers with Meta's error shape; details overrides the
// code's usual details when not empty.
func (s *Server) writeError(w http.ResponseWriter, code int, details string) {
	sh := shape(code)
	if details == "" {
		details = sh.details
	}
	typ := sh.typ
	if typ == "" {
		typ = "OAuthException" // what Meta puts on most Cloud API errors
	}
	msg := sh.title
	if code != 190 && code != 104 {
		msg = fmt.Sprintf("(#%d) %s", code, sh.title)
	}
	e := map[string]any{"message": msg, "type": typ, "code": code, "fbtrace_id": "AbCdEfGhIjK"}
	if sh.subcode != 0 {
		e["error_subcode"] = sh.subcode
	}
	if details != "" {
		e["error_data"] = map[string]any{"messaging_product": "whatsapp", "details": details}
	}
	s.mu.Lock()
	ra := s.retryAfter
	s.mu.Unlock()
	if ra > 0 && (code == 130429 || code == 131056 || code == 80007 || code == 4) {
		w.Header().Set("Retry-After", strconv.Itoa(ra))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(sh.status)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

var versionRe = regexp.MustCompile(`^v[0-9]+\.[0-9]+$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/download/") {
		s.serveDownload(w, r)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 2 || !versionRe.MatchString(parts[0]) {
		s.writeError(w, 100, "Unknown path components: "+r.URL.Path)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	switch {
	case r.Method == http.MethodPost && len(parts) == 3 && parts[2] == "messages":
		if parts[1] != PhoneNumberID {
			s.writeError(w, 100, fmt.Sprintf("Unsupported post request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", parts[1]))
			return
		}
		s.serveMessages(w, r)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[2] == "media":
		if parts[1] != PhoneNumberID {
			s.writeError(w, 100, fmt.Sprintf("Unsupported post request. Object with ID '%s' does not exist.", parts[1]))
			return
		}
		s.serveUpload(w, r)
	case r.Method == http.MethodGet && len(parts) == 2 && parts[1] == PhoneNumberID:
		s.servePhone(w, r)
	case r.Method == http.MethodGet && len(parts) == 2:
		s.serveMediaInfo(w, r, parts[1])
	default:
		s.writeError(w, 100, "Unsupported request: "+r.Method+" "+r.URL.Path)
	}
}

// authorized checks the bearer token; Meta accepts it only in the
// Authorization header or an access_token parameter, and Hestia must use
// the header.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	expired := s.expired
	s.mu.Unlock()
	h := r.Header.Get("Authorization")
	switch {
	case r.URL.Query().Has("access_token"):
		s.t.Errorf("whatsapptest: the access token was sent in the URL of %s", r.URL.Path)
		s.writeError(w, 190, "Invalid OAuth access token - do not send it in the URL.")
	case h == "":
		s.writeError(w, 104, "")
	case h != "Bearer "+Token:
		s.writeError(w, 190, "Invalid OAuth access token - Cannot parse access token")
	case expired:
		s.writeError(w, 190, "")
	default:
		return true
	}
	return false
}

// sendReq is the messages endpoint's body; unknown fields are refused.
type sendReq struct {
	MessagingProduct string `json:"messaging_product"`
	RecipientType    string `json:"recipient_type"`
	To               string `json:"to"`
	Type             string `json:"type"`
	Context          *struct {
		MessageID string `json:"message_id"`
	} `json:"context"`
	Text *struct {
		Body       string `json:"body"`
		PreviewURL bool   `json:"preview_url"`
	} `json:"text"`
	Interactive *struct {
		Type string `json:"type"`
		Body *struct {
			Text string `json:"text"`
		} `json:"body"`
		Action struct {
			Buttons []struct {
				Type  string `json:"type"`
				Reply struct {
					ID    string `json:"id"`
					Title string `json:"title"`
				} `json:"reply"`
			} `json:"buttons"`
		} `json:"action"`
	} `json:"interactive"`
	Template *struct {
		Name     string `json:"name"`
		Language struct {
			Code string `json:"code"`
		} `json:"language"`
		Components []struct {
			Type       string `json:"type"`
			Parameters []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"parameters"`
		} `json:"components"`
	} `json:"template"`
	Audio *struct {
		ID string `json:"id"`
	} `json:"audio"`
}

var spaces5 = regexp.MustCompile(`[\n\t]| {5}`)

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls["messages"]++
	var fail int
	if len(s.fail) > 0 {
		fail, s.fail = s.fail[0], s.fail[1:]
	}
	s.mu.Unlock()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.writeError(w, 100, "The request body must be JSON (Content-Type "+ct+")")
		return
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	var q sendReq
	if err := dec.Decode(&q); err != nil {
		s.writeError(w, 100, "Invalid request body: "+err.Error())
		return
	}
	if fail != 0 {
		s.writeError(w, fail, "")
		return
	}
	if q.MessagingProduct != "whatsapp" {
		s.writeError(w, 100, "The parameter messaging_product is required.")
		return
	}
	if q.RecipientType != "" && q.RecipientType != "individual" {
		s.writeError(w, 100, "recipient_type must be individual")
		return
	}
	if q.To == "" {
		s.writeError(w, 100, "The parameter to is required.")
		return
	}
	m := &Sent{To: q.To, Type: q.Type}
	if q.Context != nil {
		s.mu.Lock()
		ok := s.messages[q.Context.MessageID]
		s.mu.Unlock()
		if !ok {
			s.writeError(w, 131009, "context.message_id names no message in this conversation")
			return
		}
		m.Context = q.Context.MessageID
	}
	freeForm := true
	switch q.Type {
	case "text":
		if q.Text == nil || q.Text.Body == "" {
			s.writeError(w, 100, "The parameter text['body'] is required.")
			return
		}
		if n := utf8.RuneCountInString(q.Text.Body); n > 4096 {
			s.writeError(w, 100, fmt.Sprintf("Param text['body'] must be at most 4096 characters long (it has %d).", n))
			return
		}
		m.Text = q.Text.Body
	case "interactive":
		in := q.Interactive
		if in == nil || in.Type != "button" {
			s.writeError(w, 100, "interactive.type must be button (the only kind the fake serves)")
			return
		}
		if in.Body == nil || in.Body.Text == "" {
			s.writeError(w, 131008, "interactive.body.text is required")
			return
		}
		if n := utf8.RuneCountInString(in.Body.Text); n > 1024 {
			s.writeError(w, 131009, fmt.Sprintf("Message body text length invalid. Min length: 1, Max length: 1024 (it has %d)", n))
			return
		}
		bs := in.Action.Buttons
		if len(bs) < 1 || len(bs) > 3 {
			s.writeError(w, 131009, fmt.Sprintf("Buttons count invalid. Min: 1, Max: 3 (it has %d)", len(bs)))
			return
		}
		ids, titles := map[string]bool{}, map[string]bool{}
		for _, b := range bs {
			if b.Type != "reply" {
				s.writeError(w, 131009, "button type must be reply")
				return
			}
			if b.Reply.ID == "" || len(b.Reply.ID) > 256 || ids[b.Reply.ID] {
				s.writeError(w, 131009, "Button ID invalid or duplicated. Max length: 256")
				return
			}
			if n := utf8.RuneCountInString(b.Reply.Title); n < 1 || n > 20 || titles[b.Reply.Title] {
				s.writeError(w, 131009, "Button title length invalid or duplicated. Min length: 1, Max length: 20")
				return
			}
			ids[b.Reply.ID], titles[b.Reply.Title] = true, true
			m.Buttons = append(m.Buttons, Button{ID: b.Reply.ID, Title: b.Reply.Title})
		}
		m.Text = in.Body.Text
	case "template":
		freeForm = false
		t := q.Template
		if t == nil || t.Name == "" || t.Language.Code == "" {
			s.writeError(w, 131008, "template name and language.code are required")
			return
		}
		s.mu.Lock()
		want, ok := s.templates[t.Name+"/"+t.Language.Code]
		s.mu.Unlock()
		if !ok {
			s.writeError(w, 132001, fmt.Sprintf("template name (%s) does not exist in %s", t.Name, t.Language.Code))
			return
		}
		tpl := &Template{Name: t.Name, Language: t.Language.Code}
		for _, c := range t.Components {
			if c.Type != "body" {
				s.writeError(w, 132000, "the template has only a body component")
				return
			}
			for _, p := range c.Parameters {
				if p.Type != "text" || p.Text == "" || spaces5.MatchString(p.Text) {
					s.writeError(w, 132018, "Param text cannot have new-line/tab characters or more than 4 consecutive spaces")
					return
				}
				tpl.Params = append(tpl.Params, p.Text)
			}
		}
		if len(tpl.Params) != want {
			s.writeError(w, 132000, fmt.Sprintf("body: number of localizable_params (%d) does not match the expected number of params (%d)", len(tpl.Params), want))
			return
		}
		m.Template = tpl
	case "audio":
		if q.Audio == nil || q.Audio.ID == "" {
			s.writeError(w, 131008, "audio.id is required")
			return
		}
		s.mu.Lock()
		_, ok := s.media[q.Audio.ID]
		s.mu.Unlock()
		if !ok {
			s.writeError(w, 131009, "audio.id names no uploaded media")
			return
		}
		m.AudioID = q.Audio.ID
	default:
		s.writeError(w, 100, fmt.Sprintf("type %q is not served by the fake", q.Type))
		return
	}
	s.mu.Lock()
	known := s.known[q.To]
	last, wrote := s.lastIn[q.To]
	open := wrote && time.Now().Add(s.offset).Sub(last) < 24*time.Hour
	async := s.asyncWindow
	s.mu.Unlock()
	if !known {
		s.writeError(w, 131026, "")
		return
	}
	failLater := false
	if freeForm && !open {
		if !async {
			s.writeError(w, 131047, "")
			return
		}
		failLater = true
	}
	s.mu.Lock()
	m.ID = s.newWamid()
	s.messages[m.ID] = true
	if !failLater {
		s.sent = append(s.sent, m)
	}
	target := s.target
	s.mu.Unlock()
	ans := map[string]any{"messaging_product": "whatsapp", "contacts": []any{map[string]any{"input": q.To, "wa_id": q.To}}}
	msg := map[string]any{"id": m.ID}
	if q.Type == "template" {
		msg["message_status"] = "accepted"
	}
	ans["messages"] = []any{msg}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ans)
	if failLater && target != "" {
		body := s.StatusPayload(m.ID, q.To, "failed", 131047)
		s.async.Add(1)
		go func() {
			defer s.async.Done()
			time.Sleep(10 * time.Millisecond) // after the send's answer, as at Meta
			s.Post(body, Sign(body))
		}()
	}
}

func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls["upload"]++
	s.mu.Unlock()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		s.writeError(w, 100, "media upload must be multipart/form-data")
		return
	}
	mr := multipart.NewReader(io.LimitReader(r.Body, 17<<20), params["boundary"])
	var product, typ, fileType string
	var data []byte
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.writeError(w, 100, "unreadable multipart body: "+err.Error())
			return
		}
		b, _ := io.ReadAll(p)
		switch p.FormName() {
		case "messaging_product":
			product = string(b)
		case "type":
			typ = string(b)
		case "file":
			data, fileType = b, p.Header.Get("Content-Type")
		}
	}
	switch {
	case product != "whatsapp":
		s.writeError(w, 100, "The parameter messaging_product is required.")
	case len(data) == 0:
		s.writeError(w, 100, "The parameter file is required.")
	case typ == "" || fileType == "":
		s.writeError(w, 100, "The parameter type is required.")
	case len(data) > 16<<20:
		s.writeError(w, 131009, "audio files are limited to 16 MB")
	default:
		s.mu.Lock()
		id := s.addMediaLocked(data, fileType)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"id": id})
	}
}

// servePhone answers GET /{phone-number-id}: the fields asked for (all
// of them without ?fields=), and the id, as the Graph API does.
func (s *Server) servePhone(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls["phone"]++
	s.mu.Unlock()
	all := map[string]any{"verified_name": VerifiedName, "code_verification_status": "VERIFIED", "display_phone_number": DisplayNumber,
		"quality_rating": "GREEN", "platform_type": "CLOUD_API", "throughput": map[string]string{"level": "STANDARD"}}
	out := map[string]any{"id": PhoneNumberID}
	if f := r.URL.Query().Get("fields"); f != "" {
		for _, k := range strings.Split(f, ",") {
			v, ok := all[strings.TrimSpace(k)]
			if !ok {
				s.writeError(w, 100, fmt.Sprintf("(#100) Tried accessing nonexisting field (%s) on node type (WhatsAppBusinessPhoneNumber)", k))
				return
			}
			out[strings.TrimSpace(k)] = v
		}
	} else {
		for k, v := range all {
			out[k] = v
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

func (s *Server) serveMediaInfo(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	s.calls["media"]++
	m := s.media[id]
	s.mu.Unlock()
	if pid := r.URL.Query().Get("phone_number_id"); pid != "" && pid != PhoneNumberID {
		s.writeError(w, 100, "the media does not belong to phone number "+pid)
		return
	}
	if m == nil {
		s.writeError(w, 100, fmt.Sprintf("Unsupported get request. Object with ID '%s' does not exist.", id))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"messaging_product": "whatsapp", "url": s.URL + "/download/" + id + "?ext=1&hash=ARb",
		"mime_type": m.mime, "sha256": m.sum, "file_size": len(m.data), "id": id})
}

func (s *Server) serveDownload(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls["download"]++
	m := s.media[strings.TrimPrefix(r.URL.Path, "/download/")]
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+Token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if m == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", m.mime)
	w.Write(m.data)
}
