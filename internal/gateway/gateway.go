// Package gateway is the OpenAI-compatible HTTP surface of the daemon:
// POST /v1/chat/completions (streaming SSE and not), POST /v1/embeddings,
// GET /v1/models and GET /v1/rates. Callers name a capability tier as the
// model ("tier-1" … "tier-6", "local-embed"); the llm router picks the
// provider. Any OpenAI client works against it with the daemon's bearer
// token as API key (the server's auth wraps every /v1 route).
//
// Spend is attributed with the x-usage-service and x-usage-action request
// headers; a missing label is recorded as "unknown", never dropped. The
// router writes the one usage row per request, so the gateway and in-process
// callers are accounted the same way.
package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/usage"
)

// Attribution headers.
const (
	HeaderService = "x-usage-service"
	HeaderAction  = "x-usage-action"
)

// MaxBody bounds request bodies (long conversations are large).
const MaxBody = 32 << 20

// MaxEmbedInputs bounds the inputs of one embeddings request.
const MaxEmbedInputs = 2048

// Options are the gateway's dependencies.
type Options struct {
	Chat   llm.Client
	Embed  llm.Embedder
	Tiers  func() []llm.TierInfo // what GET /v1/models lists
	Rates  func() []usage.Rate   // what GET /v1/rates serves; nil serves none
	Logger *slog.Logger
	Now    func() time.Time
}

// Gateway serves the /v1 routes.
type Gateway struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
}

// New returns a gateway.
func New(opts Options) *Gateway {
	g := &Gateway{opts: opts, log: opts.Logger, now: opts.Now}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = time.Now
	}
	return g
}

// Routes registers the /v1 routes.
func (g *Gateway) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/chat/completions", g.handleChat)
	mux.HandleFunc("POST /v1/embeddings", g.handleEmbeddings)
	mux.HandleFunc("GET /v1/models", g.handleModels)
	mux.HandleFunc("GET /v1/rates", g.handleRates)
}

// apiError is the OpenAI error shape, which OpenAI clients parse; code is
// the llm error Code (or a gateway code such as model_not_found).
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	var e apiError
	e.Error.Message, e.Error.Code = message, code
	switch {
	case status == http.StatusTooManyRequests:
		e.Error.Type = "rate_limit_error"
	case status >= 500:
		e.Error.Type = "server_error"
	default:
		e.Error.Type = "invalid_request_error"
	}
	writeJSON(w, status, e)
}

// statusFor maps a classified model error to the gateway's HTTP status.
// Upstream auth and billing failures are not the caller's credentials
// failing, so they are reported as gateway errors, not 401.
func statusFor(code llm.Code) int {
	switch code {
	case llm.CodeBadRequest, llm.CodeContextTooLarge:
		return http.StatusBadRequest
	case llm.CodeRateLimited:
		return http.StatusTooManyRequests
	case llm.CodeBilling:
		return http.StatusPaymentRequired
	case llm.CodeModelUnavailable:
		return http.StatusServiceUnavailable
	case llm.CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

func writeLLMError(w http.ResponseWriter, err error) {
	code := llm.CodeOf(err)
	msg := "The model request failed."
	var le *llm.Error
	if errors.As(err, &le) {
		msg = le.Message
		if le.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(le.RetryAfter.Seconds()))))
		}
	}
	if code == "" {
		code = llm.CodeUnknown
	}
	writeError(w, statusFor(code), string(code), msg)
}

// decode reads an OpenAI-style body: unknown fields are ignored, because
// clients send many optional fields (user, seed, top_p, …) we do not model.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	return httpjson.DecodeLenient(w, r, v, MaxBody)
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (g *Gateway) handleModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	if g.opts.Tiers != nil {
		for _, t := range g.opts.Tiers() {
			out.Data = append(out.Data, model{ID: string(t.Tier), Object: "model", OwnedBy: "hestia"})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *Gateway) handleRates(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Currency string       `json:"currency"`
		Unit     string       `json:"unit"`
		Note     string       `json:"note"`
		Rates    []usage.Rate `json:"rates"`
	}{Currency: "USD", Unit: "per million tokens", Note: "estimates configured in code, not provider invoices", Rates: []usage.Rate{}}
	if g.opts.Rates != nil {
		out.Rates = g.opts.Rates()
	}
	writeJSON(w, http.StatusOK, out)
}

type embedReq struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
}

func (g *Gateway) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var in embedReq
	if err := decode(w, r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	tier := llm.Tier(in.Model)
	if in.Model == "" {
		tier = llm.LocalEmbed
	}
	if tier != llm.LocalEmbed {
		writeError(w, http.StatusNotFound, "model_not_found", fmt.Sprintf("model %q is not an embedding tier; use local-embed", in.Model))
		return
	}
	var inputs []string
	var one string
	if raw := bytes.TrimSpace(in.Input); len(raw) == 0 || string(raw) == "null" {
		// null would decode as "" and embed as a zero vector.
		writeError(w, http.StatusBadRequest, "bad_request", "input is required: a string or an array of strings")
		return
	}
	if err := json.Unmarshal(in.Input, &one); err == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(in.Input, &inputs); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "input must be a string or an array of strings (token arrays are not supported)")
		return
	}
	if len(inputs) == 0 || len(inputs) > MaxEmbedInputs {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("input must hold 1 to %d strings, got %d", MaxEmbedInputs, len(inputs)))
		return
	}
	switch in.EncodingFormat {
	case "", "float", "base64":
	default:
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("encoding_format %q is not float or base64", in.EncodingFormat))
		return
	}
	resp, err := g.opts.Embed.Embed(r.Context(), llm.EmbedRequest{
		Tier: tier, Inputs: inputs,
		Service: r.Header.Get(HeaderService), Action: r.Header.Get(HeaderAction),
	})
	if err == nil && resp.Errors != nil {
		// The OpenAI API has no partial success: one failed input fails
		// the request. In-process callers get per-item results instead.
		for i, e := range resp.Errors {
			if e != nil {
				err = fmt.Errorf("input %d: %w", i, e)
				break
			}
		}
	}
	if err != nil {
		writeLLMError(w, err)
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []item `json:"data"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: in.Model}
	if out.Model == "" {
		out.Model = string(llm.LocalEmbed)
	}
	for i, v := range resp.Vectors {
		var emb any = v
		if in.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(f))
			}
			emb = base64.StdEncoding.EncodeToString(buf)
		}
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: emb})
	}
	out.Usage.PromptTokens = resp.Usage.InputTokens
	out.Usage.TotalTokens = resp.Usage.InputTokens
	w.Header().Set("x-hestia-target", resp.Provider+"/"+resp.Model)
	writeJSON(w, http.StatusOK, out)
}
