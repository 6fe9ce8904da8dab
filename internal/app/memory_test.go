package app

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// TestMemoryReviewRoute asks for a chat's review now: the proposer's one
// model call queues its candidate, nothing reaches USER.md until the user
// accepts it, and bad requests name what is wrong.
func TestMemoryReviewRoute(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t)
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
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
	ctx := context.Background()
	c, err := a.core.chats.Create(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.core.chats.Append(ctx, c.ID, &chat.Message{Role: chat.RoleUser, Content: "I play the cello in an orchestra on Thursdays."},
		&chat.Message{Role: chat.RoleAssistant, Content: "Lovely, noted."}); err != nil {
		t.Fatal(err)
	}
	up.Push(llmtest.ToolCalls(llmtest.ToolCall{ID: "p1", Name: "propose_memories",
		Arguments: `{"candidates":[{"target":"user","text":"Plays the cello in an orchestra on Thursdays.","confidence":"high"}]}`}))
	code, body := call("POST", "/api/memory/review", `{"chat_id":"`+c.ID+`"}`)
	if code != 200 || !strings.Contains(body, `"source":"manual"`) || !strings.Contains(body, "Plays the cello") {
		t.Fatalf("review: %d %s", code, body)
	}
	if user, _ := os.ReadFile(filepath.Join(a.MemoryDir(), "USER.md")); strings.Contains(string(user), "cello") {
		t.Fatal("a proposal reached USER.md without the user")
	}
	if code, body = call("GET", "/api/memory/queue", ""); code != 200 || !strings.Contains(body, "Plays the cello") {
		t.Fatalf("queue: %d %s", code, body)
	}
	for _, bad := range []struct {
		body string
		code int
		want string
	}{
		{`{}`, 400, "chat_id"},
		{`{"chat_id":"c_missing"}`, 404, "c_missing"},
		{`{"chat":"x"}`, 400, "chat"},
		{`not json`, 400, ""},
	} {
		if code, body = call("POST", "/api/memory/review", bad.body); code != bad.code || !strings.Contains(body, bad.want) {
			t.Errorf("review %s: %d %s", bad.body, code, body)
		}
	}
	// A model that answers garbage leaves the queue as it was.
	up.Push(llmtest.Text("no tool call"))
	if code, body = call("POST", "/api/memory/review", `{"chat_id":"`+c.ID+`"}`); code != http.StatusBadGateway || !strings.Contains(body, "propose_memories") {
		t.Fatalf("review without the tool call: %d %s", code, body)
	}
}
