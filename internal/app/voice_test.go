package app

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/voice"
)

// A voice conversation through the whole daemon: the ticket from the
// authenticated API, the socket on its public route, the stt and tts tiers
// pointed at a fake speech server, the scripted model; and doctor says
// which speech path runs.
func TestVoiceThroughTheDaemon(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t, llmtest.Text("Hello from the daemon."))
	speechSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/audio/transcriptions":
			io.WriteString(w, `{"text":"Say hello"}`)
		case "/v1/audio/speech":
			var b struct {
				Input string `json:"input"`
			}
			json.NewDecoder(r.Body).Decode(&b)
			w.Header().Set("Content-Type", "audio/wav")
			w.Write(voice.WAV([]byte(b.Input)))
		default:
			http.NotFound(w, r)
		}
	}))
	defer speechSrv.Close()
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.LLM.Providers = map[string]config.LLMProvider{"speech": {BaseURL: speechSrv.URL + "/v1"}}
	a.Config.LLM.Tiers = map[string][]string{"stt": {"speech/whisper-1"}, "tts": {"speech/tts-1"}}
	base, stop := start(t, a)
	defer stop()
	call := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := call("GET", "/api/voice", ""); code != 200 || m["available"] != true || m["stt"] != "endpoint" || m["tts"] != "endpoint" {
		t.Fatalf("status %d %v", code, m)
	}
	resp, err := http.Post(base+"/api/voice/tickets", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a ticket without the token: %d", resp.StatusCode)
	}
	code, m := call("POST", "/api/voice/tickets", `{}`)
	if code != 200 {
		t.Fatalf("ticket %d %v", code, m)
	}
	chatID := m["chat_id"].(string)
	ws := "ws" + strings.TrimPrefix(base, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, resp, err := websocket.Dial(ctx, ws+voice.SocketPath+"?ticket=nope", nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged ticket: %v", err)
	}
	// A page of another origin is refused even with a good ticket.
	_, m2 := call("POST", "/api/voice/tickets", `{"chat_id":"`+chatID+`"}`)
	if _, resp, err := websocket.Dial(ctx, ws+m2["url"].(string), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}}); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-origin socket: %v", err)
	}
	conn, _, err := websocket.Dial(ctx, ws+m["url"].(string), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	conn.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","format":"s16le","sample_rate":16000,"channels":1}`))
	pcm := make([]byte, 2*voice.SampleRate*3/2)
	for i := voice.SampleRate / 10; i < voice.SampleRate*6/10; i++ {
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(int16(8000*math.Sin(float64(i)/10))))
	}
	for off := 0; off < len(pcm); off += 3200 {
		conn.Write(ctx, websocket.MessageBinary, pcm[off:min(off+3200, len(pcm))])
	}
	var heard string
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading: %v (heard %q)", err, heard)
		}
		if typ == websocket.MessageText {
			var m map[string]any
			json.Unmarshal(b, &m)
			if m["type"] == "transcript" {
				heard, _ = m["text"].(string)
			}
			continue
		}
		n := binary.BigEndian.Uint32(b)
		if !strings.Contains(string(b[4:4+n]), "Hello from the daemon.") {
			t.Fatalf("spoke %s", b[4:4+n])
		}
		break
	}
	if heard != "Say hello" {
		t.Errorf("transcript %q", heard)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	// The turn is the chat's own.
	var got string
	for range 50 {
		_, c := call("GET", "/api/chats/"+chatID, "")
		if got = mustJSON(c); strings.Contains(got, "Say hello") && strings.Contains(got, `"content":"Hello from the daemon."`) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(got, "Say hello") || !strings.Contains(got, `"content":"Hello from the daemon."`) {
		t.Errorf("chat %s", got)
	}
	_, sys := call("GET", "/api/system?fresh=1", "")
	if s := mustJSON(sys); !strings.Contains(s, `"name":"speech"`) || !strings.Contains(s, "stt: endpoint (whisper-1 at") || !strings.Contains(s, "tts: endpoint (tts-1 at") {
		t.Errorf("doctor: %s", s)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
