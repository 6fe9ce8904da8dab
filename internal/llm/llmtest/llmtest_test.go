package llmtest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// dataLines returns the data: payloads of an SSE body and the read error.
func dataLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, v)
		}
	}
	return out, sc.Err()
}

func TestStreamTextAndToolCalls(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Turn{
		Text:      []string{"Hel", "lo"},
		ToolCalls: []llmtest.ToolCall{llmtest.Call("c1", "a", `{"x":1}`), llmtest.Call("c2", "b", `{}`)},
	})
	resp := post(t, srv.URL+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}}]}`)
	lines, err := dataLines(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if lines[len(lines)-1] != "[DONE]" {
		t.Fatalf("last line %q, want [DONE]", lines[len(lines)-1])
	}
	var text, args strings.Builder
	var finish string
	indexes := map[float64]bool{}
	for _, l := range lines[:len(lines)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    float64 `json:"index"`
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("chunk %q: %v", l, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				indexes[tc.Index] = true
				args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text.String() != "Hello" || args.String() != `{"x":1}{}` || finish != "tool_calls" || len(indexes) != 2 {
		t.Fatalf("text %q args %q finish %q indexes %v", text.String(), args.String(), finish, indexes)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Model != "m" || !reqs[0].Stream || reqs[0].Messages[0].Content != "hi" || reqs[0].Tools[0] != "a" {
		t.Fatalf("recorded %+v", reqs)
	}
}

func TestFailuresAndCut(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t,
		llmtest.Turn{Status: 429, RetryAfter: "3"},
		llmtest.Cut("par"),
		llmtest.Turn{Malformed: true},
		llmtest.Turn{Text: []string{"late"}, FirstByteDelay: 50 * time.Millisecond},
	)
	resp := post(t, srv.URL+"/chat/completions", `{"model":"m"}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("status %d retry-after %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp = post(t, srv.URL+"/chat/completions", `{"model":"m","stream":true}`)
	lines, err := dataLines(resp.Body)
	if err == nil || len(lines) != 2 {
		t.Fatalf("cut stream: lines %q err %v, want 2 lines and a read error", lines, err)
	}
	resp = post(t, srv.URL+"/chat/completions", `{"model":"m"}`)
	var v any
	if err := json.NewDecoder(resp.Body).Decode(&v); err == nil {
		t.Fatal("malformed turn decoded cleanly")
	}
	start := time.Now()
	resp = post(t, srv.URL+"/chat/completions", `{"model":"m"}`)
	if d := time.Since(start); d < 50*time.Millisecond || resp.StatusCode != 200 {
		t.Fatalf("slow turn answered after %v with %d", d, resp.StatusCode)
	}
	if srv.Pending() != 0 {
		t.Fatalf("pending %d", srv.Pending())
	}
}

func TestEmbeddingsAndModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	srv.EmbedReject = "BAD"
	resp := post(t, srv.URL+"/embeddings", `{"model":"e","input":["a","b"]}`)
	var out struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Data) != 2 || len(out.Data[0].Embedding) != 8 {
		t.Fatalf("embeddings %+v %v", out, err)
	}
	if resp := post(t, srv.URL+"/embeddings", `{"model":"e","input":["ok","BAD"]}`); resp.StatusCode != 400 {
		t.Fatalf("rejected batch got %d", resp.StatusCode)
	}
	r, err := http.Get(srv.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if !strings.Contains(string(b), "llmtest-model") {
		t.Fatalf("models %s", b)
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, llmtest.Turn{Text: []string{"a", "b"}, ToolCalls: []llmtest.ToolCall{llmtest.Call("t1", "f", `{"k":2}`)}, Finish: "length"})
	resp := post(t, srv.URL+"/messages", `{"model":"claude","stream":true,"max_tokens":5,"system":"sys","messages":[{"role":"user","content":[{"type":"text","text":"q"}]}]}`)
	lines, err := dataLines(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{`"text_delta"`, `"input_json_delta"`, `"stop_reason":"max_tokens"`, `"message_stop"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("stream lacks %s", want)
		}
	}
	rq := srv.Requests()[0]
	if rq.System != "sys" || rq.Messages[0].Content != "q" || rq.MaxTokens != 5 {
		t.Fatalf("recorded %+v", rq)
	}
}
