package policy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/tools"
)

func TestRuleEndpoints(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Config{}, nil)
	var audited []string
	api := &API{Engine: e, Registry: tools.NewRegistry(), Audit: func(typ, _, summary string, _ any) { audited = append(audited, typ) }}
	mux := http.NewServeMux()
	api.Routes(mux)
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	errText := func(out map[string]any) string {
		b, _ := json.Marshal(out["error"])
		return string(b)
	}

	code, out := do("POST", "/api/policy/rules", `{"tool":"write_file","decision":"allow","path_scope":"/home/u/notes"}`)
	if code != http.StatusCreated || out["id"] == "" {
		t.Fatalf("create: %d %v", code, out)
	}
	id, _ := out["id"].(string)
	for _, c := range []struct {
		method, path, body string
		status             int
		mentions           string
	}{
		{"POST", "/api/policy/rules", `{"tool":"write_file","decision":"maybe"}`, 400, "maybe"},
		{"POST", "/api/policy/rules", `{"tool":"write_file","decision":"allow","path_scope":"notes"}`, 400, "path_scope"},
		{"POST", "/api/policy/rules", `{"tool":"write_file","decision":"allow","extra":1}`, 400, "extra"},
		{"PUT", "/api/policy/rules/" + id, `{"tool":"","decision":"deny"}`, 400, "tool"},
		{"PUT", "/api/policy/rules/" + id, `not json`, 400, ""},
		{"PUT", "/api/policy/rules/r_missing", `{"tool":"x","decision":"deny"}`, 404, "r_missing"},
		{"DELETE", "/api/policy/rules/r_missing", ``, 404, "r_missing"},
		{"POST", "/api/policy/test", `{"args":{}}`, 400, "tool"},
		{"PUT", "/api/chats/c1/mode", `{"mode":"forever"}`, 400, "forever"},
	} {
		code, out := do(c.method, c.path, c.body)
		if code != c.status || !strings.Contains(errText(out), c.mentions) {
			t.Errorf("%s %s %s: %d %s, want %d naming %q", c.method, c.path, c.body, code, errText(out), c.status, c.mentions)
		}
	}
	if code, out := do("PUT", "/api/policy/rules/"+id, `{"tool":"write_file","decision":"deny","priority":5}`); code != 200 || out["decision"] != "deny" {
		t.Fatalf("update: %d %v", code, out)
	}
	if rs, _ := e.Rules().List(t.Context()); len(rs) != 1 || rs[0].Decision != Deny || rs[0].Priority != 5 {
		t.Fatalf("stored rules after update: %+v", rs)
	}
	if code, _ := do("DELETE", "/api/policy/rules/"+id, ``); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if strings.Join(audited, ",") != "policy.rule_changed,policy.rule_changed,policy.rule_changed" {
		t.Errorf("audited %v: only the three successful changes should be", audited)
	}
}
