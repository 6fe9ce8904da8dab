// Package tgtest is an in-process fake of the Telegram Bot API for tests:
// long-polled getUpdates fed by the test, sendMessage/editMessageText that
// record what a user would see (and reject what Telegram rejects: broken
// HTML, over-long text, over-long callback data, unchanged edits),
// answerCallbackQuery, getMe, getFile (refusing files over the Bot API's
// 20 MB like Telegram) and file downloads, messages with a document, a
// photo, a video or an animation, sendVoice/sendAudio
// uploads, setWebhook/deleteWebhook with deliveries POSTed to a target the
// test names, and flood control (429 with retry_after) on demand. No
// network beyond loopback is used.
package tgtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Token is the bot token the fake accepts; getMe answers with the bot
// BotID, @BotUsername.
const (
	Token       = "123456:TEST-token-not-real"
	BotID       = 123456
	BotUsername = "hestia_test_bot"
)

// Sent is a message as the chat shows it now.
type Sent struct {
	ChatID    int64
	MessageID int64
	Text      string // HTML as sent
	Buttons   [][]Button
	Edits     int
}

// Button is an inline button as sent.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
	URL          string `json:"url,omitempty"`
}

// Server is the fake Bot API.
type Server struct {
	URL string
	t   testing.TB

	mu       sync.Mutex // guards the fields below
	updates  []map[string]any
	nextID   int64
	nextMsg  int64
	offsets  []int64
	messages []*Sent
	answers  map[string]string
	files    map[string][]byte
	tooBig   map[string]bool // getFile answers "file is too big"
	wake     chan struct{}
	calls    map[string]int
	throttle map[string][]int // per method: retry_after of the next 429s
	voices   []Voice

	// Webhook: set by setWebhook, cleared by deleteWebhook. While set,
	// getUpdates answers 409 like Telegram and pushed updates are POSTed
	// to target (the daemon's route standing in for the public URL).
	hookURL    string
	hookSecret string
	target     string
	delivered  []int64
	hookKick   chan struct{}
}

// Voice is an uploaded voice note or audio file.
type Voice struct {
	ChatID int64
	Method string // sendVoice or sendAudio
	Name   string // the upload's file name
	Type   string // the upload's content type
	Data   []byte
}

// New starts a fake server closed with the test.
func New(t testing.TB) *Server {
	s := &Server{t: t, nextID: 1, nextMsg: 100, answers: map[string]string{}, files: map[string][]byte{}, tooBig: map[string]bool{}, wake: make(chan struct{}), calls: map[string]int{},
		throttle: map[string][]int{}, hookKick: make(chan struct{}, 1)}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.deliverLoop(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		ts.Close()
	})
	s.URL = ts.URL
	return s
}

// Throttle makes the next len(retryAfter) calls of method fail with 429
// "Too Many Requests: retry after N", N taken in turn from retryAfter.
func (s *Server) Throttle(method string, retryAfter ...int) {
	s.mu.Lock()
	s.throttle[method] = append(s.throttle[method], retryAfter...)
	s.mu.Unlock()
}

// throttled answers 429 when method is due to be throttled.
func (s *Server) throttled(w http.ResponseWriter, method string) bool {
	s.mu.Lock()
	q := s.throttle[method]
	if len(q) == 0 {
		s.mu.Unlock()
		return false
	}
	after := q[0]
	s.throttle[method] = q[1:]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(429)
	json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 429,
		"description": fmt.Sprintf("Too Many Requests: retry after %d", after), "parameters": map[string]int{"retry_after": after}})
	return true
}

// SetWebhookTarget names where deliveries go while a webhook is set: the
// daemon's route, standing in for the public URL given to setWebhook.
func (s *Server) SetWebhookTarget(url string) {
	s.mu.Lock()
	s.target = url
	s.mu.Unlock()
	s.kick()
}

// Webhook returns the webhook URL and secret set now ("" when none).
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hookURL, s.hookSecret
}

// Delivered returns the update ids the webhook target accepted (200).
func (s *Server) Delivered() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.delivered...)
}

func (s *Server) kick() {
	select {
	case s.hookKick <- struct{}{}:
	default:
	}
}

// deliverLoop POSTs pending updates, oldest first, to the webhook target
// while a webhook is set; an update leaves the queue once answered 200,
// anything else is retried, as Telegram does.
func (s *Server) deliverLoop(stop chan struct{}) {
	client := &http.Client{Timeout: 30 * time.Second}
	for {
		s.mu.Lock()
		var next map[string]any
		target, secret := s.target, s.hookSecret
		if s.hookURL != "" && target != "" && len(s.updates) > 0 {
			next = s.updates[0]
		}
		s.mu.Unlock()
		if next == nil {
			select {
			case <-stop:
				return
			case <-s.hookKick:
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		code := s.post(client, target, secret, next)
		if code == http.StatusOK {
			s.mu.Lock()
			if len(s.updates) > 0 && s.updates[0]["update_id"] == next["update_id"] {
				s.updates = s.updates[1:]
			}
			s.delivered = append(s.delivered, next["update_id"].(int64))
			s.mu.Unlock()
			continue
		}
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Server) post(client *http.Client, target, secret string, u map[string]any) int {
	body, _ := json.Marshal(u)
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// PostWebhook POSTs a text message update with the given id and secret
// straight to the webhook target (a redelivery, or a forger) and returns
// the HTTP status.
func (s *Server) PostWebhook(updateID int64, secret string, userID int64, text string) int {
	s.mu.Lock()
	target := s.target
	s.mu.Unlock()
	return s.post(http.DefaultClient, target, secret, textUpdate(updateID, userID, text))
}

// Requeue offers an update again under an id already used (Telegram
// repeating an update after a mode switch).
func (s *Server) Requeue(updateID int64, userID int64, text string) {
	s.mu.Lock()
	s.updates = append(s.updates, textUpdate(updateID, userID, text))
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
	s.kick()
}

func textUpdate(id, userID int64, text string) map[string]any {
	return map[string]any{"update_id": id, "message": map[string]any{
		"message_id": 1, "from": user(userID, fmt.Sprintf("User%d", userID)), "chat": map[string]any{"id": userID, "type": "private"}, "date": 1, "text": text,
	}}
}

// Voices returns the voice notes and audio files sent to chat.
func (s *Server) Voices(chat int64) []Voice {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Voice
	for _, v := range s.voices {
		if v.ChatID == chat {
			out = append(out, v)
		}
	}
	return out
}

func (s *Server) sendVoice(w http.ResponseWriter, r *http.Request, method string) {
	field := "voice"
	if method == "sendAudio" {
		field = "audio"
	}
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		fail(w, 400, "Bad Request: the body is not multipart/form-data")
		return
	}
	var chat int64
	fmt.Sscan(r.FormValue("chat_id"), &chat)
	f, hdr, err := r.FormFile(field)
	if err != nil || chat == 0 {
		fail(w, 400, "Bad Request: there is no "+field+" in the request")
		return
	}
	data, _ := io.ReadAll(f)
	f.Close()
	if len(data) == 0 {
		fail(w, 400, "Bad Request: file is empty")
		return
	}
	if method == "sendVoice" && !bytes.HasPrefix(data, []byte("OggS")) {
		// Telegram shows only OGG/Opus (and MP3/M4A) as voice notes.
		fail(w, 400, "Bad Request: VOICE_MESSAGES_FORBIDDEN or wrong file type")
		return
	}
	s.mu.Lock()
	s.calls[method]++
	s.voices = append(s.voices, Voice{ChatID: chat, Method: method, Name: hdr.Filename, Type: hdr.Header.Get("Content-Type"), Data: data})
	s.nextMsg++
	id := s.nextMsg
	s.mu.Unlock()
	ok200(w, map[string]any{"message_id": id, "chat": map[string]any{"id": chat, "type": "private"}})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/bot"+Token+"/") {
		s.mu.Lock()
		data, ok := s.files[strings.TrimPrefix(r.URL.Path, "/file/bot"+Token+"/")]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+Token+"/")
	if !ok {
		fail(w, 401, "Unauthorized")
		return
	}
	if s.throttled(w, method) {
		s.mu.Lock()
		s.calls[method+":429"]++
		s.mu.Unlock()
		return
	}
	if method == "sendVoice" || method == "sendAudio" {
		s.sendVoice(w, r, method)
		return
	}
	var p map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		fail(w, 400, "Bad Request: body is not JSON")
		return
	}
	s.mu.Lock()
	s.calls[method]++
	s.mu.Unlock()
	switch method {
	case "getUpdates":
		s.mu.Lock()
		hooked := s.hookURL != ""
		s.mu.Unlock()
		if hooked {
			fail(w, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first")
			return
		}
		s.getUpdates(w, r, p)
	case "setWebhook":
		var url, secret string
		json.Unmarshal(p["url"], &url)
		json.Unmarshal(p["secret_token"], &secret)
		if !strings.HasPrefix(url, "https://") {
			fail(w, 400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
			return
		}
		if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`).MatchString(secret) {
			fail(w, 400, "Bad Request: secret token contains unallowed characters")
			return
		}
		s.mu.Lock()
		s.hookURL, s.hookSecret = url, secret
		s.mu.Unlock()
		s.kick()
		ok200(w, true)
	case "getMe":
		ok200(w, map[string]any{"id": BotID, "is_bot": true, "first_name": "Hestia", "username": BotUsername,
			"can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false})
	case "deleteWebhook":
		s.mu.Lock()
		s.hookURL, s.hookSecret = "", ""
		s.mu.Unlock()
		ok200(w, true)
	case "sendMessage":
		s.sendMessage(w, p)
	case "editMessageText":
		s.editMessageText(w, p)
	case "answerCallbackQuery":
		var id, text string
		json.Unmarshal(p["callback_query_id"], &id)
		json.Unmarshal(p["text"], &text)
		s.mu.Lock()
		s.answers[id] = text
		s.mu.Unlock()
		ok200(w, true)
	case "getFile":
		var id string
		json.Unmarshal(p["file_id"], &id)
		s.mu.Lock()
		data, found := s.files["voice/"+id]
		big := s.tooBig[id]
		s.mu.Unlock()
		if big {
			fail(w, 400, "Bad Request: file is too big")
			return
		}
		if !found {
			fail(w, 400, "Bad Request: invalid file_id")
			return
		}
		ok200(w, map[string]any{"file_id": id, "file_size": len(data), "file_path": "voice/" + id})
	default:
		fail(w, 404, "Not Found: method "+method)
	}
}

func ok200(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func fail(w http.ResponseWriter, code int, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": code, "description": desc})
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]json.RawMessage) {
	var offset int64
	var timeout int
	json.Unmarshal(p["offset"], &offset)
	json.Unmarshal(p["timeout"], &timeout)
	deadline := time.After(time.Duration(timeout) * time.Second)
	for {
		s.mu.Lock()
		s.offsets = append(s.offsets, offset)
		// Updates below the offset are confirmed and forgotten.
		kept := s.updates[:0]
		for _, u := range s.updates {
			if u["update_id"].(int64) >= offset {
				kept = append(kept, u)
			}
		}
		s.updates = kept
		out := append([]map[string]any(nil), s.updates...)
		wake := s.wake
		s.mu.Unlock()
		if len(out) > 0 || timeout == 0 {
			ok200(w, out)
			return
		}
		select {
		case <-wake:
		case <-deadline:
			ok200(w, []any{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

var tagRe = regexp.MustCompile(`<(/?)([a-z]+)(?:\s+href="[^"<>]*")?>`)

// checkHTML rejects what Telegram's HTML parser rejects: unknown or
// unbalanced tags and bare '<' / '&'. It returns the visible text.
func checkHTML(s string) (string, error) {
	allowed := map[string]bool{"b": true, "i": true, "u": true, "s": true, "code": true, "pre": true, "a": true, "blockquote": true}
	var stack []string
	var visible strings.Builder
	rest := s
	for rest != "" {
		i := strings.IndexAny(rest, "<&")
		if i < 0 {
			visible.WriteString(rest)
			break
		}
		visible.WriteString(rest[:i])
		rest = rest[i:]
		if rest[0] == '&' {
			j := strings.IndexByte(rest, ';')
			if j < 0 || html.UnescapeString(rest[:j+1]) == rest[:j+1] {
				return "", fmt.Errorf("can't parse entities: bad entity at %q", trunc(rest))
			}
			visible.WriteString(html.UnescapeString(rest[:j+1]))
			rest = rest[j+1:]
			continue
		}
		m := tagRe.FindStringSubmatchIndex(rest)
		if m == nil || m[0] != 0 {
			return "", fmt.Errorf("can't parse entities: unexpected '<' at %q", trunc(rest))
		}
		closing, name := rest[m[2]:m[3]] == "/", rest[m[4]:m[5]]
		if !allowed[name] {
			return "", fmt.Errorf("can't parse entities: unsupported tag %s", name)
		}
		if closing {
			if len(stack) == 0 || stack[len(stack)-1] != name {
				return "", fmt.Errorf("can't parse entities: unexpected end tag %s", name)
			}
			stack = stack[:len(stack)-1]
		} else {
			stack = append(stack, name)
		}
		rest = rest[m[1]:]
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't parse entities: unclosed tag %s", stack[len(stack)-1])
	}
	return visible.String(), nil
}

// CheckHTML is checkHTML for other packages' tests.
func CheckHTML(s string) (visible string, err error) { return checkHTML(s) }

func trunc(s string) string {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}

func (s *Server) validate(w http.ResponseWriter, text string, markup json.RawMessage) ([][]Button, bool) {
	vis, err := checkHTML(text)
	if err != nil {
		fail(w, 400, "Bad Request: "+err.Error())
		return nil, false
	}
	if strings.TrimSpace(vis) == "" {
		fail(w, 400, "Bad Request: message text is empty")
		return nil, false
	}
	if utf8.RuneCountInString(vis) > 4096 {
		fail(w, 400, "Bad Request: message is too long")
		return nil, false
	}
	var kb struct {
		Rows [][]Button `json:"inline_keyboard"`
	}
	if len(markup) > 0 {
		json.Unmarshal(markup, &kb)
		for _, row := range kb.Rows {
			for _, b := range row {
				if len(b.CallbackData) > 64 {
					fail(w, 400, "Bad Request: BUTTON_DATA_INVALID")
					return nil, false
				}
			}
		}
	}
	return kb.Rows, true
}

func (s *Server) sendMessage(w http.ResponseWriter, p map[string]json.RawMessage) {
	var chat int64
	var text string
	json.Unmarshal(p["chat_id"], &chat)
	json.Unmarshal(p["text"], &text)
	rows, ok := s.validate(w, text, p["reply_markup"])
	if !ok {
		return
	}
	s.mu.Lock()
	s.nextMsg++
	m := &Sent{ChatID: chat, MessageID: s.nextMsg, Text: text, Buttons: rows}
	s.messages = append(s.messages, m)
	s.mu.Unlock()
	ok200(w, map[string]any{"message_id": m.MessageID, "chat": map[string]any{"id": chat, "type": "private"}, "text": text})
}

func (s *Server) editMessageText(w http.ResponseWriter, p map[string]json.RawMessage) {
	var chat, id int64
	var text string
	json.Unmarshal(p["chat_id"], &chat)
	json.Unmarshal(p["message_id"], &id)
	json.Unmarshal(p["text"], &text)
	rows, ok := s.validate(w, text, p["reply_markup"])
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.messages {
		if m.ChatID == chat && m.MessageID == id {
			if m.Text == text && len(m.Buttons) == len(rows) {
				fail(w, 400, "Bad Request: message is not modified")
				return
			}
			m.Text, m.Buttons = text, rows
			m.Edits++
			ok200(w, true)
			return
		}
	}
	fail(w, 400, "Bad Request: message to edit not found")
}

func (s *Server) push(u map[string]any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	u["update_id"] = s.nextID
	s.nextID++
	s.updates = append(s.updates, u)
	close(s.wake)
	s.wake = make(chan struct{})
	s.kick()
	return u["update_id"].(int64)
}

// SetNextUpdateID sets the id of the next pushed update (a restart test
// starts where the previous server stopped).
func (s *Server) SetNextUpdateID(id int64) {
	s.mu.Lock()
	s.nextID = id
	s.mu.Unlock()
}

func user(id int64, name string) map[string]any {
	return map[string]any{"id": id, "is_bot": false, "first_name": name}
}

// SendText is user id writing text in the private chat with the bot.
func (s *Server) SendText(userID int64, text string) int64 {
	return s.push(map[string]any{"message": map[string]any{
		"message_id": 1, "from": user(userID, fmt.Sprintf("User%d", userID)), "chat": map[string]any{"id": userID, "type": "private"}, "date": 1, "text": text,
	}})
}

// SendGroupText is user id writing in a group chat.
func (s *Server) SendGroupText(userID, chatID int64, text string) int64 {
	return s.push(map[string]any{"message": map[string]any{
		"message_id": 1, "from": user(userID, "G"), "chat": map[string]any{"id": chatID, "type": "group"}, "date": 1, "text": text,
	}})
}

// AddFile stores a downloadable file under id.
func (s *Server) AddFile(id string, data []byte) {
	s.mu.Lock()
	s.files["voice/"+id] = data
	s.mu.Unlock()
}

// MarkTooBig makes getFile refuse a file as over the Bot API's download
// limit, as Telegram does for anything over 20 MB.
func (s *Server) MarkTooBig(id string) {
	s.mu.Lock()
	s.tooBig[id] = true
	s.mu.Unlock()
}

// fileMessage is user id sending a message with media fields.
func (s *Server) fileMessage(userID int64, caption string, fields map[string]any) int64 {
	m := map[string]any{"message_id": 1, "from": user(userID, "F"), "chat": map[string]any{"id": userID, "type": "private"}, "date": 1}
	if caption != "" {
		m["caption"] = caption
	}
	for k, v := range fields {
		m[k] = v
	}
	return s.push(map[string]any{"message": m})
}

// SendDocument is user id sending a file as a document, with a caption.
func (s *Server) SendDocument(userID int64, fileID, name, mime string, size int64, caption string) int64 {
	return s.fileMessage(userID, caption, map[string]any{"document": map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID,
		"file_name": name, "mime_type": mime, "file_size": size}})
}

// SendPhoto is user id sending a photo: Telegram lists its sizes
// smallest first, each a file of its own (ids in that order).
func (s *Server) SendPhoto(userID int64, caption string, fileIDs ...string) int64 {
	var sizes []any
	for i, id := range fileIDs {
		s.mu.Lock()
		n := len(s.files["voice/"+id])
		s.mu.Unlock()
		w := 90 << (2 * i)
		sizes = append(sizes, map[string]any{"file_id": id, "file_unique_id": "u" + id, "width": w, "height": w * 3 / 4, "file_size": n})
	}
	return s.fileMessage(userID, caption, map[string]any{"photo": sizes})
}

// SendVideo is user id sending a video.
func (s *Server) SendVideo(userID int64, fileID, mime string, size int64, caption string) int64 {
	return s.fileMessage(userID, caption, map[string]any{"video": map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID,
		"width": 640, "height": 480, "duration": 3, "mime_type": mime, "file_size": size}})
}

// SendAnimation is user id sending a GIF: Telegram sends it as an
// animation and, for older clients, as a document of the same file.
func (s *Server) SendAnimation(userID int64, fileID, name string, size int64) int64 {
	f := map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID, "file_name": name, "mime_type": "video/mp4", "file_size": size}
	return s.fileMessage(userID, "", map[string]any{"animation": f, "document": f})
}

// SendVoice is user id sending a voice note (size as Telegram reports it).
func (s *Server) SendVoice(userID int64, fileID, mime string, size int64) int64 {
	return s.push(map[string]any{"message": map[string]any{
		"message_id": 1, "from": user(userID, "V"), "chat": map[string]any{"id": userID, "type": "private"}, "date": 1,
		"voice": map[string]any{"file_id": fileID, "duration": 3, "mime_type": mime, "file_size": size},
	}})
}

// Press is user id pressing a button with data on message msgID of chat.
// It returns the callback query id.
func (s *Server) Press(userID, chat, msgID int64, data string) string {
	s.mu.Lock()
	id := fmt.Sprintf("cb%d", s.nextID)
	s.mu.Unlock()
	s.push(map[string]any{"callback_query": map[string]any{
		"id": id, "from": user(userID, "P"), "data": data,
		"message": map[string]any{"message_id": msgID, "chat": map[string]any{"id": chat, "type": "private"}, "date": 1},
	}})
	return id
}

// Messages returns copies of the messages in a chat, oldest first.
func (s *Server) Messages(chat int64) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, m := range s.messages {
		if m.ChatID == chat {
			out = append(out, *m)
		}
	}
	return out
}

// Answer returns the notice a callback query was answered with.
func (s *Server) Answer(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.answers[id]
	return a, ok
}

// Offsets returns every offset getUpdates was called with.
func (s *Server) Offsets() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.offsets...)
}

// Calls counts calls of a method.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Pending reports how many pushed updates were not yet confirmed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// WaitFor polls cond until it holds or 30 s pass (then fails the test);
// generous because CI shares two cores among many packages.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
