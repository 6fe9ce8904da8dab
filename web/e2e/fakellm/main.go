// Command fakellm runs the scripted model server (internal/llm/llmtest) as a
// process, for the web UI's end-to-end tests: the daemon under test points
// its model endpoint at it, and the test script pushes the model's turns
// over a small control API before each scenario.
//
//	fakellm [-script turns.json]
//
// It prints one JSON line {"url":"http://127.0.0.1:P/v1","control":"http://127.0.0.1:Q"}
// and serves until stdin closes or it is killed. Control API:
//
//	POST /push      body: [turn…]  appends scripted turns
//	GET  /pending   {"pending":N}  turns not consumed yet
//	GET  /requests  the chat requests received so far
//	GET  /errors    problems the server reported (e.g. script exhausted)
//	POST /v1/audio/transcriptions  a fake stt endpoint (the daemon's stt tier)
//
// A turn is {"text":["Hel","lo"],"tool_calls":[{"id":"c1","name":"write_file","arguments":"{…}"}],
// "chunk_delay_ms":20,"status":500,"body":"…"}.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

type turnJSON struct {
	Text      []string `json:"text"`
	ToolCalls []struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"tool_calls"`
	ChunkDelayMS int    `json:"chunk_delay_ms"`
	FirstByteMS  int    `json:"first_byte_delay_ms"`
	Status       int    `json:"status"`
	Body         string `json:"body"`
	Finish       string `json:"finish"`
}

func (j turnJSON) turn() llmtest.Turn {
	t := llmtest.Turn{
		Text:           j.Text,
		ChunkDelay:     time.Duration(j.ChunkDelayMS) * time.Millisecond,
		FirstByteDelay: time.Duration(j.FirstByteMS) * time.Millisecond,
		Status:         j.Status,
		Body:           j.Body,
		Finish:         j.Finish,
	}
	for _, c := range j.ToolCalls {
		t.ToolCalls = append(t.ToolCalls, llmtest.Call(c.ID, c.Name, c.Arguments))
	}
	return t
}

// tb lets llmtest run outside `go test`: it records failures instead of
// failing a test, and runs cleanups at exit. Only the methods llmtest calls
// are implemented; the embedded nil interface satisfies the rest.
type tb struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (t *tb) Helper() {}
func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}
func (t *tb) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	t.errs = append(t.errs, msg)
	log.Print(msg)
}
func (t *tb) Fatalf(format string, args ...any) { t.Errorf(format, args...) }
func (t *tb) Logf(format string, args ...any)   { log.Printf(format, args...) }
func (t *tb) Name() string                      { return "fakellm" }

func decodeTurns(r io.Reader) ([]llmtest.Turn, error) {
	var in []turnJSON
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("decoding turns: %w", err)
	}
	out := make([]llmtest.Turn, len(in))
	for i, j := range in {
		out[i] = j.turn()
	}
	return out, nil
}

func main() {
	script := flag.String("script", "", "JSON file with the initial turns")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("fakellm: ")

	var turns []llmtest.Turn
	if *script != "" {
		f, err := os.Open(*script)
		if err != nil {
			log.Fatal(err)
		}
		turns, err = decodeTurns(f)
		f.Close()
		if err != nil {
			log.Fatal(err)
		}
	}
	t := &tb{}
	srv := llmtest.New(t, turns...)

	mux := http.NewServeMux()
	mux.HandleFunc("POST /push", func(w http.ResponseWriter, r *http.Request) {
		ts, err := decodeTurns(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		srv.Push(ts...)
		writeJSON(w, map[string]int{"pending": srv.Pending()})
	})
	// A speech-to-text endpoint for the voice recorder test: it answers
	// with what it received, so the test sees a real recording arrived.
	mux.HandleFunc("POST /v1/audio/transcriptions", func(w http.ResponseWriter, r *http.Request) {
		f, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, `{"error":{"message":"no file"}}`, http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(f)
		json.NewEncoder(w).Encode(map[string]string{"text": fmt.Sprintf("voice note of %d bytes (%s)", len(data), hdr.Header.Get("Content-Type"))})
	})
	mux.HandleFunc("GET /pending", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]int{"pending": srv.Pending()})
	})
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, r *http.Request) {
		type msg struct {
			Role, Content, ToolCallID string
		}
		var out [][]msg
		for _, rq := range srv.ChatRequests() {
			var ms []msg
			for _, m := range rq.Messages {
				ms = append(ms, msg{m.Role, m.Content, m.ToolCallID})
			}
			out = append(out, ms)
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /errors", func(w http.ResponseWriter, r *http.Request) {
		t.mu.Lock()
		defer t.mu.Unlock()
		writeJSON(w, append([]string{}, t.errs...))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = http.Serve(ln, mux) }()

	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{"url": srv.URL, "control": "http://" + ln.Addr().String()}); err != nil {
		log.Fatal(err)
	}
	// Exit when the parent goes away (stdin closes), so a crashed test run
	// leaves no orphan.
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, f := range t.cleanups {
		f()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
