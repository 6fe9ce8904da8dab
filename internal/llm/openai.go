package llm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// OpenAI is a client for one OpenAI-compatible target (OpenAI, Ollama,
// OpenRouter, llama.cpp server, vLLM).
//
// It is a small hand-written client rather than openai-go because the
// servers it talks to disagree on the details the SDK hides: reasoning
// arrives as reasoning_content (DeepSeek, vLLM, llama.cpp) or reasoning
// (Ollama, OpenRouter), cache hits as prompt_tokens_details or
// prompt_cache_hit_tokens, and some end a stream without [DONE]. The router
// also needs to know exactly when the first byte of output was handed on,
// and error bodies must be read bounded. openai-go is used in the gateway
// tests as an independent client.
type OpenAI struct {
	t  Target
	hc *http.Client
}

// NewOpenAI returns a client for t; hc nil uses NewHTTPClient().
func NewOpenAI(t Target, hc *http.Client) *OpenAI {
	if hc == nil {
		hc = NewHTTPClient()
	}
	t.BaseURL = strings.TrimRight(t.BaseURL, "/")
	if t.Kind == "" {
		t.Kind = KindOpenAI
	}
	return &OpenAI{t: t, hc: hc}
}

func (c *OpenAI) target() Target { return c.t }

type oaToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaMsg struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Name       string       `json:"name,omitempty"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaReq struct {
	Model    string   `json:"model"`
	Messages []oaMsg  `json:"messages"`
	Tools    []oaTool `json:"tools,omitempty"`
	// ToolChoice is a string ("auto", "none", "required") or an object
	// naming one function.
	ToolChoice any `json:"tool_choice,omitempty"`
	MaxTokens  int `json:"max_tokens,omitempty"`
	// MaxCompletionTokens replaces max_tokens on api.openai.com, whose
	// newer models reject max_tokens; other servers only know max_tokens.
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	Temperature         *float64 `json:"temperature,omitempty"`
	Stream              bool     `json:"stream,omitempty"`
	// StreamOpts asks for the usage chunk at the end of a stream.
	StreamOpts *oaStreamOpts `json:"stream_options,omitempty"`
	// Options carries num_ctx to Ollama, which otherwise cuts every prompt
	// at its small default window without saying so.
	Options *oaOptions `json:"options,omitempty"`
}

type oaOptions struct {
	NumCtx int `json:"num_ctx,omitempty"`
}

type oaStreamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func (c *OpenAI) body(req Request, stream bool) ([]byte, error) {
	out := oaReq{Model: c.t.Model, MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stream: stream}
	if out.MaxTokens == 0 {
		out.MaxTokens = c.t.MaxTokens
	}
	if strings.Contains(c.t.BaseURL, "://api.openai.com") {
		out.MaxCompletionTokens, out.MaxTokens = out.MaxTokens, 0
	}
	if stream {
		out.StreamOpts = &oaStreamOpts{IncludeUsage: true}
	}
	if req.numCtx > 0 {
		out.Options = &oaOptions{NumCtx: req.numCtx}
	}
	for _, m := range req.Messages {
		content := m.Content
		om := oaMsg{Role: string(m.Role), Content: &content, ToolCallID: m.ToolCallID}
		if m.Role == RoleTool {
			om.Name = m.Name
		}
		if len(m.ToolCalls) > 0 {
			if content == "" {
				om.Content = nil
			}
			for _, tc := range m.ToolCalls {
				otc := oaToolCall{ID: tc.ID, Type: "function"}
				otc.Function.Name, otc.Function.Arguments = tc.Name, tc.Arguments
				if otc.Function.Arguments == "" {
					otc.Function.Arguments = "{}"
				}
				om.ToolCalls = append(om.ToolCalls, otc)
			}
		}
		out.Messages = append(out.Messages, om)
	}
	switch req.ToolChoice {
	case "":
	case "auto", "none", "required":
		out.ToolChoice = req.ToolChoice
	default:
		out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice}}
	}
	for _, t := range req.Tools {
		ot := oaTool{Type: "function"}
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = t.Name, t.Description, t.Parameters
		if len(ot.Function.Parameters) == 0 {
			ot.Function.Parameters = emptySchema
		}
		out.Tools = append(out.Tools, ot)
	}
	return json.Marshal(out)
}

// replayable lets the transport send a request again on a new connection
// when the kept-alive one it picked turns out closed by the server before
// any answer (llama-server closes idle connections after 5 s, and a turn
// that raced that close failed with "the model provider failed to
// answer"). net/http retries only requests it holds idempotent; an
// Idempotency-Key entry with no value marks one without sending a header.
// A model call is safe to send twice: it changes nothing at the provider.
func replayable(r *http.Request) { r.Header["Idempotency-Key"] = nil }

// post sends body to path and returns the response when it is 2xx, or a
// classified *Error.
func (c *OpenAI) post(ctx context.Context, path string, body []byte, stream bool) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.t.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, c.fill(&Error{Code: CodeBadRequest, Message: "The model target's base URL is invalid.", Err: err})
	}
	hr.Header.Set("Content-Type", "application/json")
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	if c.t.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.t.APIKey)
	}
	replayable(hr)
	resp, err := c.hc.Do(hr)
	if err != nil {
		return nil, c.fill(classifyTransport(ctx, err))
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		raw := readBoundedBody(resp.Body)
		return nil, c.fill(classifyHTTP(resp.StatusCode, resp.Header, Redact(raw, c.t.APIKey)))
	}
	return resp, nil
}

// fill stamps the target onto e.
func (c *OpenAI) fill(e *Error) *Error {
	e.Provider, e.Model = c.t.Provider, c.t.Model
	if e.Body != "" {
		e.Body = Redact(e.Body, c.t.APIKey)
	}
	return e
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptCacheHit      int `json:"prompt_cache_hit_tokens"` // DeepSeek
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *oaUsage) usage() Usage {
	cached := u.PromptCacheHit
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > cached {
		cached = u.PromptTokensDetails.CachedTokens
	}
	out := Usage{InputTokens: u.PromptTokens - cached, OutputTokens: u.CompletionTokens, CacheReadTokens: cached}
	if out.InputTokens < 0 {
		out.InputTokens = 0
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

type oaError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

func finishOf(s string) FinishReason {
	switch s {
	case "stop", "end_turn", "eos":
		return FinishStop
	case "length", "max_tokens":
		return FinishLength
	case "tool_calls", "function_call", "tool_use":
		return FinishToolCalls
	case "content_filter":
		return FinishFiltered
	}
	return FinishReason(s)
}

// Complete implements Client.
func (c *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	resp := Response{Provider: c.t.Provider, Model: c.t.Model, Tier: req.Tier, Attempts: 1}
	body, err := c.body(req, false)
	if err != nil {
		return resp, c.fill(&Error{Code: CodeBadRequest, Message: "The request could not be encoded.", Err: err})
	}
	hr, err := c.post(ctx, "/chat/completions", body, false)
	if err != nil {
		return resp, err
	}
	defer hr.Body.Close()
	if err := c.decodeCompletion(ctx, capReply(hr.Body), &resp); err != nil {
		return resp, err
	}
	resp.Duration = time.Since(start)
	return resp, nil
}

// decodeCompletion reads one chat.completion document into resp.
func (c *OpenAI) decodeCompletion(ctx context.Context, body io.Reader, resp *Response) error {
	var out struct {
		Choices []struct {
			Message struct {
				Content          *string      `json:"content"`
				ReasoningContent string       `json:"reasoning_content"`
				Reasoning        string       `json:"reasoning"`
				ToolCalls        []oaToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *oaUsage `json:"usage"`
		Error *oaError `json:"error"`
	}
	if err := json.NewDecoder(body).Decode(&out); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		var le *Error
		switch {
		case errors.As(err, &le): // the reply size cap
			return c.fill(le)
		case ctx.Err() != nil:
			return c.fill(classifyTransport(ctx, err))
		case errors.As(err, &se), errors.As(err, &te), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			// A truncated document or a cut connection: the reply is
			// unusable either way.
			return c.fill(malformed(err))
		}
		return c.fill(classifyTransport(ctx, err))
	}
	if out.Error != nil {
		return c.fill(classifyHTTP(http.StatusInternalServerError, nil, Redact(out.Error.Message)))
	}
	if len(out.Choices) == 0 {
		return c.fill(malformed(errors.New("reply has no choices")))
	}
	ch := out.Choices[0]
	if ch.Message.Content != nil {
		resp.Text = *ch.Message.Content
	}
	resp.Reasoning = ch.Message.ReasoningContent + ch.Message.Reasoning
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = missingCallID(i)
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	resp.FinishReason = finishOf(ch.FinishReason)
	if out.Usage != nil {
		resp.Usage = out.Usage.usage()
	}
	return nil
}

type oaChunk struct {
	Choices []struct {
		Delta struct {
			Content          string       `json:"content"`
			ReasoningContent string       `json:"reasoning_content"`
			Reasoning        string       `json:"reasoning"`
			ToolCalls        []oaToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage `json:"usage"`
	Error *oaError `json:"error"`
}

// maxSSELine bounds one SSE line; a provider sending more without a
// newline is broken.
const maxSSELine = 8 << 20

// sseReader yields the data payloads of an SSE stream.
type sseReader struct {
	r *bufio.Reader
}

// next returns the next data payload; io.EOF at a clean end of body.
func (s *sseReader) next() ([]byte, error) {
	var data []byte
	for {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Long line: accumulate.
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = s.r.ReadSlice('\n')
				buf = append(buf, line...)
				if len(buf) > maxSSELine {
					return nil, malformed(errors.New("stream line too long"))
				}
			}
			line = buf
		}
		if err != nil && len(line) == 0 {
			if errors.Is(err, io.EOF) && data != nil {
				return data, nil
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data != nil {
				return data, nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if data == nil {
				data = append([]byte{}, v...)
			} else {
				data = append(append(data, '\n'), v...)
			}
		}
		// event:, id:, retry: and comments are ignored.
		if err != nil {
			if data != nil {
				return data, nil
			}
			return nil, err
		}
	}
}

// toolAssembler joins streamed tool-call fragments into complete calls.
type toolAssembler struct {
	calls map[int]*ToolCall
	order []int
	byID  map[string]int
}

func (a *toolAssembler) add(pos int, d oaToolCall) (int, *ToolCall) {
	if a.calls == nil {
		a.calls, a.byID = map[int]*ToolCall{}, map[string]int{}
	}
	idx := pos
	switch {
	case d.Index != nil:
		idx = *d.Index
	case d.ID != "":
		// Servers that omit index (some Ollama versions) send each call
		// whole: a new id is a new call, a known id continues its call.
		if known, ok := a.byID[d.ID]; ok {
			idx = known
		} else if tc, ok := a.calls[idx]; ok && tc.ID != "" && tc.ID != d.ID {
			idx = len(a.order)
			for a.calls[idx] != nil {
				idx++
			}
		}
	}
	if d.ID != "" {
		a.byID[d.ID] = idx
	}
	tc, ok := a.calls[idx]
	if !ok {
		tc = &ToolCall{}
		a.calls[idx] = tc
		a.order = append(a.order, idx)
	}
	if d.ID != "" {
		tc.ID = d.ID
	}
	if d.Function.Name != "" {
		tc.Name = d.Function.Name
	}
	tc.Arguments += d.Function.Arguments
	return idx, &ToolCall{ID: tc.ID, Name: tc.Name, Arguments: d.Function.Arguments}
}

// done returns the complete calls ordered by index, filling missing IDs.
func (a *toolAssembler) done() ([]int, []ToolCall) {
	idx := append([]int(nil), a.order...)
	sort.Ints(idx)
	out := make([]ToolCall, 0, len(idx))
	for _, i := range idx {
		tc := *a.calls[i]
		if tc.ID == "" {
			tc.ID = missingCallID(i)
		}
		out = append(out, tc)
	}
	return idx, out
}

// missingCallID names the i-th call of a reply whose server sent no id. The
// random part keeps it unique in the chat: "call_0" in every reply would
// make the transcript, events and approvals of different calls collide.
func missingCallID(i int) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("call_%d_%s", i, hex.EncodeToString(b[:]))
}

// Stream implements Client.
func (c *OpenAI) Stream(ctx context.Context, req Request, fn func(Event) error) (Response, error) {
	start := time.Now()
	resp := Response{Provider: c.t.Provider, Model: c.t.Model, Tier: req.Tier, Attempts: 1}
	body, err := c.body(req, true)
	if err != nil {
		return resp, c.fill(&Error{Code: CodeBadRequest, Message: "The request could not be encoded.", Err: err})
	}
	hr, err := c.post(ctx, "/chat/completions", body, true)
	if err != nil {
		return resp, err
	}
	defer hr.Body.Close()

	if ct := hr.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// Some servers ignore stream:true; replay the whole reply as events.
		return c.replayJSON(ctx, capReply(hr.Body), resp, start, fn)
	}

	var (
		text, reasoning strings.Builder
		tools           toolAssembler
		finished        bool
		sawDone         bool
	)
	sr := &sseReader{r: bufio.NewReaderSize(capReply(hr.Body), 64<<10)}
	partial := func() {
		resp.Text, resp.Reasoning = text.String(), reasoning.String()
		_, resp.ToolCalls = tools.done()
		resp.Duration = time.Since(start)
	}
	fail := func(e *Error) (Response, error) {
		partial()
		e.Partial = text.Len() > 0 || reasoning.Len() > 0 || len(tools.order) > 0
		return resp, c.fill(e)
	}
	for {
		data, err := sr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			if finished && !errors.As(err, new(*Error)) {
				// The reply is complete; only the trailing usage chunk or
				// [DONE] was lost with the connection.
				break
			}
			var le *Error
			if errors.As(err, &le) {
				return fail(le)
			}
			return fail(classifyTransport(ctx, err))
		}
		if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			sawDone = true
			break
		}
		var ch oaChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return fail(malformed(fmt.Errorf("decoding stream chunk: %w", err)))
		}
		if ch.Error != nil {
			e := classifyHTTP(http.StatusInternalServerError, nil, Redact(ch.Error.Message))
			return fail(e)
		}
		if ch.Usage != nil {
			resp.Usage = ch.Usage.usage()
		}
		for _, choice := range ch.Choices {
			d := choice.Delta
			if r := d.ReasoningContent + d.Reasoning; r != "" {
				reasoning.WriteString(r)
				if err := fn(Event{Kind: EventReasoning, Text: r}); err != nil {
					partial()
					return resp, err
				}
			}
			if d.Content != "" {
				text.WriteString(d.Content)
				if err := fn(Event{Kind: EventText, Text: d.Content}); err != nil {
					partial()
					return resp, err
				}
			}
			for pos, tcd := range d.ToolCalls {
				idx, frag := tools.add(pos, tcd)
				if err := fn(Event{Kind: EventToolCallDelta, Index: idx, ToolCall: frag}); err != nil {
					partial()
					return resp, err
				}
			}
			if choice.FinishReason != nil && *choice.FinishReason != "" {
				resp.FinishReason = finishOf(*choice.FinishReason)
				finished = true
			}
		}
	}
	if !finished && !sawDone {
		return fail(&Error{Code: CodeNetwork, Message: "The model's reply stream ended before it was complete.", Err: io.ErrUnexpectedEOF})
	}
	partial()
	if err := emitEnd(fn, &resp); err != nil {
		return resp, err
	}
	return resp, nil
}

// emitEnd delivers the complete tool calls and the done event.
func emitEnd(fn func(Event) error, resp *Response) error {
	if len(resp.ToolCalls) > 0 && resp.FinishReason == FinishStop {
		// Some servers say "stop" while calling tools.
		resp.FinishReason = FinishToolCalls
	}
	for i := range resp.ToolCalls {
		tc := resp.ToolCalls[i]
		if err := fn(Event{Kind: EventToolCall, Index: i, ToolCall: &tc}); err != nil {
			return err
		}
	}
	u := resp.Usage
	return fn(Event{Kind: EventDone, FinishReason: resp.FinishReason, Usage: &u})
}

// replayJSON handles a server that answered a streaming request with one
// JSON document: the reply is delivered as events all at once.
func (c *OpenAI) replayJSON(ctx context.Context, body io.Reader, resp Response, start time.Time, fn func(Event) error) (Response, error) {
	if err := c.decodeCompletion(ctx, body, &resp); err != nil {
		return resp, err
	}
	if resp.Reasoning != "" {
		if err := fn(Event{Kind: EventReasoning, Text: resp.Reasoning}); err != nil {
			return resp, err
		}
	}
	if resp.Text != "" {
		if err := fn(Event{Kind: EventText, Text: resp.Text}); err != nil {
			return resp, err
		}
	}
	resp.Duration = time.Since(start)
	return resp, emitEnd(fn, &resp)
}

// Embed implements Embedder for an OpenAI-compatible /embeddings route.
func (c *OpenAI) Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error) {
	out := EmbedResponse{Provider: c.t.Provider, Model: c.t.Model}
	body, err := json.Marshal(map[string]any{"model": c.t.Model, "input": req.Inputs})
	if err != nil {
		return out, c.fill(&Error{Code: CodeBadRequest, Message: "The request could not be encoded.", Err: err})
	}
	hr, err := c.post(ctx, "/embeddings", body, false)
	if err != nil {
		return out, err
	}
	defer hr.Body.Close()
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage *oaUsage `json:"usage"`
	}
	if err := json.NewDecoder(io.LimitReader(hr.Body, 256<<20)).Decode(&r); err != nil {
		return out, c.fill(malformed(err))
	}
	if len(r.Data) != len(req.Inputs) {
		return out, c.fill(malformed(fmt.Errorf("got %d embeddings for %d inputs", len(r.Data), len(req.Inputs))))
	}
	out.Vectors = make([][]float32, len(req.Inputs))
	for i, d := range r.Data {
		idx := d.Index
		if idx < 0 || idx >= len(out.Vectors) || out.Vectors[idx] != nil {
			idx = i
		}
		out.Vectors[idx] = d.Embedding
	}
	for i, v := range out.Vectors {
		if len(v) == 0 {
			return out, c.fill(malformed(fmt.Errorf("embedding %d is empty", i)))
		}
		if out.Dimension == 0 {
			out.Dimension = len(v)
		} else if len(v) != out.Dimension {
			return out, c.fill(malformed(fmt.Errorf("embedding %d has dimension %d, want %d", i, len(v), out.Dimension)))
		}
	}
	if r.Usage != nil {
		out.Usage = r.Usage.usage()
	}
	return out, nil
}
