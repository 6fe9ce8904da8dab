// Package metrics is the daemon's runtime visibility: per-route request
// latency recorded by an HTTP middleware, a runtime snapshot (goroutines,
// heap) for GET /api/system, and a Prometheus registry (the standard Go and
// process collectors plus Hestia's own) served at GET /api/metrics.
//
// Nothing here is global: the daemon builds one Registry and passes it to
// whoever records.
package metrics

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// bounds are the latency histogram's upper bounds in seconds.
var bounds = [...]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

type routeKey struct{ route, method string }

type routeStat struct {
	count   uint64
	errors  uint64 // answers with status >= 500
	sum     time.Duration
	max     time.Duration
	buckets [len(bounds)]uint64 // cumulative counts are computed on read
}

// RouteStat is one route's figures since start.
type RouteStat struct {
	Route  string  `json:"route"` // the ServeMux pattern, e.g. "GET /api/chats/{id}"
	Method string  `json:"method"`
	Count  uint64  `json:"count"`
	Errors uint64  `json:"errors"` // status >= 500
	AvgMS  float64 `json:"avg_ms"`
	P50MS  float64 `json:"p50_ms"` // upper bound of the histogram bucket holding the median
	P95MS  float64 `json:"p95_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// Routes records request latency per route.
type Routes struct {
	mu sync.Mutex // guards m
	m  map[routeKey]*routeStat
}

// NewRoutes returns an empty recorder.
func NewRoutes() *Routes { return &Routes{m: map[routeKey]*routeStat{}} }

// Observe records one answered request.
func (r *Routes) Observe(route, method string, status int, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := routeKey{route, method}
	st := r.m[k]
	if st == nil {
		st = &routeStat{}
		r.m[k] = st
	}
	st.count++
	if status >= 500 {
		st.errors++
	}
	st.sum += d
	st.max = max(st.max, d)
	for i, b := range bounds {
		if d.Seconds() <= b {
			st.buckets[i]++
			break
		}
	}
}

// Snapshot returns every route's figures, busiest first.
func (r *Routes) Snapshot() []RouteStat {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RouteStat, 0, len(r.m))
	for k, st := range r.m {
		out = append(out, RouteStat{
			Route: k.route, Method: k.method, Count: st.count, Errors: st.errors,
			AvgMS: ms(st.sum) / float64(st.count), P50MS: quantile(st, 0.5), P95MS: quantile(st, 0.95), MaxMS: ms(st.max),
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Route+out[i].Method < out[j].Route+out[j].Method
	})
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile is the upper bound of the bucket holding the q-th request; past
// the last bound it is the maximum seen.
func quantile(st *routeStat, q float64) float64 {
	want := uint64(q*float64(st.count) + 0.5)
	if want == 0 {
		want = 1
	}
	var seen uint64
	for i, n := range st.buckets {
		seen += n
		if seen >= want {
			return min(bounds[i]*1000, ms(st.max))
		}
	}
	return ms(st.max)
}

// Middleware records each request under the route label returns (a mux
// pattern, so the label set is bounded by the routes registered). Event
// streams are not recorded: their duration is how long a client watched,
// not latency.
func (r *Routes) Middleware(label func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		route := label(req)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		defer func() {
			if strings.HasPrefix(sw.Header().Get("Content-Type"), "text/event-stream") {
				return
			}
			r.Observe(route, req.Method, sw.status, time.Since(start))
		}()
		next.ServeHTTP(sw, req)
	})
}

// statusWriter remembers the status code; it keeps Flush, Hijack and
// Unwrap working for SSE and http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status  int
	written bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.written {
		w.status, w.written = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.written = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	w.written = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("hijacking is not supported")
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Describe implements prometheus.Collector.
func (r *Routes) Describe(ch chan<- *prometheus.Desc) { ch <- latencyDesc }

var latencyDesc = prometheus.NewDesc("hestia_http_request_duration_seconds",
	"Latency of answered HTTP requests by route pattern and method (event streams excluded).", []string{"route", "method"}, nil)

// Collect implements prometheus.Collector.
func (r *Routes) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, st := range r.m {
		cum := map[float64]uint64{}
		var c uint64
		for i, n := range st.buckets {
			c += n
			cum[bounds[i]] = c
		}
		ch <- prometheus.MustNewConstHistogram(latencyDesc, st.count, st.sum.Seconds(), cum, k.route, k.method)
	}
}

// Runtime is a snapshot of the Go runtime.
type Runtime struct {
	Goroutines    int    `json:"goroutines"`
	HeapAlloc     uint64 `json:"heap_alloc_bytes"`
	HeapInuse     uint64 `json:"heap_inuse_bytes"`
	Sys           uint64 `json:"sys_bytes"`
	NumGC         uint32 `json:"num_gc"`
	GCPauseTotalS string `json:"gc_pause_total"`
}

// ReadRuntime reads the runtime figures. It briefly stops the world (as
// runtime.ReadMemStats does), so callers should not poll it in a loop.
func ReadRuntime() Runtime {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return Runtime{Goroutines: runtime.NumGoroutine(), HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, Sys: m.Sys,
		NumGC: m.NumGC, GCPauseTotalS: time.Duration(m.PauseTotalNs).String()}
}

// Registry is the daemon's Prometheus registry.
type Registry struct {
	reg *prometheus.Registry
}

// NewRegistry returns a registry with the Go and process collectors and
// routes' latency histograms.
func NewRegistry(routes *Routes) *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), routes)
	return &Registry{reg: reg}
}

// Gauge registers a gauge read from fn at scrape time.
func (r *Registry) Gauge(name, help string, fn func() float64) {
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// Counter registers a counter read from fn at scrape time.
func (r *Registry) Counter(name, help string, fn func() float64) {
	r.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// LabeledGauges registers a gauge family whose values fn returns per label
// value at scrape time (e.g. worker state by worker name).
func (r *Registry) LabeledGauges(name, help, label string, fn func() map[string]float64) {
	r.reg.MustRegister(&funcVec{desc: prometheus.NewDesc(name, help, []string{label}, nil), fn: fn})
}

type funcVec struct {
	desc *prometheus.Desc
	fn   func() map[string]float64
}

func (f *funcVec) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }
func (f *funcVec) Collect(ch chan<- prometheus.Metric) {
	for k, v := range f.fn() {
		ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, v, k)
	}
}

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
