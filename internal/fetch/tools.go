package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/tools"
)

// FetchSpec is web_fetch's declaration (the adversarial suite reuses it).
func FetchSpec() tools.Spec {
	return tools.Spec{
		Name:        "web_fetch",
		Description: "Fetch one public web page with GET (HTML, plain text, JSON or PDF) and return its readable text. Private, loopback and metadata addresses are refused.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","minLength":1,"maxLength":2048,"description":"http(s) URL"}},"required":["url"],"additionalProperties":false}`),
		Risk:        tools.RiskLow, ReadOnly: true, Egress: true, UntrustedOutput: true, MaxResult: 50_000,
	}
}

// SearchSpec is web_search's declaration.
func SearchSpec() tools.Spec {
	return tools.Spec{
		Name:        "web_search",
		Description: "Search the web through the configured SearXNG-compatible endpoint; returns titles, URLs and snippets.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":400},"max_results":{"type":"integer","minimum":1,"maximum":20}},"required":["query"],"additionalProperties":false}`),
		Risk:        tools.RiskLow, ReadOnly: true, Egress: true, UntrustedOutput: true, MaxResult: 20_000,
	}
}

// Tools returns web_fetch and web_search. searchURL is the SearXNG base
// URL ("" leaves web_search answering that it is not configured).
func (f *Fetcher) Tools(searchURL string) []tools.Tool {
	return []tools.Tool{
		&tools.Func{S: FetchSpec(), Fn: f.runFetch},
		&searchTool{base: strings.TrimRight(searchURL, "/"), client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil}}},
	}
}

func (f *Fetcher) runFetch(ctx context.Context, c tools.Call) (tools.Result, error) {
	a, err := tools.ParseArgs(c.Args)
	if err != nil {
		return tools.Result{}, err
	}
	p, err := f.Fetch(ctx, a.String("url", ""))
	if err != nil {
		msg := err.Error()
		if errors.Is(err, ErrBlocked) {
			msg = "refused: " + strings.TrimSuffix(msg, ": "+ErrBlocked.Error())
		}
		return tools.Result{Content: msg, IsError: true}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "url: %s\n", p.FinalURL)
	if p.FinalURL != p.URL {
		fmt.Fprintf(&b, "requested: %s\n", p.URL)
	}
	fmt.Fprintf(&b, "content_type: %s\n", p.ContentType)
	if p.Title != "" {
		fmt.Fprintf(&b, "title: %s\n", p.Title)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	b.WriteString("\n")
	b.WriteString(p.Text)
	return tools.Result{Content: b.String()}, nil
}

type searchTool struct {
	base   string
	client *http.Client
}

func (t *searchTool) Spec() tools.Spec                { return SearchSpec() }
func (t *searchTool) Available(context.Context) error { return nil }

func (t *searchTool) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	if t.base == "" {
		return tools.Result{Content: "web search is not configured: set [web] search_url to a SearXNG instance (with format=json enabled); web_fetch still works for known URLs", IsError: true}, nil
	}
	a, err := tools.ParseArgs(c.Args)
	if err != nil {
		return tools.Result{}, err
	}
	n := a.Int("max_results", 8)
	u := t.base + "/search?format=json&q=" + url.QueryEscape(a.String("query", ""))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return tools.Result{Content: "web search URL is invalid: " + err.Error(), IsError: true}, nil
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return tools.Result{Content: "web search failed: " + err.Error(), IsError: true}, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return tools.Result{Content: "web search endpoint answered " + resp.Status, IsError: true}, nil
	}
	var out struct {
		Results []struct {
			URL     string `json:"url"`
			Title   string `json:"title"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 2<<20)).Decode(&out); err != nil {
		return tools.Result{Content: "web search endpoint sent something that is not SearXNG JSON: " + err.Error(), IsError: true}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d results\n", min(n, len(out.Results)))
	for i, r := range out.Results {
		if i >= n {
			break
		}
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n   %s\n", i+1, oneLine(r.Title, 200), r.URL, oneLine(r.Content, 400))
	}
	return tools.Result{Content: b.String()}, nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
