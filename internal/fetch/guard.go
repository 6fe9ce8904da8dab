// Package fetch is the agent's window on the web: web_fetch (GET one URL,
// readable text out) and web_search (a configured SearXNG-compatible
// endpoint).
//
// The SSRF guard works at the dial: every connection, redirects included,
// resolves the host, refuses loopback, private, link-local, CGNAT,
// multicast, unspecified and cloud-metadata addresses (IPv4-mapped IPv6
// unwrapped first), and then dials the checked address itself, so a DNS
// answer cannot change between the check and the connection. Proxies from
// the environment are ignored for the same reason. A configurable
// allow-list admits named hosts or networks (a NAS on the LAN).
//
// Page text is untrusted: the tools declare UntrustedOutput, and because a
// GET can carry data out in its URL they declare Egress too, so once a turn
// has read untrusted content every further fetch needs the user.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// `web_fetch` (GET, http/https, ≤ 5 redirects, 5 MiB, HTML and PDF through the docs child — HTML
// as `docs.Article`, so go-readability's DOM parse never runs in the daemon; a failed article read
// is retried there with the streaming reader —, text, JSON) behind an SSRF guard at the dialer:
// every hop resolved, loopback/private/link-local/CGNAT/metadata refused unless in `[web]
// allow_hosts`, the checked address dialled (pinned), environment proxies ignored; untrusted and
// egress, so after untrusted content a fetch needs the user. `web_search` through `[web]
// search_url` (SearXNG JSON), saying so when unset.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// ErrBlocked is wrapped when the SSRF guard refuses an address.
var ErrBlocked = errors.New("address refused by the SSRF guard")

// blockedNets are the networks refused, and why. The table is constants
// (static data); the prefixes are parsed on first use by blockedPrefixes,
// not at every hestia process's start.
var blockedNets = []struct {
	cidr, why string
}{
	{"0.0.0.0/8", "an unspecified/\"this network\" address"},
	{"10.0.0.0/8", "a private address"},
	{"100.64.0.0/10", "a carrier-grade NAT address"},
	{"127.0.0.0/8", "a loopback address"},
	{"169.254.0.0/16", "a link-local address (cloud metadata lives here)"},
	{"172.16.0.0/12", "a private address"},
	{"192.0.0.0/24", "an IETF protocol address"},
	{"192.168.0.0/16", "a private address"},
	{"198.18.0.0/15", "a benchmarking address"},
	{"224.0.0.0/4", "a multicast address"},
	{"240.0.0.0/4", "a reserved address"},
	{"::/128", "the unspecified address"},
	{"::1/128", "a loopback address"},
	{"64:ff9b::/96", "a NAT64 address"},
	{"fc00::/7", "a private (unique local) address"},
	{"fe80::/10", "a link-local address"},
	{"ff00::/8", "a multicast address"},
	{"2001:db8::/32", "a documentation address"},
}

// blockedPrefixes parses blockedNets, in its order.
var blockedPrefixes = sync.OnceValue(func() []netip.Prefix {
	ps := make([]netip.Prefix, len(blockedNets))
	for i, b := range blockedNets {
		ps[i] = netip.MustParsePrefix(b.cidr)
	}
	return ps
})

// Guard decides which addresses may be dialled.
type Guard struct {
	// Allow lists host names, addresses or CIDR networks that are reached
	// even though they are private (configured by the user).
	Allow []string
	// Resolve looks up a host; nil uses the system resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial makes the connection to a checked address; nil uses net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// blocked names why an address is refused, or "" when it may be reached.
func blocked(a netip.Addr) string {
	a = a.Unmap()
	if a.Zone() != "" {
		a = a.WithZone("")
	}
	for i, p := range blockedPrefixes() {
		if p.Contains(a) {
			return blockedNets[i].why
		}
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return "the broadcast address"
	}
	return ""
}

func (g *Guard) allowed(host string, a netip.Addr) bool {
	for _, al := range g.Allow {
		al = strings.TrimSpace(strings.ToLower(al))
		if al == "" {
			continue
		}
		if al == strings.ToLower(host) {
			return true
		}
		if p, err := netip.ParsePrefix(al); err == nil && p.Contains(a.Unmap()) {
			return true
		}
		if ip, err := netip.ParseAddr(al); err == nil && ip.Unmap() == a.Unmap() {
			return true
		}
	}
	return false
}

// CheckHost resolves host and returns the addresses that may be dialled,
// or an error naming why none may.
func (g *Guard) CheckHost(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		lower := strings.ToLower(host)
		if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
			if !g.allowed(host, netip.IPv6Loopback()) {
				return nil, fmt.Errorf("%s is this machine (loopback); web_fetch only reaches public addresses: %w", host, ErrBlocked)
			}
		}
		resolve := g.Resolve
		if resolve == nil {
			resolve = func(ctx context.Context, h string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := resolve(rctx, host)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		addrs = res
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no addresses", host)
	}
	// Every answer must pass: a name that resolves to a public and a
	// private address is refused, or a retry could land on the private one.
	for _, a := range addrs {
		if why := blocked(a); why != "" && !g.allowed(host, a) {
			shown := host
			if shown != a.String() {
				shown = fmt.Sprintf("%s (resolves to %s)", host, a)
			}
			return nil, fmt.Errorf("%s is %s; web_fetch only reaches public addresses unless the host is in [web] allow_hosts: %w", shown, why, ErrBlocked)
		}
	}
	return addrs, nil
}

// DialContext is an http.Transport dialer that checks and pins addresses.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.CheckHost(ctx, host)
	if err != nil {
		return nil, err
	}
	dial := g.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		dial = d.DialContext
	}
	var last error
	for _, a := range addrs {
		c, err := dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}
