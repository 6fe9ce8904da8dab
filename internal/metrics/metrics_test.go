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

// The exposition follows the text format: HELP and TYPE per family,
// cumulative histogram buckets ending in +Inf, escaped label values and
// help text, label sets in a stable order.
func TestExposition(t *testing.T) {
	t.Parallel()
	r := NewRoutes()
	r.Observe(`GET /a/"q"`, "GET", 200, 3*time.Millisecond)
	r.Observe(`GET /a/"q"`, "GET", 200, 30*time.Second)
	reg := NewRegistry(r)
	reg.Gauge("hestia_test_gauge", "A gauge with a back\\slash\nand a newline.", func() float64 { return 2.5 })
	reg.Counter("hestia_test_total", "A counter.", func() float64 { return 7 })
	reg.LabeledGauges("hestia_test_up", "Per worker.", "worker", func() map[string]float64 { return map[string]float64{"b": 0, "a\n": 1} })
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	for _, want := range []string{
		"# HELP hestia_test_gauge A gauge with a back\\\\slash\\nand a newline.\n# TYPE hestia_test_gauge gauge\nhestia_test_gauge 2.5\n",
		"# TYPE hestia_test_total counter\nhestia_test_total 7\n",
		"hestia_test_up{worker=\"a\\n\"} 1\nhestia_test_up{worker=\"b\"} 0\n",
		"# TYPE hestia_http_request_duration_seconds histogram\n",
		`hestia_http_request_duration_seconds_bucket{method="GET",route="GET /a/\"q\"",le="0.001"} 0` + "\n",
		`hestia_http_request_duration_seconds_bucket{method="GET",route="GET /a/\"q\"",le="0.005"} 1` + "\n",
		`hestia_http_request_duration_seconds_bucket{method="GET",route="GET /a/\"q\"",le="10"} 1` + "\n",
		`hestia_http_request_duration_seconds_bucket{method="GET",route="GET /a/\"q\"",le="+Inf"} 2` + "\n",
		`hestia_http_request_duration_seconds_sum{method="GET",route="GET /a/\"q\""} 30.003` + "\n",
		`hestia_http_request_duration_seconds_count{method="GET",route="GET /a/\"q\""} 2` + "\n",
		"go_goroutines ", "go_memstats_heap_alloc_bytes ", "process_start_time_seconds ", "go_info{version=\"go",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q:\n%s", want, body)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a name registered twice was accepted")
		}
	}()
	reg.Gauge("hestia_test_gauge", "again", func() float64 { return 0 })
}
