package telegram

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
	"github.com/hestia-dev/hestia/internal/speech"
)

const hookURL = "https://hestia.example/telegram/webhook"

// Webhook mode: the bot sets a webhook with a fresh secret, serves
// deliveries only with that secret, handles a redelivered update once,
// and switching back to polling deletes the webhook; an update seen by
// the webhook and offered again to polling is not handled twice.
func TestWebhookModeAndSwitchingBack(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "telegram.db")
	tg := tgtest.New(t)
	h := newHarnessWith(t, dbPath, tg, hopts{cfg: func(c *Config) { c.WebhookURL = hookURL }})
	srv := httptest.NewServer(h.bot.WebhookHandler())
	defer srv.Close()
	tg.SetWebhookTarget(srv.URL)
	var secret string
	tgtest.WaitFor(t, "the webhook to be set", func() bool {
		var url string
		url, secret = tg.Webhook()
		return url == hookURL
	})
	if len(secret) < 32 {
		t.Fatalf("secret %q is too short", secret)
	}
	first := tg.SendText(owner, "hello by webhook")
	tgtest.WaitFor(t, "the reply", func() bool { _, ok := findMsg(tg, owner, "You said: hello by webhook"); return ok })

	// Forged deliveries are refused before anything is read.
	for _, bad := range []string{"", "wrong", secret[:len(secret)-1], secret + "x"} {
		if code := tg.PostWebhook(9000, bad, owner, "forged"); code != http.StatusUnauthorized {
			t.Errorf("secret %q: status %d", bad, code)
		}
	}
	// A redelivery of a handled update is answered 200 and ignored.
	if code := tg.PostWebhook(first, secret, owner, "hello by webhook"); code != http.StatusOK {
		t.Fatalf("redelivery: %d", code)
	}
	// Malformed bodies with the right secret are refused with a reason.
	for _, body := range []string{"not json", `{"message":{"text":"no id"}}`, `{"update_id":-3}`} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set(SecretHeader, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "update") {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
	if got := h.agent.Texts(); !slices.Equal(got, []string{"hello by webhook"}) {
		t.Fatalf("handled %v", got)
	}
	if n := tg.Calls("getUpdates"); n != 0 {
		t.Fatalf("getUpdates called %d times in webhook mode", n)
	}
	h.stop()

	// Back to polling on the same database: the webhook is deleted, the
	// update the webhook handled is skipped when offered again.
	// A stopped bot's handler, and a polling bot's, refuse deliveries.
	if code := tg.PostWebhook(first+1, secret, owner, "late"); code != http.StatusServiceUnavailable {
		t.Fatalf("delivery to a stopped bot: %d", code)
	}
	h2 := newHarness(t, dbPath, tg, false)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", WebhookPath, strings.NewReader(`{"update_id":5}`))
	req.Header.Set(SecretHeader, secret)
	h2.bot.WebhookHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("webhook handler while polling: %d", rec.Code)
	}
	tgtest.WaitFor(t, "the webhook to be deleted", func() bool { url, _ := tg.Webhook(); return url == "" })
	tg.Requeue(first, owner, "hello by webhook")
	tg.SendText(owner, "now polling")
	tgtest.WaitFor(t, "the polled reply", func() bool { _, ok := findMsg(tg, owner, "You said: now polling"); return ok })
	if got := h2.agent.Texts(); !slices.Equal(got, []string{"now polling"}) {
		t.Fatalf("after switching back handled %v", got)
	}
	if n := tg.Calls("deleteWebhook"); n != 1 {
		t.Fatalf("deleteWebhook called %d times", n)
	}
	h2.stop()
	// A further polling start does not delete again.
	newHarness(t, dbPath, tg, false)
	tg.SendText(owner, "still polling")
	tgtest.WaitFor(t, "the third reply", func() bool { _, ok := findMsg(tg, owner, "You said: still polling"); return ok })
	if n := tg.Calls("deleteWebhook"); n != 1 {
		t.Fatalf("deleteWebhook called %d times", n)
	}
}

// A webhook set elsewhere makes getUpdates answer 409; the polling bot
// deletes it and carries on.
func TestPollingTakesOverFromAForeignWebhook(t *testing.T) {
	t.Parallel()
	tg := tgtest.New(t)
	if err := NewClient(tg.URL, tgtest.Token).SetWebhook(context.Background(), "https://elsewhere.example/hook", "abc"); err != nil {
		t.Fatal(err)
	}
	newHarness(t, filepath.Join(t.TempDir(), "telegram.db"), tg, false)
	tg.SendText(owner, "hi")
	tgtest.WaitFor(t, "the reply", func() bool { _, ok := findMsg(tg, owner, "You said: hi"); return ok })
	if url, _ := tg.Webhook(); url != "" {
		t.Fatalf("webhook still set: %s", url)
	}
}

// Flood control on sends and edits: a 429 is waited out for the time
// Telegram names and retried, a bounded number of times; streaming edits
// hold back instead, and the final text still arrives by edit.
func TestFloodControlOnSendsAndEdits(t *testing.T) {
	t.Parallel()
	t.Run("send retried", func(t *testing.T) {
		t.Parallel()
		tg := tgtest.New(t)
		newHarness(t, filepath.Join(t.TempDir(), "telegram.db"), tg, false)
		tg.Throttle("sendMessage", 1)
		tg.SendText(owner, "hello")
		tgtest.WaitFor(t, "the reply", func() bool { _, ok := findMsg(tg, owner, "You said: hello"); return ok })
		if n := tg.Calls("sendMessage:429"); n != 1 {
			t.Fatalf("429s %d", n)
		}
		if msgs := tg.Messages(owner); len(msgs) != 1 {
			t.Fatalf("messages %+v", msgs)
		}
	})
	t.Run("edits held and the final edit retried", func(t *testing.T) {
		t.Parallel()
		tg := tgtest.New(t)
		h := newHarness(t, filepath.Join(t.TempDir(), "telegram.db"), tg, false)
		// 3000 characters streamed in 15 deltas, as a model does: edits
		// follow the first message, and the one answered 429 is held or
		// retried; the text still ends complete, in one message.
		h.agent.pace = 30 * time.Millisecond
		tg.Throttle("editMessageText", 1)
		long := strings.Repeat("word ", 600)
		tg.SendText(owner, long)
		want := "You said: " + strings.TrimSpace(long)
		tgtest.WaitFor(t, "the full reply after one 429", func() bool {
			msgs := tg.Messages(owner)
			return len(msgs) == 1 && strings.TrimSpace(msgs[0].Text) == want && tg.Calls("editMessageText:429") == 1
		})

	})
	t.Run("bounded", func(t *testing.T) {
		t.Parallel()
		tg := tgtest.New(t)
		c := NewClient(tg.URL, tgtest.Token)
		c.maxRetries = 2
		tg.Throttle("sendMessage", 1, 1, 1, 1)
		_, err := c.SendMessage(context.Background(), owner, "x", nil)
		if wait, ok := Flooded(err); !ok || wait != time.Second {
			t.Fatalf("err %v", err)
		}
		if n := tg.Calls("sendMessage:429"); n != 3 {
			t.Fatalf("attempts %d, want 3", n)
		}
		// A wait longer than the bound fails at once, without retrying.
		tg2 := tgtest.New(t)
		tg2.Throttle("editMessageText", 3600)
		err = NewClient(tg2.URL, tgtest.Token).EditMessageText(context.Background(), owner, 1, "x", nil)
		if _, ok := Flooded(err); !ok || tg2.Calls("editMessageText:429") != 1 {
			t.Fatalf("err %v, attempts %d", err, tg2.Calls("editMessageText:429"))
		}
	})
}

// A burst of thousands of deltas published in a tight loop outruns the
// follower (the bus buffers one event per subscriber here, so it is shed
// again and again); every turn's final text still reaches the chat.
func TestBurstFinalTextAlwaysArrives(t *testing.T) {
	t.Parallel()
	tg := tgtest.New(t)
	h := newHarnessWith(t, filepath.Join(t.TempDir(), "telegram.db"), tg, hopts{bufN: 1})
	h.agent.burst = 3000
	var want strings.Builder
	for i := 0; i < h.agent.burst; i++ {
		want.WriteRune(rune('a' + i%26))
	}
	for turn := 1; turn <= 3; turn++ {
		tg.SendText(owner, "burst")
		tgtest.WaitFor(t, "the final text", func() bool {
			n := 0
			for _, m := range tg.Messages(owner) {
				if m.Text == want.String() {
					n++
				}
			}
			return n == turn
		})
	}
	t.Logf("subscriber shed %d times", h.bus.Stats().Shed)
	if msgs := tg.Messages(owner); len(msgs) != 3 {
		t.Fatalf("%d messages, want one per turn", len(msgs))
	}
}

// ttsServer is a scripted /v1/audio/speech backend.
type ttsServer struct {
	mu     sync.Mutex
	inputs []string
	audio  []byte
	status int
}

func (s *ttsServer) start(t *testing.T) *speech.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Input  string `json:"input"`
			Format string `json:"response_format"`
		}
		if r.URL.Path != "/v1/audio/speech" || json.NewDecoder(r.Body).Decode(&b) != nil || b.Format != "opus" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inputs = append(s.inputs, b.Input)
		if s.status != 0 {
			w.WriteHeader(s.status)
			return
		}
		w.Header().Set("Content-Type", "audio/ogg")
		w.Write(s.audio)
	}))
	t.Cleanup(srv.Close)
	return &speech.Client{BaseURL: srv.URL + "/v1", Model: "tts-1", HTTP: srv.Client()}
}

func (s *ttsServer) Inputs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.inputs...)
}

func TestSpokenReplies(t *testing.T) {
	t.Parallel()
	ogg := append([]byte("OggS"), make([]byte, 300)...)
	t.Run("a voice note is answered in text and voice", func(t *testing.T) {
		t.Parallel()
		tg := tgtest.New(t)
		tts := &ttsServer{audio: append([]byte("OggS-reply"), make([]byte, 100)...)}
		client := tts.start(t)
		h := newHarnessWith(t, filepath.Join(t.TempDir(), "telegram.db"), tg, hopts{stt: true, deps: func(d *Deps) {
			d.Speaker = (&speech.Service{TTS: client}).SpeakerFor("telegram", "speak")
		}})
		tg.AddFile("v", ogg)
		tg.SendVoice(owner, "v", "audio/ogg", int64(len(ogg)))
		tgtest.WaitFor(t, "the voice reply", func() bool { return len(tg.Voices(owner)) == 1 })
		if _, ok := findMsg(tg, owner, "You said: remind me to buy milk"); !ok {
			t.Fatal("the text reply is missing")
		}
		v := tg.Voices(owner)[0]
		if v.Method != "sendVoice" || string(v.Data) != string(tts.audio) || v.Type != "audio/ogg" {
			t.Fatalf("voice %+v", v)
		}
		if in := tts.Inputs(); !slices.Equal(in, []string{"You said: remind me to buy milk"}) {
			t.Fatalf("spoken %q", in)
		}
		// A typed message gets text only.
		tg.SendText(owner, "typed")
		tgtest.WaitFor(t, "the typed reply", func() bool { _, ok := findMsg(tg, owner, "You said: typed"); return ok })
		h.stop()
		if n := len(tg.Voices(owner)); n != 1 {
			t.Fatalf("%d voice replies", n)
		}
	})
	t.Run("always, a failing backend, and other formats", func(t *testing.T) {
		t.Parallel()
		tg := tgtest.New(t)
		tts := &ttsServer{status: http.StatusInternalServerError}
		client := tts.start(t)
		newHarnessWith(t, filepath.Join(t.TempDir(), "telegram.db"), tg, hopts{
			cfg: func(c *Config) { c.VoiceReplies = VoiceAlways },
			deps: func(d *Deps) {
				d.Speaker = (&speech.Service{TTS: client}).SpeakerFor("telegram", "speak")
			}})
		tg.SendText(owner, "**bold** and [a link](https://x.example)")
		tgtest.WaitFor(t, "the failure notice", func() bool { _, ok := findMsg(tg, owner, "spoken reply failed"); return ok })
		if _, ok := findMsg(tg, owner, "You said: <b>bold</b>"); !ok {
			t.Fatal("the text reply is missing")
		}
		if in := tts.Inputs(); len(in) != 1 || in[0] != "You said: bold and a link" {
			t.Fatalf("spoken %q", in)
		}
		tts.mu.Lock()
		tts.status, tts.audio = 0, append([]byte("ID3"), make([]byte, 50)...)
		tts.mu.Unlock()
		tg.SendText(owner, "again")
		tgtest.WaitFor(t, "the audio reply", func() bool { return len(tg.Voices(owner)) == 1 })
		if v := tg.Voices(owner)[0]; v.Method != "sendAudio" || !strings.HasSuffix(v.Name, ".mp3") {
			t.Fatalf("audio %+v", v)
		}
	})
}
