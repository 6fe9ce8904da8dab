package app

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// delegate runs a child turn through the daemon's own model client and
// registry; its answer is the tool output the parent model sees.
func TestDelegateEndToEnd(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("d", "delegate", `{"task":"what time is it?","tools":["now"]}`)),
		llmtest.ToolCalls(llmtest.Call("n", "now", `{}`)),
		llmtest.Text("It is noon, says the clock."),
		llmtest.Text("done"))
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	base, stop := start(t, a)
	defer stop()
	call := func(method, path, body string) string {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var ch struct{ ID string }
	json.Unmarshal([]byte(call("POST", "/api/chats", `{}`)), &ch)
	if body := call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"time?","wait":true}`); !strings.Contains(body, `"ok":true`) {
		t.Fatalf("turn: %s", body)
	}
	reqs := up.ChatRequests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4 (parent, child ×2, parent)", len(reqs))
	}
	child, _ := json.Marshal(reqs[1])
	if !strings.Contains(string(child), "sub-agent") || strings.Contains(string(child), `"delegate"`) {
		t.Fatalf("child request: %s", child)
	}
	last, _ := json.Marshal(reqs[3].Messages)
	if !strings.Contains(string(last), "It is noon, says the clock.") || !strings.Contains(string(last), "2 steps") {
		t.Fatalf("child answer not returned to the parent: %s", last)
	}
}
