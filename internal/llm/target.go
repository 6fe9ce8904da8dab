package llm

import (
	"net"
	"net/http"
	"time"
)

// Target kinds: the wire protocol a target speaks.
const (
	KindOpenAI    = "openai"    // OpenAI-compatible /chat/completions and /embeddings
	KindAnthropic = "anthropic" // Anthropic Messages API
	KindLocal     = "local"     // the built-in offline embedder (local-embed only)
)

// Target is one provider endpoint and model a tier routes to.
type Target struct {
	// Provider is the configured provider name ("ollama", "openrouter");
	// it is what the usage ledger and errors show.
	Provider string
	Kind     string
	BaseURL  string // e.g. http://127.0.0.1:11434/v1
	APIKey   string
	Model    string
	// MaxTokens is the reply bound used when a request sets none; 0 leaves
	// the provider default (Anthropic requires a bound, so 4096 is used).
	MaxTokens int
}

// key identifies a target for de-duplication: repeated aliases of the same
// provider endpoint, key and model collapse to one attempt.
func (t Target) key() string {
	return t.Kind + "\x00" + t.BaseURL + "\x00" + t.APIKey + "\x00" + t.Model
}

// backend is what the router drives for one target.
type backend interface {
	Client
	Embedder
	target() Target
}

// NewHTTPClient returns the HTTP client provider calls use. It has no
// overall timeout: the router's budgets bound every attempt through the
// request context, streamed bodies included.
func NewHTTPClient() *http.Client { return newHTTPClient(DefaultConnectTimeout) }

// newHTTPClient bounds dialling and the TLS handshake by connect
// (llm.connect_timeout).
func newHTTPClient(connect time.Duration) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connect,
		ExpectContinueTimeout: time.Second,
	}}
}

func newBackend(t Target, hc *http.Client) backend {
	switch t.Kind {
	case KindAnthropic:
		return NewAnthropic(t, hc)
	case KindLocal:
		return NewLocalEmbedder()
	}
	return NewOpenAI(t, hc)
}
