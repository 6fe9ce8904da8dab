package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

func openaiTarget(srv *llmtest.Server, name string) llm.Target {
	return llm.Target{Provider: name, Kind: llm.KindOpenAI, BaseURL: srv.URL, APIKey: "sk-test-secret-key-123", Model: name + "-model"}
}

func anthropicTarget(srv *llmtest.Server) llm.Target {
	return llm.Target{Provider: "anthropic", Kind: llm.KindAnthropic, BaseURL: srv.URL, APIKey: "sk-ant-secret", Model: "claude-x"}
}

// collect runs Stream and returns the events seen.
func collect(t *testing.T, c llm.Client, req llm.Request) ([]llm.Event, llm.Response, error) {
	t.Helper()
	var evs []llm.Event
	resp, err := c.Stream(context.Background(), req, func(ev llm.Event) error {
		evs = append(evs, ev)
		return nil
	})
	return evs, resp, err
}

var convo = llm.Request{
	Tier: llm.Tier3,
	Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "be brief"},
		{Role: llm.RoleUser, Content: "find invoices"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c0", Name: "search", Arguments: `{"q":"x"}`}}},
		{Role: llm.RoleTool, ToolCallID: "c0", Name: "search", Content: "2 hits"},
	},
	Tools:      []llm.ToolDef{{Name: "search", Description: "search mail", Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)}},
	MaxTokens:  100,
	ToolChoice: "required",
}

func TestStreamBothFormats(t *testing.T) {
	t.Parallel()
	turn := llmtest.Turn{
		Reasoning: []string{"think", "ing"},
		Text:      []string{"Two ", "found."},
		ToolCalls: []llmtest.ToolCall{llmtest.Call("c1", "read", `{"id":1,"full":true}`), llmtest.Call("c2", "read", `{"id":2}`)},
		ArgChunks: 3,
		Usage:     &llmtest.Usage{Prompt: 100, Completion: 20, Cached: 40, Reasoning: 5},
	}
	for _, format := range []string{"openai", "anthropic"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var c llm.Client
			var srv *llmtest.Server
			if format == "openai" {
				srv = llmtest.New(t, turn)
				c = llm.NewOpenAI(openaiTarget(srv, "p"), nil)
			} else {
				srv = llmtest.NewAnthropic(t, turn)
				c = llm.NewAnthropic(anthropicTarget(srv), nil)
			}
			evs, resp, err := collect(t, c, convo)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "Two found." || resp.Reasoning != "thinking" || resp.FinishReason != llm.FinishToolCalls {
				t.Fatalf("resp %+v", resp)
			}
			if len(resp.ToolCalls) != 2 || resp.ToolCalls[0] != (llm.ToolCall{ID: "c1", Name: "read", Arguments: `{"id":1,"full":true}`}) || resp.ToolCalls[1].Arguments != `{"id":2}` {
				t.Fatalf("tool calls %+v", resp.ToolCalls)
			}
			var deltas, complete int
			var args strings.Builder
			for _, ev := range evs {
				switch ev.Kind {
				case llm.EventToolCallDelta:
					deltas++
					if ev.Index == 0 {
						args.WriteString(ev.ToolCall.Arguments)
					}
				case llm.EventToolCall:
					complete++
				}
			}
			if args.String() != `{"id":1,"full":true}` || deltas < 4 || complete != 2 {
				t.Fatalf("deltas %d complete %d args %q", deltas, complete, args.String())
			}
			last := evs[len(evs)-1]
			if last.Kind != llm.EventDone || last.Usage == nil || last.FinishReason != llm.FinishToolCalls {
				t.Fatalf("last event %+v", last)
			}
			if format == "openai" {
				want := llm.Usage{InputTokens: 60, OutputTokens: 20, CacheReadTokens: 40, ReasoningTokens: 5}
				if resp.Usage != want {
					t.Fatalf("usage %+v want %+v", resp.Usage, want)
				}
			} else if resp.Usage.InputTokens != 100 || resp.Usage.OutputTokens != 20 || resp.Usage.CacheReadTokens != 40 {
				t.Fatalf("usage %+v", resp.Usage)
			}
			rq := srv.ChatRequests()[0]
			if !rq.Stream || rq.MaxTokens != 100 || len(rq.Tools) != 1 || rq.Tools[0] != "search" {
				t.Fatalf("request %+v", rq)
			}
			// The tool result went back linked to its call.
			var sawResult bool
			for _, m := range rq.Messages {
				if m.ToolCallID == "c0" && m.Content == "2 hits" {
					sawResult = true
				}
			}
			if !sawResult {
				t.Fatalf("tool result missing from %+v", rq.Messages)
			}
			if format == "anthropic" && (rq.System != "be brief" || rq.ToolChoice != `{"type":"any"}`) {
				t.Fatalf("system %q tool choice %s", rq.System, rq.ToolChoice)
			}
			if format == "openai" && rq.ToolChoice != `"required"` {
				t.Fatalf("tool choice %s", rq.ToolChoice)
			}
		})
	}
}

func TestCompleteAndLengthCutoff(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"openai", "anthropic"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			turn := llmtest.Turn{Text: []string{"cut he"}, Finish: "length"}
			var c llm.Client
			if format == "openai" {
				c = llm.NewOpenAI(openaiTarget(llmtest.New(t, turn, turn), "p"), nil)
			} else {
				c = llm.NewAnthropic(anthropicTarget(llmtest.NewAnthropic(t, turn, turn)), nil)
			}
			resp, err := c.Complete(context.Background(), convo)
			if err != nil || resp.Text != "cut he" || !resp.Truncated() {
				t.Fatalf("complete %+v %v", resp, err)
			}
			_, resp, err = collect(t, c, convo)
			if err != nil || !resp.Truncated() {
				t.Fatalf("stream %+v %v", resp, err)
			}
		})
	}
}

func TestClassification(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		turn llmtest.Turn
		want llm.Code
	}{
		{"429", llmtest.Turn{Status: 429, RetryAfter: "7"}, llm.CodeRateLimited},
		{"quota 429", llmtest.Fail(429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}`), llm.CodeBilling},
		{"402", llmtest.Fail(402, `{"error":{"message":"no credits"}}`), llm.CodeBilling},
		{"401", llmtest.Fail(401, `{"error":{"message":"Incorrect API key provided: sk-test-secret-key-123"}}`), llm.CodeAuth},
		{"403", llmtest.Fail(403, ""), llm.CodeAuth},
		{"context", llmtest.Fail(400, `{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}`), llm.CodeContextTooLarge},
		{"413", llmtest.Fail(413, "too big"), llm.CodeContextTooLarge},
		{"model 404", llmtest.Fail(404, `{"error":"model 'qwen9' not found"}`), llm.CodeModelUnavailable},
		{"model 400", llmtest.Fail(400, `{"error":{"message":"The model gpt-9 does not exist"}}`), llm.CodeModelUnavailable},
		{"bad request", llmtest.Fail(400, `{"error":{"message":"messages: invalid role"}}`), llm.CodeBadRequest},
		{"500", llmtest.Fail(500, ""), llm.CodeModelUnavailable},
		{"503", llmtest.Fail(503, "<html>down</html>"), llm.CodeModelUnavailable},
		{"529", llmtest.Fail(529, ""), llm.CodeRateLimited},
		{"504", llmtest.Fail(504, ""), llm.CodeTimeout},
		{"malformed", llmtest.Turn{Malformed: true}, llm.CodeUnknown},
		{"cut", llmtest.Cut("partial"), llm.CodeNetwork},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, tc.turn, tc.turn)
			c := llm.NewOpenAI(openaiTarget(srv, "p"), nil)
			var err error
			if tc.name != "cut" {
				_, err = c.Complete(context.Background(), convo)
				if got := llm.CodeOf(err); got != tc.want {
					t.Errorf("complete: code %q want %q (%v)", got, tc.want, err)
				}
			} else {
				srv.Push(tc.turn) // keep two turns for the stream call below
			}
			_, _, err = collect(t, c, convo)
			if got := llm.CodeOf(err); got != tc.want {
				t.Errorf("stream: code %q want %q (%v)", got, tc.want, err)
			}
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("error %T is not *llm.Error", err)
			}
			if le.Provider != "p" || le.Message == "" || strings.Contains(le.Body, "sk-test-secret") || len(le.Body) > llm.MaxErrorBody+3 {
				t.Errorf("error %+v", le)
			}
			if tc.name == "429" && le.RetryAfter != 7*time.Second {
				t.Errorf("retry after %v", le.RetryAfter)
			}
			if tc.name == "cut" && !le.Partial {
				t.Error("cut stream not marked partial")
			}
		})
	}
}

func TestTransportErrors(t *testing.T) {
	t.Parallel()
	// Nothing listens on this port once the server is closed.
	srv := llmtest.New(t)
	target := openaiTarget(srv, "gone")
	srv.Close()
	_, err := llm.NewOpenAI(target, nil).Complete(context.Background(), convo)
	if llm.CodeOf(err) != llm.CodeNetwork {
		t.Fatalf("refused: %v", err)
	}

	slow := llmtest.New(t, llmtest.Turn{Text: []string{"late"}, FirstByteDelay: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = llm.NewOpenAI(openaiTarget(slow, "slow"), nil).Complete(ctx, convo)
	if llm.CodeOf(err) != llm.CodeTimeout {
		t.Fatalf("deadline: %v", err)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	in := `{"error":"bad key sk-abcdef123456 for Bearer eyJhbGciOi.xyz api_key=hunter22 token: "abc" ` + strings.Repeat("A", 60) + `"} ` + strings.Repeat("x ", 1000)
	out := llm.Redact(in, "hunter22")
	for _, leak := range []string{"sk-abcdef", "eyJhbG", "hunter22", strings.Repeat("A", 60)} {
		if strings.Contains(out, leak) {
			t.Errorf("redacted text still contains %q: %s", leak, out)
		}
	}
	if len(out) > llm.MaxErrorBody+3 {
		t.Errorf("not bounded: %d bytes", len(out))
	}
}

// bodyRT answers every request with a fixed SSE body.
type bodyRT string

func (b bodyRT) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(string(b)))}, nil
}

// FuzzStreamParse feeds arbitrary provider stream bodies to both clients:
// they must never panic, and an error must be a classified *llm.Error.
func FuzzStreamParse(f *testing.F) {
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"x\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}\n\n")
	f.Add("event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n")
	f.Add("data: {\"error\":{\"message\":\"overloaded\"}}\n\n")
	f.Add(": comment\r\ndata: [DONE]\r\n\r\n")
	f.Fuzz(func(t *testing.T, body string) {
		hc := &http.Client{Transport: bodyRT(body)}
		tg := llm.Target{Provider: "f", BaseURL: "http://fuzz.invalid/v1", Model: "m"}
		for _, c := range []llm.Client{llm.NewOpenAI(tg, hc), llm.NewAnthropic(tg, hc)} {
			_, err := c.Stream(context.Background(), llm.Request{Tier: llm.Tier1}, func(llm.Event) error { return nil })
			var le *llm.Error
			if err != nil && !errors.As(err, &le) {
				t.Fatalf("unclassified error %T %v", err, err)
			}
		}
	})
}

// A connection lost after the finish reason arrived loses nothing the
// caller needs: the reply counts as complete.
func TestDropAfterFinishIsComplete(t *testing.T) {
	t.Parallel()
	oa := llmtest.New(t, llmtest.Turn{Text: []string{"done"}, DropAfter: 3})
	an := llmtest.NewAnthropic(t, llmtest.Turn{Text: []string{"done"}, DropAfter: 5})
	for _, c := range []llm.Client{llm.NewOpenAI(openaiTarget(oa, "p"), nil), llm.NewAnthropic(anthropicTarget(an), nil)} {
		_, resp, err := collect(t, c, convo)
		if err != nil || resp.Text != "done" || resp.FinishReason != llm.FinishStop {
			t.Fatalf("%+v %v", resp, err)
		}
	}
}

// Servers that omit tool-call indexes send each call whole in its own chunk.
func TestToolCallsWithoutIndex(t *testing.T) {
	t.Parallel()
	body := `data: {"choices":[{"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}

data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

`
	c := llm.NewOpenAI(llm.Target{Provider: "o", BaseURL: "http://x.invalid/v1"}, &http.Client{Transport: bodyRT(body)})
	_, resp, err := collect(t, c, convo)
	if err != nil || len(resp.ToolCalls) != 2 || resp.ToolCalls[0] != (llm.ToolCall{ID: "a", Name: "f", Arguments: `{"x":1}`}) || resp.ToolCalls[1].Name != "g" {
		t.Fatalf("%+v %v", resp.ToolCalls, err)
	}
}
