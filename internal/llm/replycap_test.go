package llm_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm"
)

// A broken or hostile server must not make a client hold an arbitrarily
// large reply in memory: past MaxReplyBytes the reply is refused as
// malformed.
func TestOversizedRepliesAreRefused(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("a", llm.MaxReplyBytes+1024)
	var sse strings.Builder
	chunk := strings.Repeat("b", 64<<10)
	for sse.Len() < llm.MaxReplyBytes+(1<<20) {
		fmt.Fprintf(&sse, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", chunk)
	}
	sse.WriteString("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	var anSSE strings.Builder
	anSSE.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\n")
	for anSSE.Len() < llm.MaxReplyBytes+(1<<20) {
		fmt.Fprintf(&anSSE, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", chunk)
	}
	anSSE.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	oaDoc := `{"choices":[{"message":{"content":"` + huge + `"},"finish_reason":"stop"}]}`
	anDoc := `{"content":[{"type":"text","text":"` + huge + `"}],"stop_reason":"end_turn","usage":{}}`
	target := llm.Target{Provider: "o", BaseURL: "http://x.invalid/v1", Model: "m"}
	cases := []struct {
		name string
		run  func() (llm.Response, error)
	}{
		{"openai complete", func() (llm.Response, error) {
			return llm.NewOpenAI(target, &http.Client{Transport: jsonRT(oaDoc)}).Complete(t.Context(), convo)
		}},
		{"openai stream", func() (llm.Response, error) {
			_, r, err := collect(t, llm.NewOpenAI(target, &http.Client{Transport: bodyRT(sse.String())}), convo)
			return r, err
		}},
		{"openai stream answered with json", func() (llm.Response, error) {
			_, r, err := collect(t, llm.NewOpenAI(target, &http.Client{Transport: jsonRT(oaDoc)}), convo)
			return r, err
		}},
		{"anthropic complete", func() (llm.Response, error) {
			return llm.NewAnthropic(target, &http.Client{Transport: jsonRT(anDoc)}).Complete(t.Context(), convo)
		}},
		{"anthropic stream", func() (llm.Response, error) {
			_, r, err := collect(t, llm.NewAnthropic(target, &http.Client{Transport: bodyRT(anSSE.String())}), convo)
			return r, err
		}},
	}
	for _, c := range cases {
		resp, err := c.run()
		var le *llm.Error
		if !errors.As(err, &le) || le.Code != llm.CodeUnknown || !strings.Contains(le.Error(), "malformed") {
			t.Errorf("%s: err = %v, text %d bytes; want a malformed-reply error", c.name, err, len(resp.Text))
		}
		if len(resp.Text) > llm.MaxReplyBytes {
			t.Errorf("%s: kept %d bytes of text", c.name, len(resp.Text))
		}
	}
}
