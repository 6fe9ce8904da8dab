package app

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/budget"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// With a reached cap every model path of the daemon stops: the /v1 gateway
// and chat turns; a turn sent with over_budget continues.
func TestBudgetGuardsEveryModelPath(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t, llmtest.Text("first"), llmtest.Text("over budget"))
	home := t.TempDir()
	a := testApp(t, home)
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Budget.DailyTokens = 1
	base, stop := start(t, a)
	defer stop()
	tok, err := authtoken.Load(a.Paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	chat := `{"model":"tier-2","messages":[{"role":"user","content":"hi"}]}`
	if code, body := call("POST", "/v1/chat/completions", chat); code != 200 {
		t.Fatalf("first call under the cap: %d %s", code, body)
	}
	if code, body := call("POST", "/v1/chat/completions", chat); code == 200 || !strings.Contains(body, "budget") {
		t.Fatalf("gateway over the cap: %d %s", code, body)
	}
	code, body := call("GET", "/api/budget", "")
	var st budget.Status
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || len(st.Exceeded()) != 1 {
		t.Fatalf("budget status: %d %s", code, body)
	}
	code, body = call("POST", "/api/chats", `{}`)
	var ch struct{ ID string }
	if code >= 300 || json.Unmarshal([]byte(body), &ch) != nil || ch.ID == "" {
		t.Fatalf("create chat: %d %s", code, body)
	}
	var res struct {
		OK    bool
		Text  string
		Error *struct{ Code string }
	}
	_, body = call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"hello","wait":true}`)
	if json.Unmarshal([]byte(body), &res) != nil || res.OK || res.Error == nil || res.Error.Code != "budget_exceeded" {
		t.Fatalf("turn over the cap: %s", body)
	}
	_, body = call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"hello","wait":true,"over_budget":true}`)
	res.Error = nil
	if json.Unmarshal([]byte(body), &res) != nil || !res.OK || res.Text != "over budget" {
		t.Fatalf("turn with over_budget: %s", body)
	}
	if n := len(up.ChatRequests()); n != 2 {
		t.Fatalf("%d upstream requests, want 2 (the refused ones never left)", n)
	}
}
