package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
)

func TestCalendarRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testApp(t, t.TempDir())
	defer a.Close()
	dir := filepath.Join(t.TempDir(), "work")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.ics"), []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20260303T090000Z\r\nDTEND:20260303T100000Z\r\nSUMMARY:Route event\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"), 0o644)
	// One bad component (no DTSTART) beside a good one: the good one is
	// indexed, the bad one named in the agenda's warnings.
	os.WriteFile(filepath.Join(dir, "b.ics"), []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VEVENT\r\nUID:nostart\r\nSUMMARY:x\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:b\r\nDTSTART:20260310T110000Z\r\nSUMMARY:Kept\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"), 0o644)
	a.Config.Calendar.Sources = []config.VdirSource{{Name: "work", Path: dir}}
	a.Config.Calendar.Timezone = "UTC"
	c, err := a.OpenCalendar(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.SyncAll(ctx); err != nil || len(st) != 1 || st[0].Events != 2 || len(st[0].Warnings) != 1 {
		t.Fatalf("sync %+v %v", st, err)
	}
	mux := http.NewServeMux()
	c.Routes(mux)
	get := func(path string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var v map[string]any
		json.Unmarshal(rec.Body.Bytes(), &v)
		return rec.Code, v
	}
	if code, v := get("/api/calendar/agenda?from=2026-03-03&to=2026-03-04"); code != 200 || len(v["instances"].([]any)) != 1 {
		t.Fatalf("agenda: %d %v", code, v)
	} else if ws, _ := v["warnings"].([]any); len(ws) != 1 || v["warnings_total"] != 1.0 {
		t.Fatalf("agenda warnings: %v", v)
	} else if w := ws[0].(map[string]any); w["calendar"] != "work" || w["file"] != "b.ics" || w["component"] != "VEVENT nostart" || w["skipped"] != true {
		t.Fatalf("agenda warning: %v", w)
	}
	if code, _ := get("/api/calendar/agenda?from=soon"); code != 400 {
		t.Errorf("bad agenda: %d", code)
	}
	if code, v := get("/api/calendar/free?from=2026-03-03&to=2026-03-04"); code != 200 || len(v["busy"].([]any)) != 1 {
		t.Errorf("free: %d %v", code, v)
	}
	if code, _ := get("/api/calendar/search"); code != 400 {
		t.Errorf("empty search: %d", code)
	}
	if code, v := get("/api/calendar/ops"); code != 200 || v["operations"] == nil {
		t.Errorf("ops: %d %v", code, v)
	}
	if code, v := get("/api/calendar/calendars"); code != 200 || len(v["calendars"].([]any)) != 1 {
		t.Errorf("calendars: %d %v", code, v)
	}
}
