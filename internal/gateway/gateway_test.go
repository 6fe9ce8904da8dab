package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hestia-dev/hestia/internal/gateway"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/usage"
)

const token = "test-daemon-token"

type env struct {
	url    string // gateway base URL ending in /v1
	ledger *usage.Ledger
	a, b   *llmtest.Server // tier-3 targets, in order
}

// setup starts two scripted upstreams, a router over them recording into a
// real ledger, and the gateway behind a bearer check like the server's.
func setup(t *testing.T) *env {
	t.Helper()
	e := &env{a: llmtest.New(t), b: llmtest.New(t)}
	var err error
	e.ledger, err = usage.Open(context.Background(), filepath.Join(t.TempDir(), "usage.db"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ledger.Close() })
	target := func(s *llmtest.Server, name string) llm.Target {
		return llm.Target{Provider: name, Kind: llm.KindOpenAI, BaseURL: s.URL, Model: name + "-model"}
	}
	r, err := llm.NewRouter(llm.RouterConfig{
		Tiers:    map[llm.Tier][]llm.Target{llm.Tier3: {target(e.a, "a"), target(e.b, "b")}},
		Recorder: e.ledger,
	})
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Options{Chat: r, Embed: r, Tiers: r.Tiers, Rates: e.ledger.Rates})
	mux := http.NewServeMux()
	gw.Routes(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"error":{"message":"unauthorized","type":"auth"}}`, http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/v1"
	return e
}

func (e *env) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(e.url + "/"), option.WithAPIKey(token), option.WithMaxRetries(0)}, opts...)...)
}

var searchTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "mail_search",
	Description: openai.String("search mail"),
	Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
})

func (e *env) summary(t *testing.T) usage.Summary {
	t.Helper()
	s, err := e.ledger.Summary(context.Background(), usage.PeriodAll)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenAIGoNonStreaming(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.a.Push(llmtest.Turn{ToolCalls: []llmtest.ToolCall{llmtest.Call("c1", "mail_search", `{"q":"rent"}`), llmtest.Call("c2", "mail_search", `{"q":"gas"}`)}, Usage: &llmtest.Usage{Prompt: 50, Completion: 9, Cached: 20}})
	e.a.Push(llmtest.Text("Rent is due."))
	c := e.client(option.WithHeader(gateway.HeaderService, "mail-promoter"), option.WithHeader(gateway.HeaderAction, "triage"))
	ctx := context.Background()
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "tier-3",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("bills?")},
		Tools:    []openai.ChatCompletionToolUnionParam{searchTool},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "mail_search"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tc := e.a.ChatRequests()[0].ToolChoice; tc != `{"function":{"name":"mail_search"},"type":"function"}` {
		t.Fatalf("upstream tool_choice %s", tc)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 2 || ch.Message.ToolCalls[1].Function.Arguments != `{"q":"gas"}` || resp.Model != "tier-3" {
		t.Fatalf("response %+v", resp)
	}
	if resp.Usage.PromptTokens != 50 || resp.Usage.PromptTokensDetails.CachedTokens != 20 || resp.Usage.CompletionTokens != 9 {
		t.Fatalf("usage %+v", resp.Usage)
	}
	// Second turn sends the tool results back through the SDK's own types.
	params := openai.ChatCompletionNewParams{
		Model: "tier-3",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("bills?"), ch.Message.ToParam(),
			openai.ToolMessage("rent: 900", "c1"), openai.ToolMessage("gas: 40", "c2"),
		},
	}
	resp, err = c.Chat.Completions.New(ctx, params, option.WithHeader(gateway.HeaderAction, ""))
	if err != nil || resp.Choices[0].Message.Content != "Rent is due." {
		t.Fatalf("%+v %v", resp, err)
	}
	up := e.a.ChatRequests()[1]
	if len(up.Messages) != 4 || up.Messages[1].ToolCalls[0].ID != "c1" || up.Messages[3].ToolCallID != "c2" || up.Model != "a-model" {
		t.Fatalf("upstream saw %+v", up)
	}
	s := e.summary(t)
	if s.Totals.Requests != 2 || s.ByService[0].Key != "mail-promoter" {
		t.Fatalf("ledger %+v", s.ByService)
	}
	actions := map[string]int64{}
	for _, g := range s.ByAction {
		actions[g.Key] = g.Requests
	}
	if actions["triage"] != 1 || actions["unknown"] != 1 {
		t.Fatalf("actions %+v: missing label must be recorded as unknown", actions)
	}
}

func TestOpenAIGoStreamingAccumulates(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.a.Push(llmtest.Fail(503, "")) // falls through before any byte
	e.b.Push(llmtest.Turn{
		Reasoning: []string{"hmm"},
		Text:      []string{"Look", "ing…"},
		ToolCalls: []llmtest.ToolCall{llmtest.Call("x1", "mail_search", `{"q":"a long query"}`), llmtest.Call("x2", "mail_search", `{"q":"b"}`)},
		ArgChunks: 4,
		Usage:     &llmtest.Usage{Prompt: 30, Completion: 12},
	})
	c := e.client()
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "tier-3",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")},
		Tools:         []openai.ChatCompletionToolUnionParam{searchTool},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithHeader(gateway.HeaderService, "agent"))
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("accumulator rejected chunk %s", stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	m := acc.Choices[0].Message
	if m.Content != "Looking…" || len(m.ToolCalls) != 2 || m.ToolCalls[0].ID != "x1" || m.ToolCalls[0].Function.Name != "mail_search" ||
		m.ToolCalls[0].Function.Arguments != `{"q":"a long query"}` || m.ToolCalls[1].Function.Arguments != `{"q":"b"}` {
		t.Fatalf("accumulated %+v", m)
	}
	if acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.PromptTokens != 30 || acc.Usage.CompletionTokens != 12 {
		t.Fatalf("finish %q usage %+v", acc.Choices[0].FinishReason, acc.Usage)
	}
	recent := e.summary(t).Recent[0]
	if recent.Provider != "b" || recent.Service != "agent" || recent.Outcome != "ok" {
		t.Fatalf("ledger %+v", recent)
	}
}

func TestStreamFailureAfterFirstByte(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.a.Push(llmtest.Cut("partial ans"))
	c := e.client()
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "tier-3", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")},
	})
	var text strings.Builder
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	if stream.Err() == nil || !strings.Contains(stream.Err().Error(), "network") {
		t.Fatalf("stream error %v", stream.Err())
	}
	if text.String() != "partial ans" || len(e.b.ChatRequests()) != 0 {
		t.Fatalf("client saw %q; b asked %d times (must not switch after first byte)", text.String(), len(e.b.ChatRequests()))
	}
	if s := e.summary(t); s.Recent[0].Outcome != "network" {
		t.Fatalf("ledger %+v", s.Recent[0])
	}
}

func TestErrorsAndValidation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.a.Push(llmtest.Turn{Status: 429, RetryAfter: "5"})
	e.b.Push(llmtest.Turn{Status: 429, RetryAfter: "9"})
	post := func(body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", e.url+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := post(`{"model":"tier-3","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "9" || !strings.Contains(body, `"code":"rate_limited"`) {
		t.Fatalf("all targets rate limited: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, `not a Hestia chat tier`},
		{`{"model":"tier-6","messages":[{"role":"user","content":"x"}]}`, `No model is configured for tier-6`},
		{`{"model":"tier-3","messages":[]}`, `messages must not be empty`},
		{`{"model":"tier-3","messages":[{"role":"wizard","content":"x"}]}`, `messages[0]: role \"wizard\"`},
		{`{"model":"tier-3","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, `content part type \"image_url\"`},
		{`{"model":"tier-3","messages":[{"role":"tool","content":"x"}]}`, `needs tool_call_id`},
		{`{"model":"tier-3","n":2,"messages":[{"role":"user","content":"x"}]}`, `n must be 1`},
		{`{"model":"tier-3","tool_choice":"always","messages":[{"role":"user","content":"x"}]}`, `tool_choice \"always\"`},
		{`{"model":`, `not valid JSON`},
		{`{"model":"tier-3","messages":"hi"}`, `field \"messages\" must be`},
	} {
		resp, body := post(tc.body)
		if resp.StatusCode < 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s → %d %s, want %q", tc.body, resp.StatusCode, body, tc.want)
		}
	}
	// The SDK surfaces the gateway's error as an *openai.Error.
	c := e.client()
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "nope", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("sdk error %v", err)
	}
}

func TestEmbeddingsModelsRates(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(option.WithHeader(gateway.HeaderService, "documents"), option.WithHeader(gateway.HeaderAction, "search-embed"))
	ctx := context.Background()
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		resp, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: "local-embed", EncodingFormat: format,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"invoice march", "flight berlin"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Data) != 2 || len(resp.Data[0].Embedding) != llm.LocalEmbedDim {
			t.Fatalf("%s: %d vectors of %d", format, len(resp.Data), len(resp.Data[0].Embedding))
		}
		want := llm.LocalVector("flight berlin")
		for i, v := range resp.Data[1].Embedding {
			if float32(v) != want[i] {
				t.Fatalf("%s: vector differs from the local embedder at %d", format, i)
			}
		}
	}
	if _, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tier-3", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}}); err == nil {
		t.Fatal("chat tier accepted for embeddings")
	}
	models, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "tier-3,local-embed" {
		t.Fatalf("models %v", ids)
	}
	req, _ := http.NewRequest("GET", e.url+"/rates", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rates struct {
		Currency string       `json:"currency"`
		Rates    []usage.Rate `json:"rates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rates); err != nil || rates.Currency != "USD" || len(rates.Rates) == 0 {
		t.Fatalf("rates %+v %v", rates, err)
	}
	// The offline embedder's calls are local work: counted apart from
	// billable requests, still attributed in the recent list.
	if s := e.summary(t); s.Local.Requests != 2 || s.Totals.Requests != 0 || len(s.Recent) == 0 || s.Recent[0].Service != "documents" {
		t.Fatalf("embedding usage: local %+v totals %+v recent %+v", s.Local, s.Totals, s.Recent)
	}
}

// An Anthropic target behind the gateway looks like any OpenAI model to an
// OpenAI client, streamed parallel tool calls included.
func TestAnthropicTargetThroughGateway(t *testing.T) {
	t.Parallel()
	up := llmtest.NewAnthropic(t, llmtest.Turn{
		Text:      []string{"Checking."},
		ToolCalls: []llmtest.ToolCall{llmtest.Call("toolu_1", "mail_search", `{"q":"rent"}`), llmtest.Call("toolu_2", "mail_search", `{"q":"gas bill"}`)},
		ArgChunks: 3,
		Usage:     &llmtest.Usage{Prompt: 40, Completion: 10, Cached: 100, CacheWrite: 5},
	})
	r, err := llm.NewRouter(llm.RouterConfig{Tiers: map[llm.Tier][]llm.Target{llm.Tier6: {{Provider: "claude", Kind: llm.KindAnthropic, BaseURL: up.URL, APIKey: "k", Model: "claude-x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	gateway.New(gateway.Options{Chat: r, Embed: r, Tiers: r.Tiers}).Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "tier-6",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("sys"), openai.UserMessage("bills")},
		Tools:         []openai.ChatCompletionToolUnionParam{searchTool},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	m := acc.Choices[0].Message
	if m.Content != "Checking." || len(m.ToolCalls) != 2 || m.ToolCalls[0].ID != "toolu_1" || m.ToolCalls[1].Function.Arguments != `{"q":"gas bill"}` || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("accumulated %+v finish %q", m, acc.Choices[0].FinishReason)
	}
	// OpenAI counts cached and cache-write tokens inside prompt_tokens.
	if acc.Usage.PromptTokens != 145 || acc.Usage.PromptTokensDetails.CachedTokens != 100 || acc.Usage.CompletionTokens != 10 {
		t.Fatalf("usage %+v", acc.Usage)
	}
	if rq := up.ChatRequests()[0]; rq.System != "sys" || rq.Header.Get("x-api-key") != "k" || rq.Model != "claude-x" {
		t.Fatalf("upstream %+v", rq)
	}
}

// A client that hangs up mid-stream cancels the upstream call; the ledger
// records "canceled", not a provider failure, and nothing falls through.
func TestClientDisconnectCancels(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.a.Push(llmtest.Turn{Text: []string{"a", "b", "c", "d"}, ChunkDelay: 200 * time.Millisecond})
	req, _ := http.NewRequest("POST", e.url+"/chat/completions", strings.NewReader(`{"model":"tier-3","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := e.summary(t)
		if len(s.Recent) == 1 {
			if s.Recent[0].Outcome != "canceled" || s.Totals.Errors != 0 {
				t.Fatalf("recorded %+v", s.Recent[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no usage row after the client hung up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(e.b.ChatRequests()) != 0 {
		t.Fatal("fell through to b after the client hung up")
	}
}
