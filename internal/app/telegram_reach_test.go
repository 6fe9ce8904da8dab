package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/channels/telegram"
	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// The daemon in webhook mode: Telegram's deliveries reach the public
// route with the secret it was given, a turn runs, and with voice replies
// on "always" the reply arrives as text and as a voice note spoken by the
// tts tier (a scripted /v1/audio/speech server).
func TestTelegramWebhookAndSpokenReply(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var spoken []string
	tts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Input string `json:"input"`
		}
		if r.URL.Path != "/v1/audio/speech" || json.NewDecoder(r.Body).Decode(&b) != nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		mu.Lock()
		spoken = append(spoken, b.Input)
		mu.Unlock()
		w.Header().Set("Content-Type", "audio/ogg")
		w.Write(append([]byte("OggS"), make([]byte, 64)...))
	}))
	defer tts.Close()
	up := llmtest.New(t, llmtest.Text("Hello ", "**there**."))
	tg := tgtest.New(t)
	a := telegramApp(t, up, tg, t.TempDir())
	a.Config.Telegram.WebhookURL = "https://hestia.example/telegram/webhook"
	a.Config.Telegram.VoiceReplies = "always"
	a.Config.LLM.Providers = map[string]config.LLMProvider{"voice": {BaseURL: tts.URL + "/v1"}}
	a.Config.LLM.Tiers = map[string][]string{"tts": {"voice/tts-1"}}
	if err := a.Config.Validate(); err != nil {
		t.Fatal(err)
	}
	base, stop := start(t, a)
	defer stop()
	tg.SetWebhookTarget(base + telegram.WebhookPath)
	tgtest.WaitFor(t, "the webhook", func() bool { u, _ := tg.Webhook(); return u != "" })

	// Without the secret the public route refuses.
	resp, err := http.Post(base+telegram.WebhookPath, "application/json", strings.NewReader(`{"update_id":77,"message":{"text":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no secret: %d", resp.StatusCode)
	}

	tg.SendText(tgOwner, "hi")
	tgtest.WaitFor(t, "the spoken reply", func() bool { return len(tg.Voices(tgOwner)) == 1 })
	if _, ok := lastWith(tg, tgOwner, "Hello <b>there</b>."); !ok {
		t.Fatalf("text reply missing: %+v", tg.Messages(tgOwner))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(spoken) != 1 || spoken[0] != "Hello there." {
		t.Fatalf("spoken %q", spoken)
	}
	if n := tg.Calls("getUpdates"); n != 0 {
		t.Fatalf("polled %d times in webhook mode", n)
	}
}

func TestTelegramConfigRefusesBadWebhookAndVoiceModes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ url, voice, key string }{
		{"http://hestia.example/hook", "voice", "telegram.webhook_url"},
		{"not a url", "voice", "telegram.webhook_url"},
		{"", "sometimes", "telegram.voice_replies"},
	} {
		cfg := config.Default()
		cfg.Telegram = config.TelegramConfig{Token: "x", OwnerID: 1, APIURL: "https://api.telegram.org",
			PollTimeout: cfg.Telegram.PollTimeout, EditInterval: cfg.Telegram.EditInterval, MaxVoiceMB: 20, WebhookURL: c.url, VoiceReplies: c.voice}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// Telegram users show in the devices list with their scopes (managed in
// config, not revocable there), and a paired device's write request is
// audited with the device's name.
func TestTelegramUsersAsDevicesAndDeviceAudit(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t, llmtest.Text("hello"))
	tg := tgtest.New(t)
	a := telegramApp(t, up, tg, t.TempDir())
	base, stop := start(t, a)
	defer stop()
	tg.SendText(tgOwner, "hi")
	tgtest.WaitFor(t, "the reply", func() bool { _, ok := lastWith(tg, tgOwner, "hello"); return ok })

	tok, _ := authtoken.Load(a.Paths.TokenFile())
	do := func(cred, method, path string, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+cred)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, body := do(tok.Value(), "GET", "/api/devices", "")
	var list struct {
		Devices []struct {
			ID, Name, Kind, Managed string
			Scopes                  []string
			LastSeen                *string `json:"last_seen_at"`
		}
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	byID := map[string]int{}
	for i, d := range list.Devices {
		byID[d.ID] = i
	}
	owner, ok1 := byID["telegram:4242"]
	contact, ok2 := byID["telegram:777"]
	if !ok1 || !ok2 {
		t.Fatalf("devices %s", body)
	}
	if d := list.Devices[owner]; d.Kind != "telegram" || d.Managed != "config" || strings.Join(d.Scopes, ",") != "chat,approve,read" || d.LastSeen == nil {
		t.Fatalf("owner %+v", d)
	}
	if d := list.Devices[contact]; strings.Join(d.Scopes, ",") != "chat,read" || d.LastSeen != nil {
		t.Fatalf("contact %+v", d)
	}
	if code, body := do(tok.Value(), "DELETE", "/api/devices/telegram:777", ""); code != http.StatusConflict || !strings.Contains(body, "config.toml") {
		t.Fatalf("revoking a Telegram user: %d %s", code, body)
	}

	_, devTok, err := a.Devices.Create(context.Background(), "Kitchen tablet", "browser", []devices.Scope{devices.Chat, devices.Read})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := do(devTok, "POST", "/api/chats", `{"title":"from the tablet"}`); code >= 300 {
		t.Fatalf("create chat: %d %s", code, body)
	}
	tgtest.WaitFor(t, "the device's request in the audit log", func() bool {
		_, body := do(tok.Value(), "GET", "/api/audit?limit=200", "")
		return strings.Contains(body, `"device.request"`) && strings.Contains(body, "Kitchen tablet") && strings.Contains(body, "POST /api/chats")
	})
}
