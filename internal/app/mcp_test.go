package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/mcp"
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

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// An outside agent reaches Hestia's tools over the authenticated MCP
// endpoint with the SDK's own client; a gated call shows up as an approval
// card (in the "MCP: client" chat the web app lists) and the call waits for
// the user's decision. `hestia mcp serve` (Proxy over stdio) relays to it.
func TestMCPServeEndpoint(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := testApp(t, t.TempDir())
	a.Config.Agent.FileRoots = []string{root}
	a.Config.Agent.ApprovalTimeout = config.Duration(30 * time.Second)
	base, stop := start(t, a)
	defer stop()
	ctx := context.Background()
	connect := func(token string) (*sdk.ClientSession, error) {
		hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
		return sdk.NewClient(&sdk.Implementation{Name: "goose", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/api/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	}
	if cs, err := connect("wrong"); err == nil {
		cs.Close()
		t.Fatal("connected with a wrong token")
	}
	cs, err := connect(a.Token.Value())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "write_file") || !slices.Contains(names, "read_file") || slices.Contains(names, "ask_user") {
		t.Fatalf("tools: %v", names)
	}

	// An attached approver (the web app) decides the card.
	evCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(evCtx, "GET", base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.Token.Value())
	ev, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Body.Close()
	go io.Copy(io.Discard, ev.Body)
	decideNext := func(decision string) (chatID string) {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			r, _ := http.NewRequest("GET", base+"/api/approvals", nil)
			r.Header.Set("Authorization", "Bearer "+a.Token.Value())
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Error(err)
				return ""
			}
			var l struct {
				Approvals []struct {
					ID     string `json:"id"`
					ChatID string `json:"chat_id"`
				}
			}
			json.NewDecoder(resp.Body).Decode(&l)
			resp.Body.Close()
			if len(l.Approvals) > 0 {
				c := l.Approvals[0]
				r, _ := http.NewRequest("POST", base+"/api/approvals/"+c.ID, strings.NewReader(`{"decision":"`+decision+`","note":"no thanks"}`))
				r.Header.Set("Authorization", "Bearer "+a.Token.Value())
				r.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(r)
				if err != nil || resp.StatusCode != 200 {
					t.Errorf("decide: %v %v", resp, err)
				}
				resp.Body.Close()
				return c.ChatID
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Error("no approval card appeared")
		return ""
	}
	target := root + "/from-mcp.txt"
	chatCh := make(chan string, 1)
	go func() { chatCh <- decideNext("approve") }()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": target, "content": "hi from goose"}})
	if err != nil || res.IsError {
		t.Fatalf("approved write: %v %+v", err, res)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi from goose" {
		t.Fatalf("file: %q %v", b, err)
	}
	chatID := <-chatCh
	r, _ := http.NewRequest("GET", base+"/api/chats/"+chatID, nil)
	r.Header.Set("Authorization", "Bearer "+a.Token.Value())
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "MCP: goose") {
		t.Fatalf("card's chat: %s", body)
	}

	// Through the stdio relay (`hestia mcp serve`), a denied call comes back
	// as a tool error and writes nothing.
	ct, st := sdk.NewInMemoryTransports()
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	go mcp.Proxy(pctx, base+"/api/mcp", a.Token.Value(), "test", st, nil)
	ps, err := sdk.NewClient(&sdk.Implementation{Name: "ide", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	relayChat := make(chan string, 1)
	go func() { relayChat <- decideNext("deny") }()
	res, err = ps.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": root + "/denied.txt", "content": "x"}})
	if err != nil || !res.IsError || !strings.Contains(contentOf(res), "denied") || !strings.Contains(contentOf(res), "no thanks") {
		t.Fatalf("denied write via relay: %v %s", err, contentOf(res))
	}
	if _, err := os.Stat(root + "/denied.txt"); err == nil {
		t.Fatal("denied write happened")
	}
	// The relay's card is titled after the agent on its stdio.
	r, _ = http.NewRequest("GET", base+"/api/chats/"+<-relayChat, nil)
	r.Header.Set("Authorization", "Bearer "+a.Token.Value())
	resp, err = http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "MCP: ide (via hestia mcp serve)") {
		t.Fatalf("relayed card's chat: %s", body)
	}
}

func contentOf(r *sdk.CallToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
