package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// URLAdapter watches a web page or JSON document: url.changed when its
// content hash changes. Conditional requests (ETag / Last-Modified) keep
// unchanged polls cheap; bodies are capped; by default only public
// addresses are fetched (no loopback, private, link-local), checked on the
// connected IP so DNS tricks cannot reach the LAN.
type URLAdapter struct {
	MaxBytes     int64 // default 1 MiB
	AllowPrivate bool  // allow loopback/private addresses (tests, a LAN device the user chose)
	Timeout      time.Duration

	once   sync.Once
	client *http.Client
	mu     sync.Mutex // guards cache
	cache  map[string]urlSnap
}

type urlSnap struct {
	Status       int    `json:"status"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	SHA256       string `json:"sha256"`
	Size         int    `json:"size"`
	// JSON holds a small JSON document itself, so rules can filter on it.
	JSON json.RawMessage `json:"json,omitempty"`
}

// Name implements Adapter.
func (*URLAdapter) Name() string { return "url" }

// EventTypes implements Adapter.
func (*URLAdapter) EventTypes() []string { return []string{"url.changed", "url.status_changed"} }

// Validate implements Adapter.
func (u *URLAdapter) Validate(ref string) error {
	p, err := url.Parse(ref)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", ref)
	}
	if p.User != nil {
		return errors.New("URLs with credentials are refused")
	}
	return nil
}

// errPrivate is returned when a URL resolves to an address the guard refuses.
var errPrivate = errors.New("refusing to fetch a loopback, private or link-local address (set allow_private for a device on your network)")

func (u *URLAdapter) init() {
	u.once.Do(func() {
		d := &net.Dialer{Timeout: 10 * time.Second, Control: func(network, address string, _ syscall.RawConn) error {
			if u.AllowPrivate {
				return nil
			}
			host, _, _ := net.SplitHostPort(address)
			ip := net.ParseIP(host)
			if ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
				return errPrivate
			}
			return nil
		}}
		timeout := u.Timeout
		if timeout <= 0 {
			timeout = 20 * time.Second
		}
		u.client = &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: d.DialContext, Proxy: nil, ResponseHeaderTimeout: timeout},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 5 {
					return errors.New("too many redirects")
				}
				return nil
			}}
		u.cache = map[string]urlSnap{}
	})
}

// Snapshot implements Adapter.
func (u *URLAdapter) Snapshot(ctx context.Context, ref string) (json.RawMessage, error) {
	if err := u.Validate(ref); err != nil {
		return nil, err
	}
	u.init()
	u.mu.Lock()
	prev, havePrev := u.cache[ref]
	u.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "Hestia-watch/1")
	if havePrev {
		if prev.ETag != "" {
			req.Header.Set("If-None-Match", prev.ETag)
		}
		if prev.LastModified != "" {
			req.Header.Set("If-Modified-Since", prev.LastModified)
		}
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", ref, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && havePrev {
		return json.Marshal(prev)
	}
	max := u.MaxBytes
	if max <= 0 {
		max = 1 << 20
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", ref, max)
	}
	sum := sha256.Sum256(body)
	s := urlSnap{Status: resp.StatusCode, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified"), SHA256: hex.EncodeToString(sum[:]), Size: len(body)}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") && len(body) <= 64<<10 && json.Valid(body) {
		s.JSON = body
	}
	u.mu.Lock()
	u.cache[ref] = s
	u.mu.Unlock()
	return json.Marshal(s)
}

// Events implements Adapter.
func (*URLAdapter) Events(prev, cur json.RawMessage) ([]Event, error) {
	var a, b urlSnap
	if err := json.Unmarshal(prev, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(cur, &b); err != nil {
		return nil, err
	}
	var out []Event
	if a.Status != b.Status {
		out = append(out, Event{Type: "url.status_changed", Key: fmt.Sprintf("status:%d:%s", b.Status, b.SHA256),
			Data: map[string]any{"status": b.Status, "previous_status": a.Status}, Text: fmt.Sprintf("The page now answers HTTP %d (was %d).", b.Status, a.Status)})
	}
	if a.SHA256 != b.SHA256 {
		data := map[string]any{"size": b.Size, "previous_size": a.Size}
		if b.JSON != nil {
			var doc any
			json.Unmarshal(b.JSON, &doc)
			data["json"] = doc
		}
		out = append(out, Event{Type: "url.changed", Key: "changed:" + a.SHA256 + ">" + b.SHA256, Data: data, Text: "The page changed."})
	}
	return out, nil
}

// DefaultExpiry implements Adapter: the user says how long.
func (*URLAdapter) DefaultExpiry(json.RawMessage) time.Duration { return 0 }

// Terminal implements Adapter.
func (*URLAdapter) Terminal(json.RawMessage) bool { return false }
