package config

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// WebConfig configures web_fetch and web_search.
type WebConfig struct {
	// AllowHosts are host names, addresses or CIDR networks web_fetch may
	// reach although they are private (a NAS on the LAN); everything else
	// private, loopback or link-local is refused.
	AllowHosts []string `toml:"allow_hosts"`
	// SearchURL is a SearXNG-compatible endpoint (JSON output enabled);
	// empty leaves web_search off.
	SearchURL string `toml:"search_url"`
}

// DocsConfig bounds the document tools.
type DocsConfig struct {
	MaxBytes       int      `toml:"max_bytes"`       // input cap (default 25 MiB, at most 100 MiB)
	ExtractTimeout Duration `toml:"extract_timeout"` // per extraction (default 15s, 1s–60s)
}

func defaultDocs() DocsConfig {
	return DocsConfig{MaxBytes: 25 << 20, ExtractTimeout: Duration(15 * time.Second)}
}

func (w WebConfig) validate() []error {
	var errs []error
	for _, h := range w.AllowHosts {
		h = strings.TrimSpace(h)
		_, perr := netip.ParsePrefix(h)
		_, aerr := netip.ParseAddr(h)
		if h == "" || (perr != nil && aerr != nil && strings.ContainsAny(h, "/:@ ")) {
			errs = append(errs, &Error{Key: "web.allow_hosts", Value: h, Allowed: "host names, IP addresses or CIDR networks"})
		}
	}
	if w.SearchURL != "" {
		u, err := url.Parse(w.SearchURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, &Error{Key: "web.search_url", Value: w.SearchURL, Allowed: "an http(s) URL of a SearXNG instance"})
		}
	}
	return errs
}

func (d DocsConfig) validate() []error {
	var errs []error
	if d.MaxBytes < 1<<10 || d.MaxBytes > 100<<20 {
		errs = append(errs, &Error{Key: "docs.max_bytes", Value: strconv.Itoa(d.MaxBytes), Allowed: "1024 to 104857600 bytes"})
	}
	if t := d.ExtractTimeout.D(); t < time.Second || t > time.Minute {
		errs = append(errs, &Error{Key: "docs.extract_timeout", Value: t.String(), Allowed: "a duration between 1s and 60s"})
	}
	return errs
}
