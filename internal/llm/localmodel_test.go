package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// oneTarget builds a router whose tier-3 is srv, with to as budgets.
func oneTarget(t *testing.T, srv *llmtest.Server, to llm.Timeouts, window int) *llm.Router {
	t.Helper()
	target := openaiTarget(srv, "local")
	if srv.Flavor == "anthropic" {
		target = anthropicTarget(srv)
	}
	r, err := llm.NewRouter(llm.RouterConfig{Tiers: map[llm.Tier][]llm.Target{llm.Tier3: {target}}, Timeouts: to, ContextWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func userMsg(s string) []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: s}} }

// streamAll streams req and returns the events seen.
func streamAll(t *testing.T, r *llm.Router, req llm.Request) ([]llm.Event, llm.Response, error) {
	t.Helper()
	var evs []llm.Event
	resp, err := r.Stream(context.Background(), req, func(ev llm.Event) error {
		evs = append(evs, ev)
		return nil
	})
	return evs, resp, err
}

func TestTimeoutsNameTheirSetting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		turn llmtest.Turn
		to   llm.Timeouts
		want []string
	}{
		{"first token", llmtest.Turn{Text: []string{"late"}, FirstTokenDelay: 3 * time.Second},
			llm.Timeouts{LocalFirstToken: 200 * time.Millisecond},
			[]string{"No first token within 200ms (llm.local_first_token_timeout)", "a local model reading", "prompt tokens"}},
		{"headers late too", llmtest.Turn{Text: []string{"late"}, FirstByteDelay: 3 * time.Second},
			llm.Timeouts{LocalFirstToken: 200 * time.Millisecond},
			[]string{"llm.local_first_token_timeout"}},
		{"idle", llmtest.Turn{Text: []string{"a", "b", "c"}, ChunkDelay: 600 * time.Millisecond},
			llm.Timeouts{Idle: 300 * time.Millisecond},
			[]string{"no token for 300ms (llm.idle_timeout)"}},
		{"turn", llmtest.Turn{Text: []string{"late"}, FirstTokenDelay: 3 * time.Second},
			llm.Timeouts{Turn: 200 * time.Millisecond},
			[]string{"did not finish within 200ms (llm.turn_timeout)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, tc.turn)
			r := oneTarget(t, srv, tc.to, 0)
			evs, _, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("hi"), Service: "agent", Action: "chat-turn"})
			if llm.CodeOf(err) != llm.CodeTimeout {
				t.Fatalf("err = %v, want a timeout", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if len(evs) == 0 || evs[0].Kind != llm.EventWaiting {
				t.Fatalf("first event = %+v, want EventWaiting", evs)
			}
		})
	}
}

func TestWaitingEventReportsPromptTokens(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Turn{Text: []string{"ok"}, FirstTokenDelay: 50 * time.Millisecond})
	r := oneTarget(t, srv, llm.Timeouts{}, 0)
	big := strings.Repeat("word ", 2000)
	evs, resp, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg(big)})
	if err != nil || resp.Text != "ok" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	w := evs[0].Waiting
	if evs[0].Kind != llm.EventWaiting || w == nil {
		t.Fatalf("events %+v", evs)
	}
	if !w.Local || w.PromptTokens < 2000 || w.PromptTokens > 4000 || w.FirstTokenTimeout != llm.DefaultLocalFirstTokenTimeout {
		t.Errorf("waiting = %+v", *w)
	}
	if evs[1].Kind != llm.EventText {
		t.Errorf("second event %v, want text", evs[1].Kind)
	}
}

// The waiting event is not output: a failure after it still falls back.
func TestWaitingEventKeepsFallback(t *testing.T) {
	t.Parallel()
	a := llmtest.New(t, llmtest.Fail(503, ""))
	b := llmtest.New(t, llmtest.Text("from b"))
	r, _ := twoTargets(t, a, b, 0)
	_, resp, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("hi")})
	if err != nil || resp.Text != "from b" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

func TestIsLocal(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]bool{
		"http://127.0.0.1:8080/v1":        true,
		"http://localhost:11434/v1":       true,
		"http://[::1]:1234/v1":            true,
		"http://192.168.1.20:11434/v1":    true,
		"http://10.0.0.5/v1":              true,
		"http://ollama:11434/v1":          true,
		"http://gpu-box.local:8080/v1":    true,
		"https://api.openai.com/v1":       false,
		"https://openrouter.ai/api/v1":    false,
		"http://8.8.8.8/v1":               false,
		"not a url\x00":                   false,
		"https://api.anthropic.com/v1":    false,
		"http://host.docker.internal:1/v": true,
	} {
		if got := llm.IsLocal(url); got != want {
			t.Errorf("IsLocal(%q) = %v, want %v", url, got, want)
		}
	}
}

func TestWindowDiscovery(t *testing.T) {
	t.Parallel()
	cases := []struct {
		flavor     string
		window     int
		config     int
		wantTokens int
		wantSource string
		wantNumCtx int
	}{
		{"llama.cpp", 4096, 0, 4096, "llama.cpp /props", 0},
		{"ollama", 40960, 0, llm.DefaultOllamaContext, "ollama /api/show", llm.DefaultOllamaContext},
		{"ollama", 2048, 0, 2048, "ollama /api/show", 2048},
		{"ollama", 40960, 8192, 8192, "config", 8192},
		{"lmstudio", 32768, 0, 32768, "lmstudio /api/v0/models", 0},
		{"", 0, 0, 0, "", 0},
		{"", 0, 12000, 12000, "config", 0},
	}
	for _, tc := range cases {
		t.Run(tc.flavor+"/"+tc.wantSource, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Text("ok"))
			srv.Models = []string{"local-model"}
			srv.SetWindow(tc.flavor, tc.window)
			r := oneTarget(t, srv, llm.Timeouts{}, tc.config)
			w, err := r.Window(context.Background(), llm.Tier3)
			if err != nil {
				t.Fatal(err)
			}
			if w.Tokens != tc.wantTokens || w.Source != tc.wantSource {
				t.Errorf("window = %+v, want %d from %q", w, tc.wantTokens, tc.wantSource)
			}
			if _, err := r.Complete(context.Background(), llm.Request{Tier: llm.Tier3, Messages: userMsg("hi")}); err != nil {
				t.Fatal(err)
			}
			reqs := srv.ChatRequests()
			if got := reqs[len(reqs)-1].NumCtx; got != tc.wantNumCtx {
				t.Errorf("num_ctx sent = %d, want %d", got, tc.wantNumCtx)
			}
		})
	}
}

func TestWindowDiscoveryIsCached(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.SetWindow("llama.cpp", 4096)
	r := oneTarget(t, srv, llm.Timeouts{}, 0)
	for range 3 {
		if n := r.WindowTokens(context.Background(), llm.Tier3); n != 4096 {
			t.Fatalf("window %d", n)
		}
	}
	if n := len(srv.Discovery()); n != 1 {
		t.Errorf("%d discovery requests, want 1", n)
	}
	if _, err := r.Window(context.Background(), "tier-9"); err == nil {
		t.Error("unknown tier accepted")
	}
}

// A prompt over llama-server's window fails once, with a message saying
// what does not fit, and is not sent again.
func TestContextOverflowIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.SetWindow("llama.cpp", 300)
	r := oneTarget(t, srv, llm.Timeouts{}, 0)
	tools := []llm.ToolDef{{Name: "read_file", Description: strings.Repeat("Reads a file. ", 200)}}
	_, _, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("hi"), Tools: tools})
	if llm.CodeOf(err) != llm.CodeContextTooLarge {
		t.Fatalf("err = %v", err)
	}
	for _, w := range []string{"300-token context window", "llama-server -c", "llm.context_window"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if n := len(srv.ChatRequests()); n != 1 {
		t.Errorf("%d chat requests, want 1", n)
	}
}

func TestDefaultMaxTokensPerCallSite(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Text("a"), llmtest.Text("b"), llmtest.Text("c"))
	r := oneTarget(t, srv, llm.Timeouts{}, 0)
	ctx := context.Background()
	for _, req := range []llm.Request{
		{Tier: llm.Tier3, Messages: userMsg("x"), Service: "agent", Action: "chat-turn"},
		{Tier: llm.Tier3, Messages: userMsg("x"), Service: "memory", Action: "propose"},
		{Tier: llm.Tier3, Messages: userMsg("x"), MaxTokens: 77},
	} {
		if _, err := r.Complete(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	for _, rq := range srv.ChatRequests() {
		got = append(got, rq.MaxTokens)
	}
	if want := []int{4096, 800, 77}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("max_tokens sent %v, want %v", got, want)
	}
}

func TestRunawayStreamStops(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Turn{Text: []string{"Ha"}, Loop: " ha"})
	r := oneTarget(t, srv, llm.Timeouts{}, 0)
	evs, resp, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("joke"), Service: "agent", Action: "chat-turn"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != llm.FinishRepetition {
		t.Errorf("finish = %q, want repetition", resp.FinishReason)
	}
	if n := len(resp.Text); n < 800 || n > 4000 {
		t.Errorf("text is %d bytes; the loop should stop soon after 800", n)
	}
	last := evs[len(evs)-1]
	if last.Kind != llm.EventDone || last.FinishReason != llm.FinishRepetition {
		t.Errorf("last event %+v", last)
	}
}

func TestRepetitionDetectorLeavesVariedTextAlone(t *testing.T) {
	t.Parallel()
	var deltas []string
	for i := range 400 {
		deltas = append(deltas, "Line "+strings.Repeat("x", i%7)+" of the report, item ", string(rune('a'+i%26)), ".\n")
	}
	// A markdown table is repetitive but not one piece over and over.
	for i := range 60 {
		deltas = append(deltas, "| "+string(rune('A'+i%26))+" | 1 | 2 |\n")
	}
	srv := llmtest.New(t, llmtest.Text(deltas...))
	r := oneTarget(t, srv, llm.Timeouts{}, 0)
	_, resp, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("report")})
	if err != nil || resp.FinishReason != llm.FinishStop {
		t.Fatalf("finish %q err %v", resp.FinishReason, err)
	}
}

func TestReasoningStreamsSeparately(t *testing.T) {
	t.Parallel()
	for _, flavor := range []string{"openai", "anthropic"} {
		t.Run(flavor, func(t *testing.T) {
			t.Parallel()
			turn := llmtest.Turn{Reasoning: []string{"The user ", "greets."}, Text: []string{"Hello!"}}
			srv := llmtest.New(t, turn)
			if flavor == "anthropic" {
				srv = llmtest.NewAnthropic(t, turn)
				srv.Flavor = "anthropic"
			}
			r := oneTarget(t, srv, llm.Timeouts{}, 0)
			evs, resp, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("hi")})
			if err != nil {
				t.Fatal(err)
			}
			var reasoning, text string
			for _, ev := range evs {
				switch ev.Kind {
				case llm.EventReasoning:
					reasoning += ev.Text
				case llm.EventText:
					text += ev.Text
				}
			}
			if reasoning != "The user greets." || text != "Hello!" || resp.Reasoning != reasoning || resp.Text != "Hello!" {
				t.Errorf("reasoning %q text %q resp %+v", reasoning, text, resp)
			}
		})
	}
}

func TestToolCallRecoveredFromContent(t *testing.T) {
	t.Parallel()
	tools := []llm.ToolDef{{Name: "list_dir"}, {Name: "read_file"}}
	cases := []struct {
		name     string
		text     string
		wantCall string // name, "" for none
		wantArgs string
		wantText string
	}{
		{"qwen slip", `<tool_call>{"name": "list_dir", "arguments": {"path": "~/notes"}}</tool_call>`, "list_dir", `{"path":"~/notes"}`, ""},
		{"hermes", "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.md\"}}\n</tool_call>", "read_file", `{"path":"a.md"}`, "Let me look.\n"},
		{"llama3", `<|python_tag|>{"name": "list_dir", "parameters": {"path": "/tmp"}}<|eom_id|>`, "list_dir", `{"path":"/tmp"}`, ""},
		{"mistral", `[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "b"}}]`, "read_file", `{"path":"b"}`, ""},
		{"mistral v11", `[TOOL_CALLS]read_file[ARGS]{"path": "c"}`, "read_file", `{"path":"c"}`, ""},
		{"bare json", ` {"name": "list_dir", "arguments": {"path": "x"}}`, "list_dir", `{"path":"x"}`, ""},
		{"string args", `<tool_call>{"name": "list_dir", "arguments": "{\"path\": \"y\"}"}</tool_call>`, "list_dir", `{"path":"y"}`, ""},
		{"unknown tool", `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`, "", "", `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`},
		{"bare json answer", `{"temperature": 21}`, "", "", `{"temperature": 21}`},
		{"plain text with <", "a < b and [TOOL x", "", "", "a < b and [TOOL x"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/stream", false: "/complete"}[stream], func(t *testing.T) {
				t.Parallel()
				// One delta per byte: markup split anywhere must still be held back.
				var deltas []string
				for i := range len(tc.text) {
					deltas = append(deltas, tc.text[i:i+1])
				}
				srv := llmtest.New(t, llmtest.Text(deltas...))
				r := oneTarget(t, srv, llm.Timeouts{}, 0)
				req := llm.Request{Tier: llm.Tier3, Messages: userMsg("go"), Tools: tools}
				var resp llm.Response
				var err error
				var shown string
				if stream {
					var evs []llm.Event
					evs, resp, err = streamAll(t, r, req)
					for _, ev := range evs {
						if ev.Kind == llm.EventText {
							shown += ev.Text
						}
					}
					if shown != tc.wantText {
						t.Errorf("shown %q, want %q", shown, tc.wantText)
					}
				} else {
					resp, err = r.Complete(context.Background(), req)
				}
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != tc.wantText {
					t.Errorf("text %q, want %q", resp.Text, tc.wantText)
				}
				if tc.wantCall == "" {
					if len(resp.ToolCalls) != 0 {
						t.Errorf("calls %+v, want none", resp.ToolCalls)
					}
					return
				}
				if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != tc.wantCall || resp.ToolCalls[0].Arguments != tc.wantArgs || resp.ToolCalls[0].ID == "" {
					t.Fatalf("calls %+v", resp.ToolCalls)
				}
				if resp.FinishReason != llm.FinishToolCalls {
					t.Errorf("finish %q", resp.FinishReason)
				}
			})
		}
	}
}

// Without tools in the request nothing is held back or recovered.
func TestNoRecoveryWithoutTools(t *testing.T) {
	t.Parallel()
	text := `<tool_call>{"name": "list_dir", "arguments": {}}</tool_call>`
	srv := llmtest.New(t, llmtest.Text(text))
	r := oneTarget(t, srv, llm.Timeouts{}, 0)
	_, resp, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("go")})
	if err != nil || resp.Text != text || len(resp.ToolCalls) != 0 {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

// Structured calls win over markup in the text.
func TestNativeCallsWin(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Turn{Text: []string{`<tool_call>{"name": "list_dir", "arguments": {}}</tool_call>`}, ToolCalls: []llmtest.ToolCall{llmtest.Call("c1", "read_file", `{"path":"a"}`)}})
	r := oneTarget(t, srv, llm.Timeouts{}, 0)
	_, resp, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("go"), Tools: []llm.ToolDef{{Name: "list_dir"}, {Name: "read_file"}}})
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

// On a local endpoint a background call waits for the running foreground
// turn, and one already running is stopped and sent again when a
// foreground turn starts.
func TestBackgroundCallsYieldToForeground(t *testing.T) {
	t.Parallel()
	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.New(t, llmtest.Turn{Text: []string{"fg"}, FirstTokenDelay: 300 * time.Millisecond}, llmtest.Text("bg"))
		r := oneTarget(t, srv, llm.Timeouts{}, 0)
		ctx := context.Background()
		var wg sync.WaitGroup
		var fgSaw int
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.Stream(ctx, llm.Request{Tier: llm.Tier3, Messages: userMsg("hi"), Service: "agent", Action: "chat-turn"}, func(ev llm.Event) error {
				if ev.Kind == llm.EventDone {
					fgSaw = len(srv.ChatRequests())
				}
				return nil
			})
		}()
		waitFor(t, func() bool { return len(srv.ChatRequests()) == 1 })
		resp, err := r.Complete(ctx, llm.Request{Tier: llm.Tier3, Messages: userMsg("review"), Service: "memory", Action: "propose"})
		wg.Wait()
		if err != nil || resp.Text != "bg" {
			t.Fatalf("bg resp %+v err %v", resp, err)
		}
		if fgSaw != 1 {
			t.Errorf("the background call reached the server while the turn ran (%d requests)", fgSaw)
		}
	})
	t.Run("preempted", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.New(t, llmtest.Turn{Text: []string{"bg-1"}, FirstByteDelay: 5 * time.Second}, llmtest.Text("fg"), llmtest.Text("bg-2"))
		r := oneTarget(t, srv, llm.Timeouts{}, 0)
		ctx := context.Background()
		type result struct {
			resp llm.Response
			err  error
		}
		bg := make(chan result, 1)
		go func() {
			resp, err := r.Complete(ctx, llm.Request{Tier: llm.Tier3, Messages: userMsg("plan"), Service: "actions", Action: "plan"})
			bg <- result{resp, err}
		}()
		waitFor(t, func() bool { return len(srv.ChatRequests()) == 1 })
		_, fg, err := streamAll(t, r, llm.Request{Tier: llm.Tier3, Messages: userMsg("hi"), Service: "agent", Action: "chat-turn"})
		if err != nil || fg.Text != "fg" {
			t.Fatalf("fg %+v err %v", fg, err)
		}
		got := <-bg
		if got.err != nil || got.resp.Text != "bg-2" {
			t.Fatalf("bg %+v err %v", got.resp, got.err)
		}
		if n := len(srv.ChatRequests()); n != 3 {
			t.Errorf("%d chat requests, want 3 (bg, fg, bg again)", n)
		}
	})
	t.Run("canceled while queued", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.New(t, llmtest.Turn{Text: []string{"fg"}, FirstTokenDelay: 500 * time.Millisecond})
		r := oneTarget(t, srv, llm.Timeouts{}, 0)
		go func() {
			_, _ = r.Stream(context.Background(), llm.Request{Tier: llm.Tier3, Messages: userMsg("hi"), Service: "agent"}, func(llm.Event) error { return nil })
		}()
		waitFor(t, func() bool { return len(srv.ChatRequests()) == 1 })
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := r.Complete(ctx, llm.Request{Tier: llm.Tier3, Messages: userMsg("x"), Service: "memory"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the caller's deadline", err)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
