package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRoutesSnapshot(t *testing.T) {
	t.Parallel()
	r := NewRoutes()
	for i := range 100 {
		d := 2 * time.Millisecond
		if i >= 90 {
			d = 300 * time.Millisecond
		}
		r.Observe("GET /api/x", "GET", 200, d)
	}
	r.Observe("GET /api/x", "GET", 503, 20*time.Second)
	r.Observe("POST /api/y", "POST", 201, time.Millisecond)
	s := r.Snapshot()
	if len(s) != 2 || s[0].Route != "GET /api/x" {
		t.Fatalf("snapshot order: %+v", s)
	}
	x := s[0]
	if x.Count != 101 || x.Errors != 1 || x.P50MS != 2.5 || x.P95MS != 500 || x.MaxMS != 20000 {
		t.Errorf("figures: %+v", x)
	}
}

// The middleware keeps streaming working and skips event streams.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	r := NewRoutes()
	h := r.Middleware(func(req *http.Request) string { return req.URL.Path }, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/sse" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			return
		}
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the wrapper: %v", err)
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	for _, p := range []string{"/a", "/a", "/sse"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	s := r.Snapshot()
	if len(s) != 1 || s[0].Route != "/a" || s[0].Count != 2 {
		t.Errorf("snapshot: %+v", s)
	}
	reg := NewRegistry(r)
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `hestia_http_request_duration_seconds_count{method="GET",route="/a"} 2`) {
		t.Errorf("exposition:\n%s", rec.Body.String())
	}
}
