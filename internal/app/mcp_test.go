package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/mcp/mcptest"
)

// A configured MCP server's tool is offered to the model, gated by an
// approval card that shows the server's claims, runs once approved, and its
// output reaches the model as untrusted content.
func TestMCPToolThroughApprovalCard(t *testing.T) {
	t.Parallel()
	effects := &mcptest.Effects{}
	srv := mcptest.New(mcptest.Options{Effects: effects})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()

	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("c1", "mcp__test__wipe", `{"path":"/home/me"}`)),
		llmtest.Text("done"))
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.MCP.Servers = map[string]config.MCPServer{"test": {URL: ts.URL}}
	base, stop := start(t, a)
	defer stop()
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// An attached client makes approvals answerable.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.Token.Value())
	evResp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer evResp.Body.Close()
	go io.Copy(io.Discard, bufio.NewReader(evResp.Body))

	code, body := call("POST", "/api/chats", `{}`)
	var ch struct{ ID string }
	if code >= 300 || json.Unmarshal([]byte(body), &ch) != nil {
		t.Fatalf("create chat: %d %s", code, body)
	}
	done := make(chan string, 1)
	go func() {
		_, b := call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"clean up","wait":true}`)
		done <- b
	}()
	var card struct {
		ID, Tool, Preview, Risk string
	}
	deadline := time.Now().Add(20 * time.Second)
	for card.ID == "" {
		if time.Now().After(deadline) {
			t.Fatal("no approval card")
		}
		_, b := call("GET", "/api/approvals", "")
		var l struct{ Approvals []json.RawMessage }
		json.Unmarshal([]byte(b), &l)
		if len(l.Approvals) > 0 {
			json.Unmarshal(l.Approvals[0], &card)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if card.Tool != "mcp__test__wipe" || !strings.Contains(card.Preview, "the server claims") || !strings.Contains(card.Preview, "read-only") {
		t.Fatalf("card: %+v", card)
	}
	if len(effects.All()) != 0 {
		t.Fatal("the tool ran before approval")
	}
	if code, b := call("POST", "/api/approvals/"+card.ID, `{"decision":"approve"}`); code != 200 {
		t.Fatalf("approve: %d %s", code, b)
	}
	var res struct {
		OK   bool
		Text string
	}
	if json.Unmarshal([]byte(<-done), &res) != nil || !res.OK || res.Text != "done" {
		t.Fatalf("turn: %+v", res)
	}
	if e := effects.All(); len(e) != 1 || string(e[0].Args) != `{"path":"/home/me"}` {
		t.Fatalf("effects: %+v", e)
	}
	reqs := up.ChatRequests()
	last := reqs[len(reqs)-1]
	raw, _ := json.Marshal(last)
	if !strings.Contains(string(raw), "wiped") || !strings.Contains(string(raw), "untrusted_content") {
		t.Fatalf("tool output not wrapped as untrusted in the model request: %s", raw)
	}

	_, b := call("GET", "/api/mcp/servers", "")
	if !strings.Contains(b, `"state":"running"`) || !strings.Contains(b, "mcp__test__echo") {
		t.Fatalf("servers: %s", b)
	}
	_, b = call("GET", "/api/system?fresh=1", "")
	if !strings.Contains(b, `"name":"mcp.test","status":"ok"`) {
		t.Fatalf("system checks: %s", b)
	}
}
