package speech

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSpeechRoute(t *testing.T) {
	t.Parallel()
	var got map[string]string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/speech" {
			w.WriteHeader(404)
			return
		}
		json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "audio/ogg")
		io.WriteString(w, "OggS-audio-of-"+got["input"])
	}))
	defer up.Close()
	rec := &recorder{}
	mux := http.NewServeMux()
	(&Service{TTS: &Client{BaseURL: up.URL + "/v1", Model: "tts-1", HTTP: http.DefaultClient}, Usage: rec}).Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(body string) (int, string, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/audio/speech", strings.NewReader(body))
		req.Header.Set("x-usage-service", "telegram")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	code, ct, body := post(`{"model":"tts","input":"hello there","voice":"nova"}`)
	if code != 200 || ct != "audio/ogg" || body != "OggS-audio-of-hello there" {
		t.Fatalf("speak: %d %s %q", code, ct, body)
	}
	if got["voice"] != "nova" || got["model"] != "tts-1" || got["response_format"] != "opus" {
		t.Fatalf("upstream got %v", got)
	}
	if len(rec.recs) != 1 || rec.recs[0].Kind != "tts" || rec.recs[0].Service != "telegram" {
		t.Fatalf("usage %+v", rec.recs)
	}
	for _, bad := range []string{`{"input":""}`, `{"input":"` + strings.Repeat("a", MaxSpeechInput+1) + `"}`, `{"input":"x","response_format":"midi"}`, `not json`} {
		if code, _, body := post(bad); code != 400 {
			t.Errorf("%.40s: %d %s", bad, code, body)
		}
	}
	if len(rec.recs) != 1 {
		t.Fatal("a refused request reached the upstream")
	}

	mux2 := http.NewServeMux()
	(&Service{}).Routes(mux2)
	srv2 := httptest.NewServer(mux2)
	defer srv2.Close()
	resp, err := http.Post(srv2.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "tts") {
		t.Fatalf("not configured: %d %s", resp.StatusCode, b)
	}
}
