package llm_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// recorder collects CallRecords.
type recorder struct {
	mu   sync.Mutex
	recs []llm.CallRecord
}

func (r *recorder) RecordCall(_ context.Context, rec llm.CallRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *recorder) all() []llm.CallRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]llm.CallRecord(nil), r.recs...)
}

// twoTargets builds a router whose tier-3 is [a, b].
func twoTargets(t *testing.T, a, b *llmtest.Server, timeout time.Duration) (*llm.Router, *recorder) {
	t.Helper()
	rec := &recorder{}
	r, err := llm.NewRouter(llm.RouterConfig{
		Tiers:    map[llm.Tier][]llm.Target{llm.Tier3: {openaiTarget(a, "a"), openaiTarget(b, "b")}},
		Timeout:  timeout,
		Recorder: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, rec
}

func TestFallbackRules(t *testing.T) {
	t.Parallel()
	ok := llmtest.Text("from b")
	cases := []struct {
		name      string
		stream    bool
		first     llmtest.Turn
		wantB     bool     // b was asked
		wantCode  llm.Code // "" for success
		wantText  string
		wantEvent bool // the caller saw output
	}{
		{"complete 500 falls through", false, llmtest.Fail(500, ""), true, "", "from b", false},
		{"complete 429 falls through", false, llmtest.Fail(429, ""), true, "", "from b", false},
		{"complete auth falls through", false, llmtest.Fail(401, ""), true, "", "from b", false},
		{"complete context falls through", false, llmtest.Fail(400, `{"error":{"message":"maximum context length exceeded"}}`), true, "", "from b", false},
		{"complete malformed falls through", false, llmtest.Turn{Malformed: true}, true, "", "from b", false},
		{"complete bad request stops", false, llmtest.Fail(400, `{"error":{"message":"invalid tool schema"}}`), false, llm.CodeBadRequest, "", false},
		{"stream 500 before first byte falls through", true, llmtest.Fail(500, ""), true, "", "from b", true},
		{"stream drop before any output falls through", true, llmtest.Turn{DropAfter: 1}, true, "", "from b", true},
		{"stream malformed before output falls through", true, llmtest.Turn{Malformed: true}, true, "", "from b", true},
		{"stream drop after first byte never switches", true, llmtest.Cut("half a rep"), false, llm.CodeNetwork, "half a rep", true},
		{"stream malformed after output never switches", true, llmtest.Turn{Text: []string{"partial"}, Malformed: true}, false, llm.CodeUnknown, "partial", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := llmtest.New(t, tc.first)
			b := llmtest.New(t)
			if tc.wantB {
				b.Push(ok)
			}
			r, rec := twoTargets(t, a, b, 0)
			req := convo
			req.Service, req.Action = "agent", "turn"
			var resp llm.Response
			var err error
			var events int
			var texts []string
			if tc.stream {
				resp, err = r.Stream(context.Background(), req, func(ev llm.Event) error {
					events++
					if ev.Kind == llm.EventText {
						texts = append(texts, ev.Text)
					}
					return nil
				})
			} else {
				resp, err = r.Complete(context.Background(), req)
			}
			if got := llm.CodeOf(err); got != tc.wantCode {
				t.Fatalf("code %q want %q (err %v)", got, tc.wantCode, err)
			}
			if got := len(b.ChatRequests()) > 0; got != tc.wantB {
				t.Fatalf("b asked: %v, want %v", got, tc.wantB)
			}
			if resp.Text != tc.wantText {
				t.Fatalf("text %q want %q", resp.Text, tc.wantText)
			}
			if tc.stream && strings.Join(texts, "") != tc.wantText {
				t.Fatalf("caller saw %q, want %q (no mixing of providers)", strings.Join(texts, ""), tc.wantText)
			}
			if (events > 0) != tc.wantEvent {
				t.Fatalf("events %d", events)
			}
			recs := rec.all()
			if len(recs) != 1 {
				t.Fatalf("want one terminal record, got %+v", recs)
			}
			wantOutcome := "ok"
			if tc.wantCode != "" {
				wantOutcome = string(tc.wantCode)
			}
			wantProvider, wantAttempts := "a", 1
			if tc.wantB {
				wantProvider, wantAttempts = "b", 2
			}
			got := recs[0]
			if got.Outcome != wantOutcome || got.Provider != wantProvider || got.Attempts != wantAttempts || got.Service != "agent" || got.Action != "turn" || got.Tier != llm.Tier3 || got.Stream != tc.stream {
				t.Fatalf("record %+v", got)
			}
			if tc.wantCode != "" {
				var le *llm.Error
				if errors.As(err, &le) && le.Partial != tc.wantEvent {
					t.Fatalf("partial %v want %v", le.Partial, tc.wantEvent)
				}
			}
		})
	}
}

func TestSharedDeadline(t *testing.T) {
	t.Parallel()
	// a fails slowly (using part of the deadline), b would take far
	// longer: the total stays bounded by the one deadline, not one per
	// attempt.
	slowA := llmtest.New(t, llmtest.Turn{Text: []string{"x"}, FirstByteDelay: 150 * time.Millisecond, Status: 503})
	slowB := llmtest.New(t, llmtest.Turn{Text: []string{"y"}, FirstByteDelay: 5 * time.Second})
	r, rec := twoTargets(t, slowA, slowB, 400*time.Millisecond)
	start := time.Now()
	_, err := r.Complete(context.Background(), convo)
	el := time.Since(start)
	// When the deadline ends just as a's 503 arrives, a's error is the
	// answer; either way nothing waits for b.
	if c := llm.CodeOf(err); c != llm.CodeTimeout && c != llm.CodeModelUnavailable {
		t.Fatalf("code %q (%v)", c, err)
	}
	// b alone would take 5 s; the bound is loose because a loaded CI
	// machine can stretch a's 150 ms past the whole deadline, which also
	// leaves only one attempt.
	if el > 3*time.Second || el < 350*time.Millisecond {
		t.Fatalf("took %v with a 400ms shared deadline", el)
	}
	if recs := rec.all(); len(recs) != 1 || (recs[0].Outcome != "timeout" && recs[0].Outcome != "model_unavailable") || recs[0].Attempts < 1 || recs[0].Attempts > 2 {
		t.Fatalf("records %+v", recs)
	}
}

func TestStreamCallerAbortAndAttribution(t *testing.T) {
	t.Parallel()
	a := llmtest.New(t, llmtest.Text("one", "two", "three"))
	b := llmtest.New(t)
	r, rec := twoTargets(t, a, b, 0)
	stop := errors.New("user interrupted")
	_, err := r.Stream(context.Background(), convo, func(ev llm.Event) error {
		if ev.Kind == llm.EventText {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("err %v, want the callback's error", err)
	}
	if len(b.ChatRequests()) != 0 {
		t.Fatal("caller abort fell through to b")
	}
	recs := rec.all()
	if len(recs) != 1 || recs[0].Outcome != "canceled" || recs[0].Service != "unknown" || recs[0].Action != "unknown" {
		t.Fatalf("records %+v", recs)
	}
}

func TestRouterConfigErrors(t *testing.T) {
	t.Parallel()
	if _, err := llm.NewRouter(llm.RouterConfig{Tiers: map[llm.Tier][]llm.Target{"tier-9": nil}}); err == nil || !strings.Contains(err.Error(), "tier-9") {
		t.Fatalf("unknown tier: %v", err)
	}
	if _, err := llm.NewRouter(llm.RouterConfig{Tiers: map[llm.Tier][]llm.Target{llm.Tier1: {{Kind: "grpc"}}}}); err == nil || !strings.Contains(err.Error(), "grpc") {
		t.Fatalf("unknown kind: %v", err)
	}
	r, err := llm.NewRouter(llm.RouterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Complete(context.Background(), llm.Request{Tier: llm.Tier5})
	if llm.CodeOf(err) != llm.CodeModelUnavailable || !strings.Contains(err.Error(), "HESTIA_LLM_BASE_URL") {
		t.Fatalf("unconfigured tier: %v", err)
	}
	_, err = r.Complete(context.Background(), llm.Request{Tier: "gpt-4"})
	if llm.CodeOf(err) != llm.CodeBadRequest {
		t.Fatalf("vendor name as tier: %v", err)
	}
}

func TestDuplicateTargetsCollapse(t *testing.T) {
	t.Parallel()
	a := llmtest.New(t, llmtest.Fail(500, ""))
	tg := openaiTarget(a, "a")
	r, err := llm.NewRouter(llm.RouterConfig{Tiers: map[llm.Tier][]llm.Target{llm.Tier2: {tg, tg}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Complete(context.Background(), llm.Request{Tier: llm.Tier2})
	if llm.CodeOf(err) != llm.CodeModelUnavailable || len(a.ChatRequests()) != 1 {
		t.Fatalf("err %v, %d requests (want one attempt)", err, len(a.ChatRequests()))
	}
}

func TestEmbedBatchPerItemRetry(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.EmbedReject = "POISON"
	rec := &recorder{}
	r, err := llm.NewRouter(llm.RouterConfig{
		Tiers:      map[llm.Tier][]llm.Target{llm.LocalEmbed: {openaiTarget(srv, "ollama")}},
		EmbedBatch: 4, Recorder: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	inputs := []string{"a", "b", "POISON", "d", "e", "f"}
	resp, err := r.Embed(context.Background(), llm.EmbedRequest{Inputs: inputs, Service: "mail", Action: "index"})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range resp.Vectors {
		if (v == nil) != (i == 2) {
			t.Fatalf("vector %d nil=%v", i, v == nil)
		}
	}
	if resp.Errors == nil || llm.CodeOf(resp.Errors[2]) != llm.CodeBadRequest || resp.Errors[0] != nil {
		t.Fatalf("errors %v", resp.Errors)
	}
	// Batches: [a b POISON d] fails → 4 single calls; [e f] ok → 1 + 1 + 4 = 6.
	if n := len(srv.Requests()); n != 6 {
		t.Fatalf("%d embedding calls, want 6", n)
	}
	if recs := rec.all(); len(recs) != 1 || recs[0].Kind != "embed" || recs[0].Service != "mail" {
		t.Fatalf("records %+v", recs)
	}
	// Every input bad: the call itself fails.
	if _, err := r.Embed(context.Background(), llm.EmbedRequest{Inputs: []string{"POISON"}}); err == nil {
		t.Fatal("all-failed embed returned no error")
	}
}

func TestLocalEmbedDefault(t *testing.T) {
	t.Parallel()
	r, err := llm.NewRouter(llm.RouterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Embed(context.Background(), llm.EmbedRequest{Tier: llm.LocalEmbed, Inputs: []string{"hello world"}})
	if err != nil || resp.Dimension != llm.LocalEmbedDim || resp.Model != llm.LocalEmbedModel {
		t.Fatalf("%+v %v", resp, err)
	}
	if _, err := r.Complete(context.Background(), llm.Request{Tier: llm.LocalEmbed}); llm.CodeOf(err) != llm.CodeModelUnavailable {
		t.Fatalf("chat on local-embed: %v", err)
	}
}

// Provider error bodies reach the log redacted and bounded.
func TestAttemptLogRedacted(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789abcdef"
	body := `{"error":{"message":"Incorrect API key provided: ` + key + `","detail":"` + strings.Repeat("x", 5000) + `"}}`
	srv := llmtest.New(t, llmtest.Fail(401, body))
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))
	tg := openaiTarget(srv, "p")
	tg.APIKey = key
	r, err := llm.NewRouter(llm.RouterConfig{Tiers: map[llm.Tier][]llm.Target{llm.Tier1: {tg}}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Complete(context.Background(), llm.Request{Tier: llm.Tier1})
	if llm.CodeOf(err) != llm.CodeAuth {
		t.Fatalf("err %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, "model attempt failed") || strings.Contains(out, key) || strings.Contains(out, "0123456789abcdef") || len(out) > 2000 {
		t.Fatalf("log (%d bytes): %s", len(out), out)
	}
	if strings.Contains(err.Error(), key) {
		t.Fatalf("error text leaks the key: %v", err)
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
