package scheduler

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHTTP(t *testing.T) {
	t.Parallel()
	s, _, _ := newSched(t)
	mux := http.NewServeMux()
	s.Routes(mux)
	do := func(method, path, body string) (int, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		var out map[string]any
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	errMsg := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		m, _ := e["message"].(string)
		return m
	}
	for _, tc := range []struct{ body, field string }{
		{`{"name":"b","cron":"0 8 * *","prompt":"p"}`, "cron:"},
		{`{"name":"b","every":"soon","prompt":"p"}`, "every:"},
		{`{"name":"b","at":"tomorrow","prompt":"p"}`, "at:"},
		{`{"name":"b","cron":"@daily","prompt":"p","timeout":"x"}`, "timeout:"},
		{`{"name":"b","cron":"@daily"}`, "prompt:"},
		{`{"name":"b","cron":"@daily","prompt":"p","color":"red"}`, `"color"`},
		{`{"name":`, "JSON"},
	} {
		code, out := do("POST", "/api/jobs", tc.body)
		if code != 400 || !strings.Contains(errMsg(out), tc.field) {
			t.Errorf("POST %s = %d %v, want 400 naming %s", tc.body, code, out, tc.field)
		}
	}
	code, out := do("POST", "/api/jobs", `{"name":"briefing","cron":"0 8 * * 1-5","prompt":"brief me on today's mail"}`)
	if code != 201 || out["name"] != "briefing" || out["next_run"] == nil {
		t.Fatalf("create = %d %v", code, out)
	}
	if code, _ := do("POST", "/api/jobs", `{"name":"briefing","every":"1h","prompt":"x"}`); code != 400 {
		t.Fatalf("duplicate create = %d", code)
	}
	code, out = do("GET", "/api/jobs", "")
	if jobs, _ := out["jobs"].([]any); code != 200 || len(jobs) != 1 {
		t.Fatalf("list = %d %v", code, out)
	}
	if code, _ := do("POST", "/api/jobs/nope/run", ""); code != 404 {
		t.Fatalf("run missing = %d", code)
	}
	if code, _ := do("GET", "/api/jobs/briefing/runs?limit=0", ""); code != 400 {
		t.Fatalf("bad limit = %d", code)
	}
	code, out = do("POST", "/api/jobs/briefing/run", "")
	if code != 202 || out["run_id"] == nil {
		t.Fatalf("run = %d %v", code, out)
	}
	s.Wait()
	code, out = do("GET", "/api/jobs/briefing/runs", "")
	if runs, _ := out["runs"].([]any); code != 200 || len(runs) != 1 {
		t.Fatalf("runs = %d %v", code, out)
	}
	if code, out = do("POST", "/api/jobs/briefing/pause", ""); code != 200 || out["enabled"] != false {
		t.Fatalf("pause = %d %v", code, out)
	}
	if code, _ := do("DELETE", "/api/jobs/briefing", ""); code != 200 {
		t.Fatalf("delete = %d", code)
	}
	if code, _ := do("GET", "/api/jobs/briefing", ""); code != 404 {
		t.Fatalf("get deleted = %d", code)
	}
}
