package llm_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm"
)

// jsonRT answers every request with a fixed chat.completion document.
type jsonRT string

func (b jsonRT) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(string(b)))}, nil
}

// Some local servers send tool calls without ids. The ids filled in must be
// unique across replies, not "call_0" every time: the transcript, the
// events and approvals all name a call by its id.
func TestMissingCallIDsAreUniqueAcrossReplies(t *testing.T) {
	t.Parallel()
	stream := `data: {"choices":[{"delta":{"tool_calls":[{"index":0,"type":"function","function":{"name":"f","arguments":"{}"}},{"index":1,"type":"function","function":{"name":"g","arguments":"{}"}}]}}]}

data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

`
	doc := `{"choices":[{"message":{"content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
	streamC := llm.NewOpenAI(llm.Target{Provider: "o", BaseURL: "http://x.invalid/v1"}, &http.Client{Transport: bodyRT(stream)})
	docC := llm.NewOpenAI(llm.Target{Provider: "o", BaseURL: "http://x.invalid/v1"}, &http.Client{Transport: jsonRT(doc)})
	seen := map[string]bool{}
	add := func(resp llm.Response, err error, want int) {
		t.Helper()
		if err != nil || len(resp.ToolCalls) != want {
			t.Fatalf("%+v %v", resp.ToolCalls, err)
		}
		for _, tc := range resp.ToolCalls {
			if tc.ID == "" || seen[tc.ID] {
				t.Fatalf("call id %q is empty or was already used (seen %v)", tc.ID, seen)
			}
			seen[tc.ID] = true
		}
	}
	for range 2 {
		_, resp, err := collect(t, streamC, convo)
		add(resp, err, 2)
		resp, err = docC.Complete(t.Context(), convo)
		add(resp, err, 1)
		_, resp, err = collect(t, docC, convo) // a server ignoring stream:true
		add(resp, err, 1)
	}
}
