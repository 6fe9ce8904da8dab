package app

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func get(t *testing.T, a *App, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+a.Token.Value())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The system page reports the runtime (goroutines, heap, event streams,
// sheds, workers, per-route latency); /api/metrics serves the same in the
// Prometheus format, behind the token.
func TestRuntimeVisibility(t *testing.T) {
	t.Parallel()
	a := testApp(t, t.TempDir())
	base, stop := start(t, a)
	defer stop()

	// Internal subscribers (notifications) may hold streams of their own.
	var before SystemStatus
	_, body := get(t, a, base+"/api/system")
	json.Unmarshal([]byte(body), &before)
	req, _ := http.NewRequest("GET", base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.Token.Value())
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	bufio.NewReader(stream.Body).ReadString('\n') // the stream is open
	for range 3 {
		get(t, a, base+"/api/chats")
	}
	// The server records a request after its answer is written, so the
	// client may read the answer first: poll until the figures settle.
	var rt RuntimeStatus
	var chats uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body := get(t, a, base+"/api/system")
		if code != 200 {
			t.Fatalf("system: %d %s", code, body)
		}
		var st SystemStatus
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		rt = st.Runtime
		chats = 0
		for _, r := range rt.Routes {
			if r.Route == "GET /api/chats" && r.Method == "GET" {
				chats = r.Count
			}
		}
		if chats == 3 && rt.Events.Approvers == before.Runtime.Events.Approvers+1 || time.Now().After(deadline) {
			break
		}
	}
	if rt.Goroutines < 2 || rt.HeapAlloc == 0 || rt.Events.Subscribers < 1 || rt.Events.Approvers != before.Runtime.Events.Approvers+1 {
		t.Errorf("runtime: %+v", rt)
	}
	for _, r := range rt.Routes {
		if r.Route == "GET /api/events" {
			t.Errorf("an event stream was recorded as latency: %+v", r)
		}
	}
	if chats != 3 {
		t.Errorf("GET /api/chats counted %d times, want 3: %+v", chats, rt.Routes)
	}
	agentRunning := false
	for _, w := range rt.Workers {
		agentRunning = agentRunning || (w.Name == "agent" && w.State == "running")
	}
	if !agentRunning {
		t.Errorf("workers: %+v", rt.Workers)
	}

	resp, _ := http.Get(base + "/api/metrics")
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("metrics without the token: %d", resp.StatusCode)
	}
	code, body := get(t, a, base+"/api/metrics")
	for _, want := range []string{"go_goroutines ", "go_memstats_heap_alloc_bytes ", "process_open_fds ",
		`hestia_http_request_duration_seconds_count{method="GET",route="GET /api/chats"} 3`,
		"hestia_sse_subscribers ", "hestia_sse_approvers " + strconv.Itoa(rt.Events.Approvers) + "\n", "hestia_sse_shed_total 0", `hestia_worker_up{worker="agent"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if code != 200 || strings.Contains(body, a.Token.Value()) {
		t.Errorf("metrics: %d", code)
	}
}

// However many clients poll the system page, fresh or not, the model
// endpoint is asked at most once per cache period.
func TestSystemCallsModelEndpointOncePerPeriod(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" { // the endpoint check, not window discovery (LM Studio's /api/v0/models)
			hits.Add(1)
		}
		io.WriteString(w, `{"data":[]}`)
	}))
	defer model.Close()
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL = model.URL + "/v1"
	a.Config.LLM.Model = "m"
	base, stop := start(t, a)
	defer stop()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := "/api/system"
			if i%2 == 0 {
				q += "?fresh=1"
			}
			if code, body := get(t, a, base+q); code != 200 || !strings.Contains(body, "llm.endpoint") {
				t.Errorf("system: %d %s", code, body)
			}
		}()
	}
	wg.Wait()
	get(t, a, base+"/api/system?fresh=1")
	if n := hits.Load(); n != 1 {
		t.Errorf("model endpoint called %d times, want 1", n)
	}
}
