package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/docs"
)

// Limits.
const (
	DefaultMaxBytes = 5 << 20
	MaxRedirects    = 5
	MaxURL          = 2048
	DefaultMaxChars = 40_000
)

// Fetcher makes guarded GET requests.
type Fetcher struct {
	Guard *Guard
	// MaxBytes caps a response body (default 5 MiB).
	MaxBytes int64
	// Timeout bounds one fetch, redirects included (default 30 s).
	Timeout time.Duration
	// Extract parses fetched HTML and PDF: the docs extraction child in the
	// daemon (rlimits, timeout), so a hostile page can fail its own fetch,
	// never grow the daemon. When nil, HTML is read by the streaming reader
	// alone (no DOM, no article extraction) and PDFs are not read.
	Extract docs.Extracter
	// PDF is Extract's former name, used when Extract is nil.
	PDF docs.Extracter
	// MaxChars caps the text handed to the model.
	MaxChars int
	client   *http.Client
}

// New returns a Fetcher with its HTTP client built around the guard.
func New(f Fetcher) *Fetcher {
	if f.Guard == nil {
		f.Guard = &Guard{}
	}
	if f.MaxBytes <= 0 {
		f.MaxBytes = DefaultMaxBytes
	}
	if f.Timeout <= 0 {
		f.Timeout = 30 * time.Second
	}
	if f.MaxChars <= 0 {
		f.MaxChars = DefaultMaxChars
	}
	if f.Extract == nil {
		f.Extract = f.PDF
	}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, past the guard
		DialContext:            f.Guard.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  15 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           4,
		IdleConnTimeout:        30 * time.Second,
	}
	f.client = &http.Client{Transport: tr, CheckRedirect: checkRedirect}
	return &f
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("more than %d redirects (last to %s)", MaxRedirects, req.URL.Redacted())
	}
	if err := checkURL(req.URL); err != nil {
		return fmt.Errorf("redirect to %s refused: %w", req.URL.Redacted(), err)
	}
	return nil
}

// checkURL allows absolute http(s) URLs without credentials.
func checkURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("only http and https URLs are fetched, not %q", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return errors.New("the URL has no host")
	case u.User != nil:
		return errors.New("URLs with a user name or password are refused")
	}
	return nil
}

// Page is a fetched page as text.
type Page struct {
	URL         string
	FinalURL    string
	Status      int
	ContentType string
	Title       string
	Text        string
	Warnings    []string
}

// Fetch GETs rawURL and returns its readable text.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Page, error) {
	rawURL = strings.TrimSpace(rawURL)
	if len(rawURL) > MaxURL {
		return nil, fmt.Errorf("the URL is %d characters; at most %d", len(rawURL), MaxURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("the URL does not parse: %w", err)
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	// Refuse a blocked literal address before any connection is tried.
	if _, err := f.Guard.CheckHost(ctx, u.Hostname()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "Hestia/1 (personal assistant; +local)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,application/pdf;q=0.8,*/*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("fetching %s took longer than %s", u.Redacted(), f.Timeout)
		}
		return nil, fmt.Errorf("fetching %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	page := &Page{URL: u.Redacted(), FinalURL: resp.Request.URL.Redacted(), Status: resp.StatusCode}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s answered %s", page.FinalURL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", page.FinalURL, err)
	}
	over := int64(len(body)) > f.MaxBytes
	if over {
		body = body[:f.MaxBytes]
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if mt == "" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	page.ContentType = mt
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		var doc *docs.Document
		if doc, err = f.readable(ctx, body); err == nil {
			page.Title, page.Text = doc.Title, pagesText(doc)
			page.Warnings = append(page.Warnings, doc.Warnings...)
		}
	case mt == "text/plain" || mt == "text/markdown" || mt == "text/csv":
		page.Text = strings.ToValidUTF8(string(body), "\uFFFD")
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var buf bytes.Buffer
		if json.Indent(&buf, body, "", "  ") == nil && buf.Len() < 4*len(body)+1024 {
			page.Text = buf.String()
		} else {
			page.Text = strings.ToValidUTF8(string(body), "\uFFFD")
		}
	case mt == "application/pdf":
		if over {
			return nil, fmt.Errorf("%s is a PDF larger than %d bytes; it is not read", page.FinalURL, f.MaxBytes)
		}
		page.Text, err = f.pdfText(ctx, body)
	default:
		return nil, fmt.Errorf("%s is %s; web_fetch reads HTML, plain text, JSON and PDF only", page.FinalURL, mt)
	}
	if err != nil {
		return nil, err
	}
	if over {
		page.Warnings = append(page.Warnings, fmt.Sprintf("the body was cut at %d bytes", f.MaxBytes))
	}
	if utf8.RuneCountInString(page.Text) > f.MaxChars {
		page.Text = string([]rune(page.Text)[:f.MaxChars])
		page.Warnings = append(page.Warnings, fmt.Sprintf("the text was cut at %d characters", f.MaxChars))
	}
	return page, nil
}

// readable keeps the article (readability), then turns it into text with
// the document extractor's HTML reader (scripts and styles dropped). The
// DOM parse readability needs runs in the extraction child: a misnested
// page can make gigabytes of nodes (docs.Article). If the child fails, the
// page is read again there by the streaming reader alone, which holds no
// tree; the error of that second read is the one reported.
func (f *Fetcher) readable(ctx context.Context, body []byte) (*docs.Document, error) {
	if f.Extract == nil {
		doc, err := docs.Extract(ctx, body, docs.HTML, docs.Limits{MaxChars: 2_000_000})
		if err != nil {
			return nil, htmlError(err)
		}
		return doc, nil
	}
	doc, err := f.Extract.Extract(ctx, body, docs.Article)
	if err == nil {
		return doc, nil
	}
	if errors.Is(err, docs.ErrNoText) || ctx.Err() != nil {
		return nil, htmlError(err)
	}
	doc, err2 := f.Extract.Extract(ctx, body, docs.HTML)
	if err2 != nil {
		return nil, htmlError(fmt.Errorf("reading the page as an article: %v; as plain HTML: %w", err, err2))
	}
	doc.Warnings = append(doc.Warnings, "article extraction failed ("+err.Error()+"); the whole page's text is shown")
	return doc, nil
}

func htmlError(err error) error {
	if errors.Is(err, docs.ErrNoText) {
		return errors.New("the page has no readable text (it may need JavaScript)")
	}
	return fmt.Errorf("reading the page: %w", err)
}

func pagesText(d *docs.Document) string {
	var b strings.Builder
	for i, p := range d.Pages {
		if len(d.Pages) > 1 {
			fmt.Fprintf(&b, "\n--- page %d ---\n", i+1)
		}
		b.WriteString(p.Text)
	}
	return strings.TrimSpace(b.String())
}

func (f *Fetcher) pdfText(ctx context.Context, body []byte) (string, error) {
	if f.Extract == nil {
		return "", errors.New("PDF reading is not available")
	}
	doc, err := f.Extract.Extract(ctx, body, docs.PDF)
	if err != nil {
		return "", fmt.Errorf("reading the PDF: %w", err)
	}
	return pagesText(doc), nil
}
