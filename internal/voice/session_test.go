package voice_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/files"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/speech"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/tools/builtin"
	"github.com/hestia-dev/hestia/internal/voice"
)

// fakeSpeech is an OpenAI-compatible speech server: transcriptions answer
// the scripted texts in order, speech answers a WAV whose samples are the
// input text, so a test can read what was spoken.
type fakeSpeech struct {
	srv      *httptest.Server
	mu       sync.Mutex
	texts    []string
	heard    [][]byte
	spoken   []string
	sttDelay time.Duration
	ttsDelay time.Duration
	// sttServer and ttsServer add up the time the fake spent per call
	// (the bench takes it out of the pipeline's own overhead).
	sttTime, ttsTime []time.Duration
}

func newFakeSpeech(t testing.TB) *fakeSpeech {
	f := &fakeSpeech{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/transcriptions", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		file, _, err := r.FormFile("file")
		if err != nil || r.FormValue("model") == "" {
			http.Error(w, "bad form", 400)
			return
		}
		wav, _ := io.ReadAll(file)
		f.mu.Lock()
		f.heard = append(f.heard, wav)
		text := ""
		if len(f.texts) > 0 {
			text, f.texts = f.texts[0], f.texts[1:]
		}
		delay := f.sttDelay
		f.mu.Unlock()
		sleep(r.Context(), delay)
		json.NewEncoder(w).Encode(map[string]string{"text": text})
		f.mu.Lock()
		f.sttTime = append(f.sttTime, time.Since(start))
		f.mu.Unlock()
	})
	mux.HandleFunc("POST /v1/audio/speech", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var b struct {
			Input string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&b)
		f.mu.Lock()
		f.spoken = append(f.spoken, b.Input)
		delay := f.ttsDelay
		f.mu.Unlock()
		if !sleep(r.Context(), delay) {
			return
		}
		w.Header().Set("Content-Type", "audio/wav")
		w.Write(voice.WAV([]byte(b.Input)))
		f.mu.Lock()
		f.ttsTime = append(f.ttsTime, time.Since(start))
		f.mu.Unlock()
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func (f *fakeSpeech) push(texts ...string) {
	f.mu.Lock()
	f.texts = append(f.texts, texts...)
	f.mu.Unlock()
}

func (f *fakeSpeech) spokenTexts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.spoken...)
}

type agentAdapter struct{ ag *agent.Agent }

func (a agentAdapter) Submit(ctx context.Context, chatID, text string) (string, error) {
	t, err := a.ag.Submit(ctx, chatID, text, voice.TurnOptions())
	if err != nil {
		return "", err
	}
	return t.ID, nil
}

type chatsAdapter struct{ s *chat.Store }

func (c chatsAdapter) Create(ctx context.Context, title string) (string, error) {
	ch, err := c.s.Create(ctx, title)
	return ch.ID, err
}

func (c chatsAdapter) Exists(ctx context.Context, id string) (bool, error) {
	_, err := c.s.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

type speakerAdapter struct{ c *speech.Client }

func (s speakerAdapter) Speak(ctx context.Context, text string) ([]byte, string, error) {
	return s.c.Speak(ctx, text, "", "wav")
}

// harness is the voice service over a real agent (real stores, the file
// tools, the approval broker and the bus) with the scripted model and the
// fake speech server, served by httptest.
type harness struct {
	t       testing.TB
	home    string
	model   *llmtest.Server
	speech  *fakeSpeech
	ag      *agent.Agent
	chats   *chat.Store
	bus     *events.Bus
	broker  *approval.Broker
	svc     *voice.Service
	srv     *httptest.Server
	chatID  string
	scopes  atomic.Pointer[[]devices.Scope]
	revoked atomic.Bool
	now     atomic.Pointer[time.Time] // the service clock, when set
}

type hopts struct {
	noSTT  bool
	vad    voice.VADConfig
	timing bool
}

func newHarness(t testing.TB, o hopts, turns ...llmtest.Turn) *harness {
	ctx := context.Background()
	root := t.TempDir()
	h := &harness{t: t, home: filepath.Join(root, "home")}
	if err := os.MkdirAll(h.home, 0o700); err != nil {
		t.Fatal(err)
	}
	h.model = llmtest.New(t, turns...)
	h.speech = newFakeSpeech(t)
	open := func(s store.Schema) *store.DB {
		db, err := store.Open(ctx, filepath.Join(root, "db", s.Name+".db"), s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	h.chats = chat.New(open(chat.Schema), nil)
	auditLog := audit.New(open(audit.Schema), nil, nil)
	rules, err := policy.NewRuleStore(ctx, open(policy.Schema), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{AutoApprove: policy.ThresholdLow}, rules, policy.NewModes(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := pathpolicy.New(pathpolicy.Options{Home: h.home, Roots: []string{h.home}})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := files.Register(reg, pp); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(builtin.AskUser())
	h.bus = events.NewBus(nil, 0, 0)
	h.broker = approval.New(approval.Options{Timeout: 30 * time.Second, Approvers: h.bus.Approvers, ApproversFor: h.bus.ApproversFor,
		Notify: agent.Notifier{Events: h.bus, Audit: auditLog}})
	client := llm.NewOpenAI(llm.Target{Provider: "llmtest", BaseURL: h.model.URL, APIKey: "k", Model: "llmtest-model"}, nil)
	h.ag, err = agent.New(agent.Config{}, agent.Deps{LLM: client, Tools: reg, Policy: pol, Paths: pp, Approvals: h.broker,
		Chats: h.chats, Audit: auditLog, Events: h.bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.ag.Close() })
	c, err := h.chats.Create(ctx, "voice test")
	if err != nil {
		t.Fatal(err)
	}
	h.chatID = c.ID
	deps := voice.Deps{Agent: agentAdapter{h.ag}, Chats: chatsAdapter{h.chats}, Approvals: h.broker, Bus: h.bus,
		TTS:     speakerAdapter{&speech.Client{BaseURL: h.speech.srv.URL + "/v1", Model: "tts-1", HTTP: http.DefaultClient}},
		STTPath: speech.PathEndpoint, TTSPath: speech.PathEndpoint,
		Revoked: func(context.Context, string) bool { return h.revoked.Load() },
		Clock: func() time.Time {
			if p := h.now.Load(); p != nil {
				return *p
			}
			return time.Now()
		}}
	if !o.noSTT {
		deps.STT = &speech.Client{BaseURL: h.speech.srv.URL + "/v1", Model: "whisper-1", HTTP: http.DefaultClient}
	}
	if o.vad.EndSilence == 0 {
		o.vad.EndSilence = 250 * time.Millisecond
	}
	h.svc = voice.New(voice.Config{VAD: o.vad, Timing: o.timing}, deps)
	t.Cleanup(func() { h.svc.Close() })
	all := []devices.Scope{devices.Read, devices.Chat, devices.Approve}
	h.scopes.Store(&all)
	api := http.NewServeMux()
	h.svc.Routes(api)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == voice.SocketPath {
			h.svc.SocketHandler().ServeHTTP(w, r)
			return
		}
		id := devices.Identity{DeviceID: "dev_phone", Name: "phone", Scopes: *h.scopes.Load()}
		api.ServeHTTP(w, r.WithContext(devices.WithIdentity(r.Context(), id)))
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// ticket asks for a ticket for chatID and returns the status and body.
func (h *harness) ticket(chatID string) (int, map[string]any) {
	body := fmt.Sprintf(`{"chat_id":%q}`, chatID)
	resp, err := http.Post(h.srv.URL+"/api/voice/tickets", "application/json", strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func (h *harness) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(h.srv.URL, "http") + path
}

type msg struct {
	typ   string // a JSON message's type, "audio", or "closed"
	data  map[string]any
	text  string // audio: the spoken text
	mime  string
	audio []byte
	err   error // closed
}

// client is the browser's side of the socket.
type client struct {
	t    testing.TB
	conn *websocket.Conn
	msgs chan msg
	mu   sync.Mutex
	seen []msg
}

func (h *harness) connect() *client {
	h.t.Helper()
	code, m := h.ticket(h.chatID)
	if code != 200 {
		h.t.Fatalf("ticket: %d %v", code, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, h.wsURL(m["url"].(string)), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	conn.SetReadLimit(8 << 20)
	c := &client{t: h.t, conn: conn, msgs: make(chan msg, 256)}
	go c.read()
	h.t.Cleanup(func() { conn.CloseNow() })
	return c
}

func (c *client) read() {
	for {
		typ, b, err := c.conn.Read(context.Background())
		if err != nil {
			c.msgs <- msg{typ: "closed", err: err}
			close(c.msgs)
			return
		}
		if typ == websocket.MessageBinary {
			n := binary.BigEndian.Uint32(b[:4])
			var hdr struct {
				Seq  int64  `json:"seq"`
				Mime string `json:"mime"`
				Text string `json:"text"`
			}
			json.Unmarshal(b[4:4+n], &hdr)
			c.msgs <- msg{typ: "audio", text: hdr.Text, mime: hdr.Mime, audio: b[4+n:], data: map[string]any{"seq": float64(hdr.Seq)}}
			continue
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		t, _ := m["type"].(string)
		c.msgs <- msg{typ: t, data: m}
	}
}

func (c *client) sendJSON(v any) {
	b, _ := json.Marshal(v)
	if err := c.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) hello() {
	c.sendJSON(map[string]any{"type": "hello", "format": "s16le", "sample_rate": 16000, "channels": 1})
	c.wait("ready", func(m msg) bool { return m.typ == "ready" })
}

// audio sends PCM in 100 ms frames.
func (c *client) audio(pcm []byte) {
	for off := 0; off < len(pcm); off += 3200 {
		if err := c.conn.Write(context.Background(), websocket.MessageBinary, pcm[off:min(off+3200, len(pcm))]); err != nil {
			c.t.Fatal(err)
		}
	}
}

func tone(d time.Duration) []byte {
	n := int(d.Seconds() * voice.SampleRate)
	b := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(8000*math.Sin(2*math.Pi*220*float64(i)/voice.SampleRate))))
	}
	return b
}

func quiet(d time.Duration) []byte { return make([]byte, 2*int(d.Seconds()*voice.SampleRate)) }

// utter sends an utterance: speech, then the silence that ends it.
func (c *client) utter() {
	c.audio(append(append(quiet(100*time.Millisecond), tone(500*time.Millisecond)...), quiet(500*time.Millisecond)...))
}

// wait returns the first message after the ones already waited for that
// matches, failing the test after 15 s.
func (c *client) wait(what string, match func(msg) bool) msg {
	c.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("waiting for %s: the socket closed", what)
			}
			c.mu.Lock()
			c.seen = append(c.seen, m)
			c.mu.Unlock()
			if match(m) {
				return m
			}
			if m.typ == "closed" {
				c.t.Fatalf("waiting for %s: closed: %v", what, m.err)
			}
		case <-deadline:
			c.t.Fatalf("timed out waiting for %s; seen %v", what, c.types())
		}
	}
}

func (c *client) types() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.seen {
		s := m.typ
		if m.typ == "audio" {
			s += ":" + m.text
		}
		if t, ok := m.data["text"].(string); ok && m.typ != "audio" {
			s += ":" + t
		}
		out = append(out, s)
	}
	return out
}

func isAudio(text string) func(msg) bool {
	return func(m msg) bool { return m.typ == "audio" && m.text == text }
}

func TestUtteranceBecomesATurnSpokenBySentence(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{timing: true}, llmtest.Text("Hello there. ", "You have **two** meetings", " today! The first", " is at nine."))
	h.speech.push("What is on today?")
	c := h.connect()
	c.hello()
	c.utter()
	tr := c.wait("the transcript", func(m msg) bool { return m.typ == "transcript" })
	if tr.data["text"] != "What is on today?" {
		t.Errorf("transcript %v", tr.data)
	}
	first := c.wait("the first sentence", isAudio("Hello there."))
	if first.mime != "audio/wav" || !bytes.Contains(first.audio, []byte("Hello there.")) {
		t.Errorf("audio %s %q", first.mime, first.audio)
	}
	timing := c.wait("the timing", func(m msg) bool { return m.typ == "timing" })
	if timing.data["total_ms"].(float64) <= 0 || timing.data["stt_ms"].(float64) <= 0 {
		t.Errorf("timing %v", timing.data)
	}
	c.wait("the second sentence", isAudio("You have two meetings today!"))
	c.wait("the last sentence", isAudio("The first is at nine."))
	c.wait("listening again", func(m msg) bool {
		return m.typ == "state" && m.data["state"] == "listening" || m.typ == "state" && m.data["state"] == "speaking"
	})

	if got := h.speech.spokenTexts(); strings.Join(got, "|") != "Hello there.|You have two meetings today!|The first is at nine." {
		t.Errorf("spoken %q", got)
	}
	h.speech.mu.Lock()
	heard := h.speech.heard
	h.speech.mu.Unlock()
	if len(heard) != 1 || string(heard[0][:4]) != "RIFF" || len(heard[0]) < 2*voice.SampleRate/2 {
		t.Fatalf("the stt server heard %d recordings", len(heard))
	}
	// The transcript is the chat's own: the user's words and the reply.
	msgs, err := h.chats.Messages(context.Background(), h.chatID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "What is on today?" || !strings.Contains(msgs[1].Content, "The first is at nine.") {
		t.Errorf("chat %+v", msgs)
	}
}

func TestBargeInStopsPlaybackAndInterruptsTheTurn(t *testing.T) {
	t.Parallel()
	story := llmtest.Text("Once upon a time. ", "There was a fox. ", "It ran far. ", "It ran further. ", "It slept. ", "The end.")
	story.ChunkDelay = 300 * time.Millisecond
	h := newHarness(t, hopts{}, story, llmtest.Text("It is noon."))
	h.speech.push("Tell me a story", "What time is it?")
	sub := h.bus.Subscribe(events.SubscribeOptions{ChatID: h.chatID})
	defer sub.Close()
	c := h.connect()
	c.hello()
	c.utter()
	c.wait("the story's first sentence", isAudio("Once upon a time."))
	// The user speaks over the reply.
	c.audio(tone(400 * time.Millisecond))
	c.wait("playback stopped", func(m msg) bool { return m.typ == "stop" })
	stopAt := len(c.types())
	c.audio(quiet(500 * time.Millisecond))
	c.wait("the second transcript", func(m msg) bool { return m.typ == "transcript" && m.data["text"] == "What time is it?" })
	c.wait("the answer", isAudio("It is noon."))
	for _, s := range c.types()[stopAt:] {
		if strings.HasPrefix(s, "audio:") && s != "audio:It is noon." {
			t.Errorf("the interrupted story went on being spoken: %s", s)
		}
	}
	// The first turn ended interrupted by the second.
	deadline := time.After(10 * time.Second)
	for interrupted := false; !interrupted; {
		select {
		case ev := <-sub.C():
			if ev.Type == "turn.finished" && strings.Contains(string(ev.JSON()), `"code":"interrupted"`) {
				interrupted = true
			}
		case <-deadline:
			t.Fatal("the story's turn did not end interrupted")
		}
	}
}

func TestApprovalByVoice(t *testing.T) {
	t.Parallel()
	write := llmtest.ToolCalls(llmtest.Call("call_w", "write_file", `{"path":"~/plan.txt","content":"the plan"}`))
	cases := []struct {
		name    string
		answer  string
		written bool
		reply   string
		tap     approval.Outcome
	}{
		{"approve", "Approve.", true, "Saved.", ""},
		{"yes please", "Yes, please.", true, "Saved.", ""},
		{"deny", "No.", false, "Not saved.", ""},
		{"a longer sentence is a message", "I approve of the idea but wait until tomorrow", false, "Okay, I will wait.", ""},
		{"tapping the card", "", true, "Saved.", approval.Approve},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, hopts{}, write, llmtest.Text(tc.reply))
			h.speech.push("Write down the plan", tc.answer)
			sub := h.bus.Subscribe(events.SubscribeOptions{ChatID: h.chatID})
			defer sub.Close()
			c := h.connect()
			c.hello()
			c.utter()
			ap := c.wait("the approval", func(m msg) bool { return m.typ == "approval" })
			prompt := ap.data["text"].(string)
			if !strings.HasPrefix(prompt, "I need your approval to write file") || !strings.HasSuffix(prompt, "Approve or deny?") {
				t.Errorf("prompt %q", prompt)
			}
			c.wait("the prompt read out", isAudio(prompt))
			if tc.tap != "" {
				if _, err := h.broker.Decide(ap.data["id"].(string), approval.Decision{Outcome: tc.tap}); err != nil {
					t.Fatal(err)
				}
			} else {
				c.utter()
			}
			c.wait("the reply", isAudio(tc.reply))
			_, err := os.Stat(filepath.Join(h.home, "plan.txt"))
			if written := err == nil; written != tc.written {
				t.Errorf("written %v, want %v", written, tc.written)
			}
			// The card named the voice origin; how it was decided is on the bus.
			var requested, resolved string
			for requested == "" || (resolved == "" && tc.name != "a longer sentence is a message") {
				select {
				case ev := <-sub.C():
					switch ev.Type {
					case "approval.requested":
						requested = string(ev.JSON())
					case "approval.resolved":
						resolved = string(ev.JSON())
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("events: requested %q resolved %q", requested, resolved)
				}
			}
			if !strings.Contains(requested, `"origin":"Voice"`) {
				t.Errorf("the card does not name the voice origin: %s", requested)
			}
			if tc.name == "a longer sentence is a message" {
				msgs, _ := h.chats.Messages(context.Background(), h.chatID, 20)
				found := false
				for _, m := range msgs {
					found = found || (m.Role == chat.RoleUser && m.Content == tc.answer)
				}
				if !found {
					t.Errorf("the sentence did not become a message: %+v", msgs)
				}
			}
		})
	}
}

func TestTicketsAndAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{})
	dial := func(url string) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, resp, err := websocket.Dial(ctx, h.wsURL(url), nil)
		if err == nil {
			conn.CloseNow()
			return 101, nil
		}
		if resp == nil {
			return 0, err
		}
		return resp.StatusCode, err
	}
	for _, u := range []string{voice.SocketPath, voice.SocketPath + "?ticket=", voice.SocketPath + "?ticket=forged-ticket"} {
		if code, _ := dial(u); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", u, code)
		}
	}
	// A ticket opens one socket, once.
	_, m := h.ticket(h.chatID)
	url := m["url"].(string)
	if code, err := dial(url); code != 101 {
		t.Fatalf("a fresh ticket: %d %v", code, err)
	}
	if code, _ := dial(url); code != http.StatusUnauthorized {
		t.Errorf("a used ticket: %d", code)
	}
	// An expired one does not.
	_, m = h.ticket(h.chatID)
	later := time.Now().Add(time.Minute)
	h.now.Store(&later)
	if code, _ := dial(m["url"].(string)); code != http.StatusUnauthorized {
		t.Errorf("an expired ticket: %d", code)
	}
	h.now.Store(nil)
	// A revoked device's ticket does not.
	_, m = h.ticket(h.chatID)
	h.revoked.Store(true)
	if code, _ := dial(m["url"].(string)); code != http.StatusUnauthorized {
		t.Errorf("a revoked device: %d", code)
	}
	h.revoked.Store(false)
	// Tickets need the chat scope and a chat that exists.
	readOnly := []devices.Scope{devices.Read}
	h.scopes.Store(&readOnly)
	if code, m := h.ticket(h.chatID); code != http.StatusForbidden || !strings.Contains(fmt.Sprint(m), "chat scope") {
		t.Errorf("read-only device: %d %v", code, m)
	}
	all := []devices.Scope{devices.Chat}
	h.scopes.Store(&all)
	if code, _ := h.ticket("c_nonexistent"); code != http.StatusNotFound {
		t.Errorf("unknown chat: %d", code)
	}
	// Without a chat, one is made.
	code, m := h.ticket("")
	if code != 200 || m["chat_id"] == "" || m["chat_id"] == h.chatID || m["stt"] != "endpoint" {
		t.Errorf("no chat: %d %v", code, m)
	}
	// Without speech-to-text there is no voice mode, and it says why.
	h2 := newHarness(t, hopts{noSTT: true})
	if code, m := h2.ticket(h2.chatID); code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(m), "speech-to-text") {
		t.Errorf("no stt: %d %v", code, m)
	}
	resp, err := http.Get(h2.srv.URL + "/api/voice")
	if err != nil {
		t.Fatal(err)
	}
	var st voice.Status
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Available || st.STT != "none" || st.Reason == "" {
		t.Errorf("status %+v", st)
	}
}

func TestRevokedDeviceSessionEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{})
	h.speech.push("hello")
	c := h.connect()
	c.hello()
	h.revoked.Store(true)
	c.utter()
	m := c.wait("the close", func(m msg) bool { return m.typ == "closed" })
	var ce websocket.CloseError
	if !errors.As(m.err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, "revoked") {
		t.Errorf("closed with %v", m.err)
	}
}

func TestMalformedFramesCloseWithAReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{})
	hello := `{"type":"hello","format":"s16le","sample_rate":16000,"channels":1}`
	type frame struct {
		typ  websocket.MessageType
		data []byte
	}
	txt := func(s string) frame { return frame{websocket.MessageText, []byte(s)} }
	cases := []struct {
		name   string
		frames []frame
		code   websocket.StatusCode
		reason string
	}{
		{"audio before hello", []frame{{websocket.MessageBinary, []byte{0, 0}}}, websocket.StatusPolicyViolation, "send hello before audio"},
		{"odd audio", []frame{txt(hello), {websocket.MessageBinary, []byte{1, 2, 3}}}, websocket.StatusUnsupportedData, "even number of bytes"},
		{"not JSON", []frame{txt("hello!")}, websocket.StatusUnsupportedData, "one JSON object"},
		{"unknown type", []frame{txt(hello), txt(`{"type":"dance"}`)}, websocket.StatusUnsupportedData, `unknown message type "dance"`},
		{"wrong rate", []frame{txt(`{"type":"hello","format":"s16le","sample_rate":44100,"channels":1}`)}, websocket.StatusUnsupportedData, "16 kHz"},
		{"too big", []frame{txt(hello), {websocket.MessageBinary, make([]byte, voice.MaxFrame+2)}}, websocket.StatusMessageTooBig, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := h.connect()
			for _, f := range tc.frames {
				c.conn.Write(context.Background(), f.typ, f.data)
			}
			m := c.wait("the close", func(m msg) bool { return m.typ == "closed" })
			var ce websocket.CloseError
			if !errors.As(m.err, &ce) || ce.Code != tc.code || !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("closed with %v, want %v %q", m.err, tc.code, tc.reason)
			}
		})
	}
	// Every session ended.
	deadline := time.Now().Add(5 * time.Second)
	for h.svc.Sessions() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := h.svc.Sessions(); n != 0 {
		t.Errorf("%d sessions left open", n)
	}
}
