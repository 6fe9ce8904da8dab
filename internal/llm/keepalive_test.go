package llm_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// A server that drops a kept-alive connection when the next request comes
// on it (as llama-server does with one idle past its keep-alive timeout,
// racing the client's reuse): the call is sent again on a new connection
// and succeeds, for both wire formats, streamed or not.
func TestKeptAliveConnectionClosedByServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		server func(t *testing.T) *llmtest.Server
		client func(url string) llm.Client
	}{
		{"openai", func(t *testing.T) *llmtest.Server {
			return llmtest.New(t, llmtest.Turn{Text: []string{"one"}}, llmtest.Turn{Text: []string{"two"}}, llmtest.Turn{Text: []string{"three"}})
		}, func(url string) llm.Client {
			return llm.NewOpenAI(llm.Target{Provider: "p", Kind: llm.KindOpenAI, BaseURL: url, Model: "m"}, nil)
		}},
		{"anthropic", func(t *testing.T) *llmtest.Server {
			return llmtest.NewAnthropic(t, llmtest.Turn{Text: []string{"one"}}, llmtest.Turn{Text: []string{"two"}}, llmtest.Turn{Text: []string{"three"}})
		}, func(url string) llm.Client {
			return llm.NewAnthropic(llm.Target{Provider: "a", Kind: llm.KindAnthropic, BaseURL: url, Model: "m"}, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			upstream := tc.server(t)
			// In front of the scripted server: the second request on any
			// connection is read and the connection closed unanswered.
			var dropped atomic.Int32
			var mu sync.Mutex
			served := map[net.Conn]int{}
			type connKey struct{}
			front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c := r.Context().Value(connKey{}).(net.Conn)
				mu.Lock()
				served[c]++
				n := served[c]
				mu.Unlock()
				if n > 1 {
					dropped.Add(1)
					hj, _ := w.(http.Hijacker)
					conn, _, err := hj.Hijack()
					if err == nil {
						conn.Close()
					}
					return
				}
				req, _ := http.NewRequestWithContext(r.Context(), r.Method, upstream.URL+r.URL.Path[len("/v1"):], r.Body)
				req.Header = r.Header.Clone()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				defer resp.Body.Close()
				for k, v := range resp.Header {
					w.Header()[k] = v
				}
				w.WriteHeader(resp.StatusCode)
				buf := make([]byte, 32<<10)
				for {
					n, err := resp.Body.Read(buf)
					w.Write(buf[:n])
					if err != nil {
						return
					}
				}
			}))
			front.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }
			front.Start()
			t.Cleanup(front.Close)
			c := tc.client(front.URL + "/v1")
			ctx := context.Background()
			req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
			for i, want := range []string{"one", "two", "three"} {
				var resp llm.Response
				var err error
				if i == 1 {
					resp, err = c.Stream(ctx, req, func(llm.Event) error { return nil })
				} else {
					resp, err = c.Complete(ctx, req)
				}
				if err != nil || resp.Text != want {
					t.Fatalf("call %d: %q, %v; want %q", i+1, resp.Text, err, want)
				}
			}
			if dropped.Load() == 0 {
				t.Fatal("no kept-alive connection was reused, so none was dropped: the test proves nothing")
			}
		})
	}
}
