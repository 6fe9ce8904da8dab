package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/skills"
)

// An installed skill is listed in the system prompt, skill_load returns
// its body, and a later call outside its manifest is refused by policy.
func TestSkillEndToEnd(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	pre := testApp(t, home)
	st, err := pre.OpenSkills(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Install(context.Background(), "../skills/testdata/clean-report", skills.InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	pre.Close()

	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("l", "skill_load", `{"name":"weekly-report"}`)),
		llmtest.ToolCalls(llmtest.Call("n", "now", `{}`)),
		llmtest.Text("done"))
	a := testApp(t, home)
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
	body := call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"weekly report please","wait":true}`)
	if !strings.Contains(body, `"ok":true`) {
		t.Fatalf("turn: %s", body)
	}
	reqs := up.ChatRequests()
	first, _ := json.Marshal(reqs[0].Messages[0])
	if !strings.Contains(string(first), "weekly-report: Summarise") {
		t.Fatalf("system prompt lacks the skill index: %s", first)
	}
	last, _ := json.Marshal(reqs[len(reqs)-1].Messages)
	if !strings.Contains(string(last), "Search the mail of the last seven days") {
		t.Fatalf("skill body not returned: %s", last)
	}
	// now is not in the manifest: refused by the skill's restriction.
	if !strings.Contains(string(last), "BLOCKED: now was NOT run") || !strings.Contains(string(last), "skill weekly-report") {
		t.Fatalf("call outside the manifest not refused: %s", last)
	}
}
