package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The end-to-end tests against a real llama-server serving the probe
// model (../shared/tools/probe-model: the real Qwen3 tokenizer and chat
// template, replies programmed in testdata/probe-program.json). Run by
// scripts/probe-server.sh, which sets HESTIA_PROBE_SERVER=1,
// HESTIA_PROBE_MODEL and HESTIA_PROBE_SERVE. Between Hestia and the server
// sits a recording proxy: it keeps each request body and the server's
// reported prompt and cached token counts (timings.prompt_n, cache_n).

// probeExchange is one chat request as the proxy saw it.
type probeExchange struct {
	Body       map[string]any
	Raw        []byte
	Status     int
	FirstByte  time.Duration
	Chunks     int
	PromptN    int // tokens processed for this request (not from cache)
	CacheN     int // prompt tokens reused from the server's cache
	SawReason  bool
	ReplyBytes int
	Err        string // why the proxy could not reach llama-server (502)
}

type probeProxy struct {
	srv      *httptest.Server
	mu       sync.Mutex // guards ex and inflight
	ex       []probeExchange
	inflight int
}

// settled returns the exchanges once no chat request is still being
// relayed: Hestia can finish its turn at the server's last event before
// the proxy has read the end of the stream and recorded the exchange.
func (p *probeProxy) settled() []probeExchange {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		n := p.inflight
		p.mu.Unlock()
		if n == 0 {
			break
		}
	}
	return p.exchanges()
}

func (p *probeProxy) exchanges() []probeExchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]probeExchange(nil), p.ex...)
}

func startProbeProxy(t *testing.T, upstream string) *probeProxy {
	p := &probeProxy{}
	target, _ := url.Parse(upstream)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		chat := r.URL.Path == "/v1/chat/completions"
		if chat {
			p.mu.Lock()
			p.inflight++
			p.mu.Unlock()
			defer func() {
				p.mu.Lock()
				p.inflight--
				p.mu.Unlock()
			}()
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		// Sent again on a fresh connection if llama-server closed the
		// kept-alive one (as the daemon's own client does, llm.replayable).
		req.Header["Idempotency-Key"] = nil
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			if chat {
				p.mu.Lock()
				p.ex = append(p.ex, probeExchange{Raw: body, Status: http.StatusBadGateway, Err: err.Error()})
				p.mu.Unlock()
			}
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		ex := probeExchange{Raw: body, Status: resp.StatusCode}
		_ = json.Unmarshal(body, &ex.Body)
		br := bufio.NewReader(resp.Body)
		first := true
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if first {
					ex.FirstByte, first = time.Since(start), false
				}
				_, _ = w.Write(line)
				if f, ok := w.(http.Flusher); ok {
					f.Flush()
				}
				ex.ReplyBytes += len(line)
				probeScan(&ex, line)
			}
			if err != nil {
				break
			}
		}
		if chat {
			p.mu.Lock()
			p.ex = append(p.ex, ex)
			p.mu.Unlock()
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// probeScan reads one SSE line (or a whole JSON reply) for the server's
// timings and reasoning deltas.
func probeScan(ex *probeExchange, line []byte) {
	s := bytes.TrimSpace(line)
	s = bytes.TrimPrefix(s, []byte("data: "))
	if len(s) == 0 || s[0] != '{' {
		return
	}
	ex.Chunks++
	var v struct {
		Timings *struct {
			PromptN int `json:"prompt_n"`
			CacheN  int `json:"cache_n"`
		} `json:"timings"`
		Choices []struct {
			Delta struct {
				Reasoning string `json:"reasoning_content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(s, &v) != nil {
		return
	}
	if v.Timings != nil {
		ex.PromptN, ex.CacheN = v.Timings.PromptN, v.Timings.CacheN
	}
	for _, c := range v.Choices {
		if c.Delta.Reasoning != "" {
			ex.SawReason = true
		}
	}
}

// startLlama runs serve-llama.sh on a free loopback port with the context
// size ctxSize and waits for /health.
func startLlama(t *testing.T, ctxSize int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	logf, _ := os.Create(filepath.Join(t.TempDir(), "llama.log"))
	cmd := exec.Command(os.Getenv("HESTIA_PROBE_SERVE"), os.Getenv("HESTIA_PROBE_MODEL"), fmt.Sprint(port),
		"-c", fmt.Sprint(ctxSize), "-t", "2", "--alias", "probe", "-np", "1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting llama-server: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("llama-server did not become healthy in 90 s: %s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// probeDaemon is a daemon over a generated home whose model is the probe
// behind a recording proxy.
type probeDaemon struct {
	events *eventLog
	r      *runner
	proxy  *probeProxy
	llama  string
	home   *Home
}

// startProbeDaemon generates a home in dir (HOME must already be its
// home for the file tools to work there) and starts everything.
func startProbeDaemon(t *testing.T, dir string, ctxSize int) *probeDaemon {
	t.Helper()
	llama := startLlama(t, ctxSize)
	proxy := startProbeProxy(t, llama)
	home, err := Generate(HomeDir(dir), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home.Root, "notes", "vault.txt"), []byte("The spare key is with Mrs Pineapple at number twelve.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sink, err := startSink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	d, ids, err := startDaemon(context.Background(), home, filepath.Join(dir, "hestia"),
		Endpoint{BaseURL: proxy.srv.URL + "/v1", Model: "probe", Timeout: 5 * time.Minute}, sink.port, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ev := &eventLog{}
	if err := ev.follow(ctx, d); err != nil {
		t.Fatal(err)
	}
	return &probeDaemon{events: ev, r: &runner{d: d, home: home, sink: sink, ids: ids, opts: Options{TurnTimeout: 8 * time.Minute}}, proxy: proxy, llama: llama, home: home}
}

// chat runs the messages in one new chat as the task's user and returns
// the outcome and the exchanges it caused.
func (p *probeDaemon) chat(t *testing.T, task Task, msgs ...string) (*Outcome, []probeExchange) {
	t.Helper()
	n := len(p.proxy.exchanges())
	o := &Outcome{Home: p.home}
	ctx := context.Background()
	id, err := p.r.newChat(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		text, err := p.r.turn(ctx, id, m, task, o)
		if err != nil {
			o.Errors = append(o.Errors, err.Error())
			// What llama-server answered, for a failure that is its.
			for _, ex := range p.proxy.exchanges()[n:] {
				if ex.Status != http.StatusOK || ex.Err != "" {
					t.Logf("llama-server exchange: status %d, error %q, reply %d bytes", ex.Status, ex.Err, ex.ReplyBytes)
				}
			}
			break
		}
		o.Replies = append(o.Replies, text)
		o.Answer = text
	}
	if err := p.r.transcript(ctx, id, o); err != nil {
		t.Fatal(err)
	}
	return o, p.proxy.settled()[n:]
}

// eventLog keeps the daemon's event stream (the client protocol's SSE) as
// text, so tests see what a client is shown.
type eventLog struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (e *eventLog) follow(ctx context.Context, d *daemon) error {
	req, err := http.NewRequestWithContext(ctx, "GET", d.base+"/api/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	go func() {
		defer resp.Body.Close()
		b := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(b)
			e.mu.Lock()
			e.buf.Write(b[:n])
			e.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return nil
}

func (e *eventLog) text() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.buf.String()
}

// tokens counts the tokens llama-server's template and tokenizer make of a
// request body (POST /apply-template, then /tokenize).
func (p *probeDaemon) tokens(t *testing.T, body map[string]any) int {
	t.Helper()
	only := map[string]any{}
	for _, k := range []string{"messages", "tools", "chat_template_kwargs"} {
		if v, ok := body[k]; ok {
			only[k] = v
		}
	}
	b, _ := json.Marshal(only)
	resp, err := http.Post(p.llama+"/apply-template", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct{ Prompt string }
	_ = json.NewDecoder(resp.Body).Decode(&tpl)
	resp.Body.Close()
	b, _ = json.Marshal(map[string]any{"content": tpl.Prompt})
	resp, err = http.Post(p.llama+"/tokenize", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct{ Tokens []any }
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	return len(tok.Tokens)
}

func TestProbeServer(t *testing.T) {
	if os.Getenv("HESTIA_PROBE_SERVER") == "" {
		t.Skip("probe: skipped: set HESTIA_PROBE_SERVER=1 (scripts/probe-server.sh test sets up llama-server and the probe model)")
	}
	for _, k := range []string{"HESTIA_PROBE_MODEL", "HESTIA_PROBE_SERVE"} {
		if os.Getenv(k) == "" {
			t.Fatalf("HESTIA_PROBE_SERVER is set but %s is not (run scripts/probe-server.sh test)", k)
		}
	}
	dir := t.TempDir()
	t.Setenv("HOME", HomeDir(dir))
	p := startProbeDaemon(t, dir, 16384)

	t.Run("ToolCallApprovalAndStreaming", func(t *testing.T) {
		o, ex := p.chat(t, Task{ID: "grocery", Cards: Approve}, "put milk on my grocery list")
		if len(o.Errors) > 0 || o.ReadFile("notes/list.txt") != "buy milk" || !strings.Contains(o.Answer, "Finished with the shopping list") {
			t.Fatalf("errors %v, file %q, answer %q, tools %+v", o.Errors, o.ReadFile("notes/list.txt"), o.Answer, o.Tools)
		}
		if len(o.Cards) != 1 || o.Cards[0].Tool != "write_file" {
			t.Errorf("cards %+v, want one write_file card", o.Cards)
		}
		for _, e := range ex {
			if e.Body["stream"] != true || e.Chunks < 3 {
				t.Errorf("a request was not streamed (stream=%v, %d chunks)", e.Body["stream"], e.Chunks)
			}
		}
		t.Logf("probe: tool call through the approval card: %d requests, first token after %v", len(ex), ex[0].FirstByte.Round(time.Millisecond))
		if !strings.Contains(p.events.text(), "model.waiting") {
			t.Errorf("no model.waiting event while the server read the prompt (the first-token wait, item 1)")
		}
	})

	t.Run("ReadToolAnswer", func(t *testing.T) {
		o, _ := p.chat(t, Task{ID: "vault"}, "what is in my vault file?")
		if !o.Ran("read_file") || !strings.Contains(o.Answer, "Pineapple") || len(o.Cards) != 0 {
			t.Fatalf("answer %q, tools %+v, cards %+v, errors %v", o.Answer, o.Tools, o.Cards, o.Errors)
		}
	})

	t.Run("PromptCacheTurn2", func(t *testing.T) {
		_, ex := p.chat(t, Task{ID: "cache"}, "hi there", "and hello again")
		if len(ex) != 2 {
			t.Fatalf("%d requests, want 2", len(ex))
		}
		first := ex[0]
		total := ex[1].PromptN + ex[1].CacheN
		share := float64(ex[1].CacheN) / float64(max(total, 1))
		t.Logf("probe: turn 1 prompt %d tokens (first token after %v); turn 2 prompt %d tokens, %d from cache: cached-prefix share %.1f %%",
			first.PromptN+first.CacheN, first.FirstByte.Round(time.Millisecond), total, ex[1].CacheN, 100*share)
		noTools := map[string]any{}
		for k, v := range first.Body {
			if k != "tools" && k != "tool_choice" {
				noTools[k] = v
			}
		}
		all, without := p.tokens(t, first.Body), p.tokens(t, noTools)
		n := 0
		if tl, ok := first.Body["tools"].([]any); ok {
			n = len(tl)
		}
		t.Logf("probe: first request: %d tokens, of which tool definitions %d (%d tools)", all, all-without, n)
		if share < 0.8 {
			a, b := string(ex[0].Raw), string(ex[1].Raw)
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			t.Logf("probe: the two requests first differ at byte %d: turn 1 %q, turn 2 %q", i, a[max(0, i-80):min(len(a), i+80)], b[max(0, i-80):min(len(b), i+80)])
			t.Errorf("turn 2 reused %.1f %% of its prompt from the server's cache, want ≥ 80 %% (a byte-stable prefix, item 2)", 100*share)
		}
	})

	t.Run("ReasoningStreamed", func(t *testing.T) {
		o, ex := p.chat(t, Task{ID: "puzzle"}, "solve this puzzle for me")
		if len(ex) == 0 || !ex[0].SawReason {
			t.Fatalf("the server sent no reasoning_content (requests %d)", len(ex))
		}
		if !strings.Contains(o.Answer, "A keyboard") || strings.Contains(o.Answer, "riddle") || strings.Contains(o.Answer, "<think>") {
			t.Fatalf("answer %q: want the reply without the thinking", o.Answer)
		}
		// The reasoning streams as message.reasoning deltas, a token or
		// so each: join them before looking for the thinking's words.
		var reasoning strings.Builder
		for _, l := range strings.Split(p.events.text(), "\n") {
			d, ok := strings.CutPrefix(l, "data: ")
			if !ok || !strings.Contains(d, `"message.reasoning"`) {
				continue
			}
			var ev struct {
				Data struct{ Text string } `json:"data"`
			}
			if json.Unmarshal([]byte(d), &ev) == nil {
				reasoning.WriteString(ev.Data.Text)
			}
		}
		if !strings.Contains(reasoning.String(), "riddle") {
			t.Errorf("the reasoning was not streamed to the client as message.reasoning (item 7): %q", reasoning.String())
		}
		// Sent back in the history? A second turn's request must not carry it.
		_, ex2 := p.chat(t, Task{ID: "puzzle2"}, "solve this puzzle for me", "thanks")
		if last := ex2[len(ex2)-1]; strings.Contains(string(last.Raw), "riddle answered") {
			t.Errorf("the thinking went back to the server in the history")
		}
	})

	t.Run("SlippedToolCallRecovered", func(t *testing.T) {
		o, _ := p.chat(t, Task{ID: "sloppy"}, "list my sloppy notes folder")
		if strings.Contains(strings.Join(o.Replies, " "), "<tool_call>") {
			t.Fatalf("the raw markup reached the user: %q", o.Replies)
		}
		if !o.Ran("list_dir") || !strings.Contains(o.Answer, "Recovered") {
			t.Fatalf("the slipped call did not run: answer %q, tools %+v, errors %v", o.Answer, o.Tools, o.Errors)
		}
	})

	t.Run("RunawayStopped", func(t *testing.T) {
		start := time.Now()
		o, ex := p.chat(t, Task{ID: "joke"}, "tell me a joke")
		took := time.Since(start)
		if len(ex) == 0 {
			t.Fatal("no request reached the server")
		}
		mt, _ := ex[0].Body["max_tokens"].(float64)
		t.Logf("probe: runaway: max_tokens %v, %d bytes streamed, %v, answer %d chars", mt, ex[0].ReplyBytes, took.Round(time.Millisecond), len(o.Answer))
		if mt <= 0 && ex[0].Body["max_completion_tokens"] == nil {
			t.Errorf("the request sent no max_tokens (item 6)")
		}
		if len(o.Answer) > 20000 {
			t.Errorf("a %d-character runaway answer reached the user", len(o.Answer))
		}
	})

	t.Run("SmallWindow", func(t *testing.T) {
		small := startProbeDaemon(t, t.TempDir(), 4096)
		o, ex := small.chat(t, Task{ID: "small"}, "hi there")
		for i := 1; i < len(ex); i++ {
			if bytes.Equal(ex[i].Raw, ex[i-1].Raw) {
				t.Errorf("request %d repeats request %d byte for byte (status %d): retried without shrinking (item 3)", i+1, i, ex[i-1].Status)
			}
		}
		var statuses []int
		for _, e := range ex {
			statuses = append(statuses, e.Status)
		}
		t.Logf("probe: 4k window: %d requests (statuses %v), answer %q, errors %v", len(ex), statuses, o.Answer, o.Errors)
		if len(o.Errors) > 0 && !strings.Contains(strings.Join(o.Errors, " "), "context") {
			t.Errorf("the turn failed without naming the context window: %v", o.Errors)
		}
		// A message that alone overflows the 4k window: refused or failed
		// with a message naming the window, never sent twice unchanged.
		long := strings.Repeat("lorem ipsum dolor sit amet ", 1200)
		o, ex = small.chat(t, Task{ID: "small-long"}, long)
		for i := 1; i < len(ex); i++ {
			if bytes.Equal(ex[i].Raw, ex[i-1].Raw) {
				t.Errorf("the overflowing request was sent again unchanged (request %d)", i+1)
			}
		}
		msg := strings.Join(o.Errors, " ") + " " + o.Answer
		t.Logf("probe: 4k window, a 7k-token message: %d requests, outcome …%q", len(ex), msg[max(0, len(msg)-300):])
		if !strings.Contains(msg, "window") && !strings.Contains(msg, "context") {
			t.Errorf("a message over the window did not say so: %q", snippetOf(msg, 300))
		}
	})
}

func snippetOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
