package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/mcp/mcptest"
)

// charsPerToken is the estimator for tool tokens: OpenAI's rule of thumb
// of about four characters a token for English text. JSON schemas split
// finer (Qwen3's tokenizer counts about 3.5 characters a token on the tool
// list), so `make bench-tools` also counts them with the real tokenizer
// when it is at hand (scripts/tool-tokens.py).
const charsPerToken = 4

// maxFirstRequestToolTokens is issue 31's target for the tool definitions
// of a chat's first request, every connector configured.
const maxFirstRequestToolTokens = 1500

// configureEveryConnector turns on every built-in connector that offers
// tools: a mail account with IMAP and SMTP, a writable calendar and an
// address book (vdir) and web search (the wiki, documents, files, shell,
// memory, chats, watches, the Action Center, skills and sub-agents are
// always on); withMCP adds an MCP server with mcptest's ten tools.
func configureEveryConnector(t testing.TB, a *App, home string, withMCP bool) {
	t.Helper()
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Config.Mail.Accounts = []config.MailAccount{{Name: "me", Address: "me@example.org", PasswordFile: pw,
		IMAPHost: "127.0.0.1", IMAPPort: 1, IMAPSecurity: "none", SMTPHost: "127.0.0.1", SMTPPort: 1, SMTPSecurity: "none"}}
	for _, d := range []string{"cal", "contacts"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	a.Config.Calendar.Sources = []config.VdirSource{{Name: "home", Path: filepath.Join(home, "cal")}}
	a.Config.Contacts.Sources = []config.VdirSource{{Name: "people", Path: filepath.Join(home, "contacts")}}
	a.Config.Web.SearchURL = "http://127.0.0.1:1/search"
	if !withMCP {
		return
	}
	mcpSrv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcptest.New(mcptest.Options{}) }, nil))
	t.Cleanup(mcpSrv.Close)
	a.Config.MCP.Servers = map[string]config.MCPServer{"test": {URL: mcpSrv.URL}}
}

// firstRequestTools runs one chat turn through the daemon against the
// scripted model and returns the tool list of the model request as sent
// (raw JSON array) and every tool the daemon had available.
func firstRequestTools(t *testing.T, every, withMCP bool) (sent []json.RawMessage, available []json.RawMessage) {
	t.Helper()
	up := llmtest.New(t, llmtest.Text("hello"))
	home := t.TempDir()
	a := testApp(t, home)
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	if every {
		configureEveryConnector(t, a, home, withMCP)
	}
	base, stop := start(t, a)
	defer stop()
	post := func(path, body string) string {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var ch struct{ ID string }
	json.Unmarshal([]byte(post("/api/chats", `{}`)), &ch)
	post("/api/chats/"+ch.ID+"/messages", `{"text":"hi","wait":true}`)
	reqs := up.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var body struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	// Every available tool in the request's own shape: what was sent before
	// on-demand loading.
	for _, tl := range a.core.tools.Available(context.Background()) {
		s := tl.Spec()
		if s.Name == "tools_load" {
			continue
		}
		b, err := json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": s.Name, "description": s.Description, "parameters": s.Schema}})
		if err != nil {
			t.Fatal(err)
		}
		available = append(available, b)
	}
	return body.Tools, available
}

func listBytes(ts []json.RawMessage) int {
	b, _ := json.Marshal(ts)
	return len(b)
}

// TestFirstRequestToolTokens checks issue 31's target — at most 1,500
// tokens of tool definitions in a chat's first request with every connector
// configured — and prints the figures (`make bench-tools`). Failed before
// on-demand loading: 47 tools, ~26 KB, ~6,500 tokens by this estimate.
// HESTIA_TOOLS_DUMP=FILE writes each case's tool lists there for a
// tokenizer to count (scripts/tool-tokens.py).
func TestFirstRequestToolTokens(t *testing.T) {
	t.Parallel()
	dump := map[string]any{}
	for _, c := range []struct {
		label          string
		every, withMCP bool
	}{
		{"no connector configured", false, false},
		{"every connector configured", true, false},
		{"every connector and an MCP server configured", true, true},
	} {
		sent, avail := firstRequestTools(t, c.every, c.withMCP)
		sb, ab := listBytes(sent), listBytes(avail)
		t.Logf("%s: the first request sends %d tool definitions, %d bytes, ~%d tokens (%d chars/token); all %d available tools: %d bytes, ~%d tokens",
			c.label, len(sent), sb, sb/charsPerToken, charsPerToken, len(avail), ab, ab/charsPerToken)
		if c.every && sb/charsPerToken > maxFirstRequestToolTokens {
			t.Errorf("%s: the first request's tools are ~%d tokens, over the %d target", c.label, sb/charsPerToken, maxFirstRequestToolTokens)
		}
		dump[c.label] = map[string]any{"sent": sent, "available": avail}
	}
	if p := os.Getenv("HESTIA_TOOLS_DUMP"); p != "" {
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(dump); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(fmt.Errorf("writing the tool dump: %w", err))
		}
	}
}
