package app

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/usage"
)

// The daemon serves the gateway behind its bearer token with the zero-file
// single target, and the usage page sees the attributed call.
func TestGatewayAndUsageWired(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t, llmtest.Text("hi from upstream"))
	home := t.TempDir()
	a := testApp(t, home)
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	base, stop := start(t, a)
	defer stop()
	tok, err := authtoken.Load(a.Paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string, auth bool) *http.Response {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if auth {
			req.Header.Set("Authorization", "Bearer "+tok.Value())
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-usage-service", "app-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	chat := `{"model":"tier-2","messages":[{"role":"user","content":"hi"}]}`
	if resp := call("POST", "/v1/chat/completions", chat, false); resp.StatusCode != 401 {
		t.Fatalf("gateway without token: %d", resp.StatusCode)
	}
	resp := call("POST", "/v1/chat/completions", chat, true)
	var out struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Choices[0].Message.Content != "hi from upstream" {
		t.Fatalf("chat: %d %+v %v", resp.StatusCode, out, err)
	}
	if got := up.ChatRequests()[0].Model; got != "llama3" {
		t.Fatalf("upstream model %q", got)
	}
	resp = call("GET", "/api/usage?period=30d", "", true)
	var s usage.Summary
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || s.Totals.Requests != 1 || s.ByService[0].Key != "app-test" || s.Recent[0].Tier != "tier-2" {
		t.Fatalf("usage: %+v %v", s, err)
	}
}

func TestTiersCheck(t *testing.T) {
	t.Parallel()
	a := testApp(t, t.TempDir())
	if err := a.initLLM(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	st, detail := tiersCheck(a.LLM).Run(t.Context())
	if st != "warn" || !strings.Contains(detail, "no chat model is configured") || !strings.Contains(detail, "local-embed → local/hestia-hash-384-v1") {
		t.Fatalf("%s %s", st, detail)
	}
}
