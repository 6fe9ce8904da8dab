package watch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPauseResumeDeleteOverHTTP drives the management routes the web UI
// uses: a paused watch is not polled (a change while paused fires once on
// resume), ended watches refuse both, a paused watch still expires, and a
// deleted watch is gone with its events.
func TestPauseResumeDeleteOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	mux := http.NewServeMux()
	h.e.Routes(mux)
	do := func(method, path string) (int, map[string]any) {
		t.Helper()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		var out map[string]any
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("a"), 0o600)
	w, err := h.e.Create(ctx, Spec{Source: "file", Ref: p, Instruction: "tell me when notes change", ExpiresAt: h.c.Now().Add(2 * time.Hour),
		Rules: []Rule{{Event: "file.changed"}}})
	if err != nil {
		t.Fatal(err)
	}

	code, got := do("POST", "/api/watches/"+w.ID+"/pause")
	if code != 200 || got["state"] != StatePaused {
		t.Fatalf("pause: %d %v", code, got)
	}
	if code, got = do("POST", "/api/watches/"+w.ID+"/pause"); code != 200 || got["state"] != StatePaused {
		t.Fatalf("pausing twice: %d %v", code, got)
	}
	os.WriteFile(p, []byte("abc"), 0o600)
	h.pass(t)
	if len(h.types()) != 0 {
		t.Fatalf("a paused watch fired %v", h.types())
	}
	if code, got = do("POST", "/api/watches/"+w.ID+"/resume"); code != 200 || got["state"] != StateActive {
		t.Fatalf("resume: %d %v", code, got)
	}
	h.pass(t)
	h.pass(t)
	if strings.Join(h.types(), ",") != "file.changed" {
		t.Fatalf("after resume delivered %v, want one file.changed", h.types())
	}
	code, got = do("GET", "/api/watches")
	list, _ := got["watches"].([]any)
	if code != 200 || len(list) != 1 {
		t.Fatalf("list: %d %v", code, got)
	}
	row := list[0].(map[string]any)
	if row["last_event_at"] == nil || row["events"] != float64(1) {
		t.Fatalf("list row lacks the last fire: %v", row)
	}
	evs, _ := got["events"].(map[string]any)
	if fe, _ := evs["file"].([]any); len(fe) == 0 {
		t.Fatalf("list does not name the file source's events: %v", got["events"])
	}

	// A paused watch still expires.
	do("POST", "/api/watches/"+w.ID+"/pause")
	h.c.Advance(3 * time.Hour)
	h.pass(t)
	if x, _ := h.e.Get(ctx, w.ID); x.State != StateExpired {
		t.Fatalf("paused watch past its expiry is %s", x.State)
	}
	code, got = do("POST", "/api/watches/"+w.ID+"/resume")
	if code != http.StatusConflict || !strings.Contains(got["error"].(map[string]any)["message"].(string), "expired") {
		t.Fatalf("resuming an expired watch: %d %v", code, got)
	}

	if code, _ = do("DELETE", "/api/watches/"+w.ID); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if code, _ = do("GET", "/api/watches/"+w.ID); code != http.StatusNotFound {
		t.Fatalf("deleted watch answered %d", code)
	}
	var n int
	h.e.db.QueryRow(`SELECT count(*) FROM events WHERE watch_id = ?`, w.ID).Scan(&n)
	if n != 0 {
		t.Fatalf("%d events left after delete", n)
	}
	for _, path := range []string{"/api/watches/w_nope/pause", "/api/watches/w_nope/resume"} {
		if code, _ = do("POST", path); code != http.StatusNotFound {
			t.Errorf("%s on a missing watch: %d", path, code)
		}
	}
	if code, _ = do("DELETE", "/api/watches/w_nope"); code != http.StatusNotFound {
		t.Errorf("deleting a missing watch: %d", code)
	}
}
