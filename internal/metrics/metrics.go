// Package metrics is the daemon's runtime visibility: per-route request
// latency recorded by an HTTP middleware, a runtime snapshot (goroutines,
// heap) for GET /api/system, and a registry served at GET /api/metrics in
// the Prometheus text exposition format (Go runtime and process figures
// under their usual names, plus Hestia's own).
//
// It writes the text format itself instead of using the Prometheus client
// library: that library (with protobuf, procfs and YAML) initialises a
// global registry and collectors in every process of the one hestia
// binary, which cost each short CLI command several milliseconds; the few
// gauges, counters and one histogram here need none of it.
//
// Nothing here is global: the daemon builds one Registry and passes it to
// whoever records.
package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
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

// histograms returns the latency histogram family: one series per route
// and method with cumulative buckets, sorted for a stable exposition.
func (r *Routes) histograms() []sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]routeKey, 0, len(r.m))
	for k := range r.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].route != keys[j].route {
			return keys[i].route < keys[j].route
		}
		return keys[i].method < keys[j].method
	})
	var out []sample
	for _, k := range keys {
		st := r.m[k]
		labels := [][2]string{{"method", k.method}, {"route", k.route}}
		var c uint64
		for i, n := range st.buckets {
			c += n
			out = append(out, sample{suffix: "_bucket", labels: append(labels[:2:2], [2]string{"le", formatFloat(bounds[i])}), value: float64(c)})
		}
		out = append(out, sample{suffix: "_bucket", labels: append(labels[:2:2], [2]string{"le", "+Inf"}), value: float64(st.count)},
			sample{suffix: "_sum", labels: labels, value: st.sum.Seconds()},
			sample{suffix: "_count", labels: labels, value: float64(st.count)})
	}
	return out
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

// Registry is the daemon's metric registry, served in the Prometheus text
// exposition format (version 0.0.4).
type Registry struct {
	mu       sync.Mutex // guards families
	families []family
	started  time.Time
}

// family is one metric name with its help, type and current samples.
type family struct {
	name, help, typ string
	collect         func() []sample
}

// sample is one line of a family: name+suffix{labels} value.
type sample struct {
	suffix string
	labels [][2]string
	value  float64
}

// NewRegistry returns a registry with the Go runtime and process figures
// and routes' latency histograms.
func NewRegistry(routes *Routes) *Registry {
	r := &Registry{started: time.Now()}
	r.goAndProcess()
	r.add(family{name: "hestia_http_request_duration_seconds", typ: "histogram",
		help: "Latency of answered HTTP requests by route pattern and method (event streams excluded).", collect: routes.histograms})
	return r
}

func (r *Registry) add(f family) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.families {
		if g.name == f.name {
			panic("metrics: " + f.name + " registered twice") // a wiring bug, as prometheus.MustRegister treats it
		}
	}
	r.families = append(r.families, f)
}

func one(fn func() float64) func() []sample {
	return func() []sample { return []sample{{value: fn()}} }
}

// Gauge registers a gauge read from fn at scrape time.
func (r *Registry) Gauge(name, help string, fn func() float64) {
	r.add(family{name: name, help: help, typ: "gauge", collect: one(fn)})
}

// Counter registers a counter read from fn at scrape time.
func (r *Registry) Counter(name, help string, fn func() float64) {
	r.add(family{name: name, help: help, typ: "counter", collect: one(fn)})
}

// LabeledGauges registers a gauge family whose values fn returns per label
// value at scrape time (e.g. worker state by worker name).
func (r *Registry) LabeledGauges(name, help, label string, fn func() map[string]float64) {
	r.add(family{name: name, help: help, typ: "gauge", collect: func() []sample {
		m := fn()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]sample, 0, len(keys))
		for _, k := range keys {
			out = append(out, sample{labels: [][2]string{{label, k}}, value: m[k]})
		}
		return out
	}})
}

// goAndProcess registers the Go runtime and process figures under the
// names the Prometheus Go and process collectors use, so dashboards built
// for any Go service work.
func (r *Registry) goAndProcess() {
	var (
		mu   sync.Mutex
		ms   runtime.MemStats
		read time.Time
	)
	// One scrape reads the memory statistics once (it stops the world
	// briefly), however many families use them.
	mem := func() *runtime.MemStats {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(read) > time.Second {
			runtime.ReadMemStats(&ms)
			read = time.Now()
		}
		return &ms
	}
	r.Gauge("go_goroutines", "Number of goroutines that currently exist.", func() float64 { return float64(runtime.NumGoroutine()) })
	r.add(family{name: "go_info", help: "Information about the Go environment.", typ: "gauge", collect: func() []sample {
		return []sample{{labels: [][2]string{{"version", runtime.Version()}}, value: 1}}
	}})
	r.Gauge("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", func() float64 { return float64(mem().Alloc) })
	r.Gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", func() float64 { return float64(mem().HeapAlloc) })
	r.Gauge("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", func() float64 { return float64(mem().HeapInuse) })
	r.Gauge("go_memstats_heap_objects", "Number of currently allocated objects.", func() float64 { return float64(mem().HeapObjects) })
	r.Gauge("go_memstats_sys_bytes", "Number of bytes obtained from system.", func() float64 { return float64(mem().Sys) })
	r.Counter("go_memstats_mallocs_total", "Total number of heap objects allocated.", func() float64 { return float64(mem().Mallocs) })
	r.Counter("go_gc_cycles_total", "Number of completed GC cycles.", func() float64 { return float64(mem().NumGC) })
	r.Counter("go_gc_pause_seconds_total", "Total time the world was stopped for garbage collection.", func() float64 { return float64(mem().PauseTotalNs) / 1e9 })
	r.Counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", processCPU)
	r.Gauge("process_open_fds", "Number of open file descriptors.", openFDs)
	r.Gauge("process_resident_memory_bytes", "Resident memory size in bytes.", residentBytes)
	r.Gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", func() float64 {
		return float64(r.started.UnixNano()) / 1e9
	})
}

// openFDs counts /proc/self/fd (Linux); elsewhere it reports NaN, which
// the text format carries.
func openFDs() float64 {
	d, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return math.NaN()
	}
	return float64(len(d))
}

// residentBytes reads the resident set from /proc/self/statm (Linux).
func residentBytes() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return math.NaN()
	}
	pages, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		return math.NaN()
	}
	return pages * float64(os.Getpagesize())
}

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var b bytes.Buffer
		r.Write(&b)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(b.Bytes())
	})
}

// Write writes every family in the text exposition format, in
// registration order.
func (r *Registry) Write(b *bytes.Buffer) {
	r.mu.Lock()
	fams := append([]family(nil), r.families...)
	r.mu.Unlock()
	for _, f := range fams {
		samples := f.collect()
		if len(samples) == 0 {
			continue
		}
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, helpEscaper.Replace(f.help), f.name, f.typ)
		for _, s := range samples {
			b.WriteString(f.name)
			b.WriteString(s.suffix)
			if len(s.labels) > 0 {
				b.WriteByte('{')
				for i, l := range s.labels {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(b, "%s=\"%s\"", l[0], labelEscaper.Replace(l[1]))
				}
				b.WriteByte('}')
			}
			b.WriteByte(' ')
			b.WriteString(formatFloat(s.value))
			b.WriteByte('\n')
		}
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatFloat writes a value as the text format expects (+Inf, -Inf, NaN,
// otherwise the shortest representation).
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
