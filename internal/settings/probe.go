package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Prober talks to model endpoints for the connection test and local
// detection. Requests go only where the user points them (or to loopback
// default ports), and API keys are sent only to the endpoint they belong to.
type Prober struct {
	Client *http.Client
	// Candidates are the local servers Detect looks for; nil means
	// DefaultCandidates.
	Candidates []Candidate
	// Timeout bounds one request (default 5 s; Detect uses a quarter).
	Timeout time.Duration
}

// Candidate is a local model server on its default port.
type Candidate struct {
	Name    string `json:"name"`
	Product string `json:"product"`
	BaseURL string `json:"base_url"`
}

// DefaultCandidates are the usual local OpenAI-compatible servers.
var DefaultCandidates = []Candidate{
	{Name: "ollama", Product: "Ollama", BaseURL: "http://127.0.0.1:11434/v1"},
	{Name: "llamacpp", Product: "llama.cpp server", BaseURL: "http://127.0.0.1:8080/v1"},
	{Name: "lmstudio", Product: "LM Studio", BaseURL: "http://127.0.0.1:1234/v1"},
}

// Found is a detected local server and the models it lists.
type Found struct {
	Candidate
	Models []string `json:"models"`
}

func (p Prober) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Models lists the models of an endpoint: GET {base}/models with the key
// as the API kind expects. Errors say what to fix in plain words.
func (p Prober) Models(ctx context.Context, kind, baseURL, apiKey string) ([]string, error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return p.models(ctx, timeout, kind, baseURL, apiKey)
}

func (p Prober) models(ctx context.Context, timeout time.Duration, kind, baseURL, apiKey string) ([]string, error) {
	if kind == "anthropic" && baseURL == "" {
		baseURL = "https://api.anthropic.com/v1"
	}
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, fmt.Errorf("base URL %q is not an http:// or https:// URL such as http://127.0.0.1:11434/v1", baseURL)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/models", nil)
	if err != nil {
		return nil, fmt.Errorf("base URL %q: %w", baseURL, err)
	}
	if apiKey != "" {
		if kind == "anthropic" {
			req.Header.Set("x-api-key", apiKey)
			req.Header.Set("anthropic-version", "2023-06-01")
		} else {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
	}
	res, err := p.client().Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer from %s within %s", baseURL, timeout)
		}
		return nil, fmt.Errorf("cannot connect to %s: %s", baseURL, rootCause(err))
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%s refused the API key (HTTP %d)", baseURL, res.StatusCode)
	case res.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s has no /models route (HTTP 404): is the URL the API base, usually ending in /v1?", baseURL)
	case res.StatusCode >= 300:
		return nil, fmt.Errorf("%s answered HTTP %d", baseURL, res.StatusCode)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Data == nil {
		return nil, fmt.Errorf("%s answered, but not like an OpenAI-compatible model list", baseURL)
	}
	out := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			out = append(out, m.ID)
		}
	}
	sort.Strings(out)
	return out, nil
}

// rootCause keeps the end of a net error chain ("connection refused").
func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// Detect looks for local model servers on their default ports, in
// parallel, each with a short deadline.
func (p Prober) Detect(ctx context.Context) []Found {
	cands := p.Candidates
	if cands == nil {
		cands = DefaultCandidates
	}
	timeout := p.Timeout / 4
	if timeout <= 0 {
		timeout = 1500 * time.Millisecond
	}
	found := make([]*Found, len(cands))
	var wg sync.WaitGroup
	for i, c := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if models, err := p.models(ctx, timeout, "openai", c.BaseURL, ""); err == nil {
				found[i] = &Found{Candidate: c, Models: models}
			}
		}()
	}
	wg.Wait()
	out := []Found{}
	for _, f := range found {
		if f != nil {
			out = append(out, *f)
		}
	}
	return out
}
