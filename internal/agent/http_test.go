package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

func TestHTTPMessagesCancelAndTools(t *testing.T) {
	t.Parallel()
	slow := llmtest.Text("slow")
	slow.FirstByteDelay = 3 * time.Second
	h := newHarness(t, harnessOpts{cfg: Config{QueueLimit: 1}}, llmtest.Text("hi there"), slow)
	mux := http.NewServeMux()
	h.agent.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(path, body string) (*http.Response, map[string]any) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp, m
	}
	resp, m := post("/api/chats/"+h.chatID+"/messages", `{"text":"hello","wait":true}`)
	if resp.StatusCode != 200 || m["ok"] != true || m["text"] != "hi there" || m["message_id"] == "" {
		t.Fatalf("wait: %d %v", resp.StatusCode, m)
	}
	for body, code := range map[string]int{
		`{"text":""}`:                   400,
		`{"text":"x","approver":"bob"}`: 400,
		`{"txt":"x"}`:                   400,
	} {
		if resp, m := post("/api/chats/"+h.chatID+"/messages", body); resp.StatusCode != code {
			t.Errorf("%s → %d %v", body, resp.StatusCode, m)
		}
	}
	if resp, _ := post("/api/chats/c_missing/messages", `{"text":"x"}`); resp.StatusCode != 404 {
		t.Errorf("missing chat: %d", resp.StatusCode)
	}
	resp, m = post("/api/chats/"+h.chatID+"/messages", `{"text":"slow one"}`)
	if resp.StatusCode != 202 || m["turn_id"] == "" {
		t.Fatalf("async: %d %v", resp.StatusCode, m)
	}
	st, err := http.Get(srv.URL + "/api/chats/" + h.chatID + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var status Status
	json.NewDecoder(st.Body).Decode(&status)
	st.Body.Close()
	if !status.Running || status.TurnID != m["turn_id"] {
		t.Errorf("status %+v while a turn runs", status)
	}
	if resp, m := post("/api/chats/"+h.chatID+"/cancel", ``); resp.StatusCode != 200 || m["cancelled"] != true {
		t.Errorf("cancel: %d %v", resp.StatusCode, m)
	}
	r, err := http.Get(srv.URL + "/api/tools?chat=" + h.chatID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var inv struct {
		Tools []ToolInfo `json:"tools"`
	}
	json.NewDecoder(r.Body).Decode(&inv)
	got := map[string]ToolInfo{}
	for _, ti := range inv.Tools {
		got[ti.Name] = ti
	}
	if got["read_file"].Decision != "allow" || got["write_file"].Decision != "gate" || got["write_file"].Risk != "medium" || !got["read_file"].UntrustedOutput {
		t.Errorf("inventory: %+v", inv.Tools)
	}
}
