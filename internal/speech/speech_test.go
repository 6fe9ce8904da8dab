package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"sync"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm"
)

// fakeSTT is an OpenAI-compatible /audio/transcriptions endpoint.
func fakeSTT(t *testing.T) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"message":"wrong path or key"}}`)
			return
		}
		f, hdr, err := r.FormFile("file")
		if err != nil {
			w.WriteHeader(400)
			return
		}
		data, _ := io.ReadAll(f)
		mu.Lock()
		got = append(got, r.FormValue("model")+" "+hdr.Filename+" "+hdr.Header.Get("Content-Type"))
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]string{"text": " heard " + string(data[:4]) + " "})
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

type recorder struct {
	mu   sync.Mutex
	recs []llm.CallRecord
}

func (r *recorder) RecordCall(ctx context.Context, rec llm.CallRecord) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func TestFromConfig(t *testing.T) {
	t.Parallel()
	c := config.LLMConfig{Providers: map[string]config.LLMProvider{
		"whisper": {BaseURL: "http://127.0.0.1:8080/v1/", APIKey: "k"},
		"claude":  {Kind: "anthropic"},
	}}
	if cl, err := FromConfig(c, "stt"); cl != nil || err != nil {
		t.Fatalf("unmapped tier: %v %v", cl, err)
	}
	c.Tiers = map[string][]string{"stt": {"whisper/whisper-1"}}
	cl, err := FromConfig(c, "stt")
	if err != nil || cl.BaseURL != "http://127.0.0.1:8080/v1" || cl.Model != "whisper-1" || cl.APIKey != "k" {
		t.Fatalf("%+v %v", cl, err)
	}
	for _, bad := range []string{"nobody/m", "claude/x", "whisper/"} {
		c.Tiers["stt"] = []string{bad}
		if _, err := FromConfig(c, "stt"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	var nilClient *Client
	if _, err := nilClient.Transcribe(context.Background(), []byte("OggS"), "a.ogg", "audio/ogg"); err != ErrNotConfigured {
		t.Fatalf("nil client: %v", err)
	}
}

func upload(t *testing.T, url, filename, mime string, data []byte) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+filename+`"`)
	h.Set("Content-Type", mime)
	w, _ := mw.CreatePart(h)
	w.Write(data)
	mw.WriteField("model", "stt")
	mw.Close()
	req, _ := http.NewRequest("POST", url+"/v1/audio/transcriptions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("x-usage-service", "pwa")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTranscriptionRoute(t *testing.T) {
	t.Parallel()
	stt, got := fakeSTT(t)
	rec := &recorder{}
	svc := &Service{STT: &Client{BaseURL: stt.URL + "/v1", APIKey: "sk-test", Model: "whisper-1", HTTP: http.DefaultClient}, Usage: rec}
	mux := http.NewServeMux()
	svc.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	webm := append([]byte{0x1A, 0x45, 0xDF, 0xA3}, make([]byte, 100)...)
	code, body := upload(t, srv.URL, "rec.webm", "audio/webm;codecs=opus", webm)
	if code != 200 || !strings.Contains(body, `"text":"heard`) {
		t.Fatalf("transcribe: %d %s", code, body)
	}
	if len(*got) != 1 || !strings.HasPrefix((*got)[0], "whisper-1 rec.webm audio/webm") {
		t.Fatalf("upstream saw %v", *got)
	}
	if len(rec.recs) != 1 || rec.recs[0].Service != "pwa" || rec.recs[0].Kind != "stt" || rec.recs[0].Outcome != "ok" {
		t.Fatalf("usage %+v", rec.recs)
	}

	// Refusals: nothing reaches the upstream.
	cases := []struct {
		name, mime string
		data       []byte
		code       int
	}{
		{"x.mid", "audio/midi", []byte("MThd\x00\x00"), 415},
		{"x.webm", "audio/webm", []byte("#!/bin/sh\n"), 415},
		{"x.ogg", "audio/ogg", webm, 415}, // claims ogg, is webm
		{"x.ogg", "audio/ogg", nil, 400},
		{"big.ogg", "audio/ogg", append([]byte("OggS"), make([]byte, MaxAudio+10)...), 413},
	}
	for _, c := range cases {
		code, body := upload(t, srv.URL, c.name, c.mime, c.data)
		if code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.name, c.mime, code, body, c.code)
		}
	}
	if len(*got) != 1 {
		t.Fatalf("a refused upload reached the upstream: %v", *got)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/v1/audio/transcriptions", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("json body: %d", resp.StatusCode)
	}

	// An upstream error is named.
	svc.STT.APIKey = "wrong"
	code, body = upload(t, srv.URL, "rec.webm", "audio/webm", webm)
	if code != 502 || !strings.Contains(body, "wrong path or key") {
		t.Fatalf("upstream error: %d %s", code, body)
	}
}

func TestNotConfigured(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	(&Service{}).Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	code, body := upload(t, srv.URL, "a.ogg", "audio/ogg", []byte("OggS...."))
	if code != 503 || !strings.Contains(body, "not_configured") || !strings.Contains(body, "[llm.tiers] stt") {
		t.Fatalf("%d %s", code, body)
	}
}
