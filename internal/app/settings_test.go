package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/policy"
)

// A daemon started without a model gets one from the Settings API and
// answers at once; the threshold and budgets apply live too, file roots
// wait for a restart, and a refused value changes nothing in force.
func TestSettingsApplyLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	model := llmtest.New(t, llmtest.Text("answered without a restart"))
	a := testApp(t, t.TempDir())
	a.Getenv = func(string) string { return "" }
	base, stop := start(t, a)
	defer stop()
	call := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, out := call("PATCH", "/api/settings", map[string]any{"changes": []map[string]any{
		{"key": "llm.base_url", "value": model.URL},
		{"key": "llm.model", "value": "llmtest-model"},
		{"key": "policy.auto_approve", "value": "medium"},
		{"key": "budget.daily_tokens", "value": 1000000},
		{"key": "agent.file_roots", "value": []string{"/srv/shared"}},
	}})
	if code != 200 {
		t.Fatalf("save: %d %v", code, out)
	}
	b, _ := json.Marshal(out)
	for _, want := range []string{`"applied_live":["models","auto-approve threshold","budgets"]`, `"model_ready":true`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("save answer lacks %s: %s", want, b)
		}
	}
	// (server.addr differs only because the test serves on port 0.)
	pending, _ := out["settings"].(map[string]any)["pending_restart"].([]any)
	if len(pending) == 0 || pending[0] != "agent.file_roots" || strings.Contains(string(b), `"llm.`) || strings.Contains(string(b), `"policy.`) || strings.Contains(string(b), `"budget.`) {
		t.Errorf("pending restart = %v", pending)
	}
	if got := a.core.policy.Config().AutoApprove; got != policy.ThresholdMedium {
		t.Errorf("threshold in force = %q", got)
	}
	if st, err := a.Budget.Status(ctx); err != nil || !st.Enabled {
		t.Errorf("budget status: %+v %v", st, err)
	}
	// The chat runs on the model saved a moment ago.
	code, out = call("POST", "/api/chats", map[string]any{})
	if code != 201 && code != 200 {
		t.Fatalf("create chat: %d %v", code, out)
	}
	id, _ := out["id"].(string)
	code, out = call("POST", "/api/chats/"+id+"/messages", map[string]any{"text": "hello", "wait": true})
	if code != 200 || out["text"] != "answered without a restart" {
		t.Fatalf("turn after a live model change: %d %v", code, out)
	}
	// A refused value leaves the threshold in force as it was.
	if code, out = call("PATCH", "/api/settings", map[string]any{"changes": []map[string]any{{"key": "policy.auto_approve", "value": "sometimes"}}}); code != 400 {
		t.Errorf("bad threshold: %d %v", code, out)
	}
	if got := a.core.policy.Config().AutoApprove; got != policy.ThresholdMedium {
		t.Errorf("threshold after a refused change = %q", got)
	}
}
