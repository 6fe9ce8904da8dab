package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/gateway"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/usage"
)

const benchCompletion = `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, this is a short answer."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`

const benchStream = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
	"data: {\"choices\":[{\"delta\":{\"content\":\"Hello \"}}]}\n\n" +
	"data: {\"choices\":[{\"delta\":{\"content\":\"there.\"}}]}\n\n" +
	"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
	"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":2}}\n\n" +
	"data: [DONE]\n\n"

const benchBody = `{"model":"%s","messages":[{"role":"system","content":"You are Hestia."},{"role":"user","content":"Say hello in one short sentence, please."}]}`

// BenchmarkGatewayOverhead measures what the gateway adds per request over
// calling a local upstream directly: request decoding, tier routing, the
// provider client, the usage-ledger write to a real SQLite file and the
// response encoding. Direct and gateway requests alternate so both see the
// same machine load; the reported p50-overhead-µs is p50(gateway) −
// p50(direct).
func BenchmarkGatewayOverhead(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "complete"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) { benchOverhead(b, stream) })
	}
}

func benchOverhead(b *testing.B, stream bool) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, benchStream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchCompletion)
	}))
	defer upstream.Close()
	ledger, err := usage.Open(context.Background(), filepath.Join(b.TempDir(), "usage.db"), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ledger.Close()
	r, err := llm.NewRouter(llm.RouterConfig{
		Tiers:    map[llm.Tier][]llm.Target{llm.Tier3: {{Provider: "local", Kind: llm.KindOpenAI, BaseURL: upstream.URL + "/v1", Model: "m"}}},
		Recorder: ledger,
	})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	gateway.New(gateway.Options{Chat: r, Embed: r, Tiers: r.Tiers}).Routes(mux)
	gw := httptest.NewServer(mux)
	defer gw.Close()

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	do := func(url, model string) time.Duration {
		body := []byte(fmt.Sprintf(benchBody, model))
		if stream {
			body = bytes.Replace(body, []byte(`{"model"`), []byte(`{"stream":true,"model"`), 1)
		}
		start := time.Now()
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: status %d", url, resp.StatusCode)
		}
		return time.Since(start)
	}
	direct := make([]time.Duration, 0, b.N)
	via := make([]time.Duration, 0, b.N)
	// Warm connections and SQLite.
	for range 20 {
		do(upstream.URL+"/v1/chat/completions", "m")
		do(gw.URL+"/v1/chat/completions", "tier-3")
	}
	b.ResetTimer()
	for range b.N {
		direct = append(direct, do(upstream.URL+"/v1/chat/completions", "m"))
		via = append(via, do(gw.URL+"/v1/chat/completions", "tier-3"))
	}
	b.StopTimer()
	p50 := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	pd, pg := p50(direct), p50(via)
	b.ReportMetric(float64(pd.Microseconds()), "p50-direct-µs")
	b.ReportMetric(float64(pg.Microseconds()), "p50-gateway-µs")
	b.ReportMetric(float64((pg - pd).Microseconds()), "p50-overhead-µs")
}
