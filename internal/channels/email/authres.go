package email

import (
	"crypto/subtle"
	"fmt"
	"strings"
)

// AuthResults is one Authentication-Results header (RFC 8601 §2.2):
// the authserv-id of the server that wrote it and its method results.
type AuthResults struct {
	ServID  string
	Results []AuthResult
}

// AuthResult is one method's verdict, e.g. dkim=pass header.d=example.org.
type AuthResult struct {
	Method string            // lower case: dkim, spf, dmarc, arc, …
	Result string            // lower case: pass, fail, none, …
	Props  map[string]string // "header.d" → "example.org"; keys lower case
}

// maxAuthResults bounds the work one hostile header can cause.
const maxAuthResults = 64

// ParseAuthResults parses an Authentication-Results header value.
// Comments are dropped, quoted values unquoted; results written without
// the ";" between them (a common slip) are still told apart.
func ParseAuthResults(v string) (AuthResults, error) {
	v, err := stripComments(v)
	if err != nil {
		return AuthResults{}, err
	}
	parts := splitOutsideQuotes(v, ';')
	head := strings.Fields(parts[0])
	if len(head) == 0 {
		return AuthResults{}, fmt.Errorf("authentication results without an authserv-id")
	}
	ar := AuthResults{ServID: strings.ToLower(unquote(head[0]))}
	if ar.ServID == "" || strings.ContainsAny(ar.ServID, "= \t;") {
		return AuthResults{}, fmt.Errorf("authentication results start with %q, not an authserv-id", head[0])
	}
	for _, p := range parts[1:] {
		var cur *AuthResult
		for _, tok := range fieldsOutsideQuotes(p) {
			k, val, ok := strings.Cut(tok, "=")
			if !ok {
				// "none" (no results), or junk: nothing to record.
				continue
			}
			k = strings.ToLower(strings.TrimSpace(k))
			val = unquote(strings.TrimSpace(val))
			switch {
			case strings.Contains(k, "."):
				if cur != nil {
					cur.Props[k] = val
				}
			case k == "reason" || k == "action":
				// Not a method; reasons are for people.
			default:
				if len(ar.Results) >= maxAuthResults {
					return ar, fmt.Errorf("more than %d authentication results", maxAuthResults)
				}
				method, _, _ := strings.Cut(k, "/") // "dkim/1" carries a version
				ar.Results = append(ar.Results, AuthResult{Method: method, Result: strings.ToLower(val), Props: map[string]string{}})
				cur = &ar.Results[len(ar.Results)-1]
			}
		}
	}
	return ar, nil
}

// stripComments removes RFC 5322 comments (nested, with quoted pairs)
// outside quoted strings.
func stripComments(s string) (string, error) {
	var b strings.Builder
	depth, inQuote := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && (inQuote || depth > 0):
			if depth == 0 {
				b.WriteByte(c)
				if i+1 < len(s) {
					b.WriteByte(s[i+1])
				}
			}
			i++
		case inQuote:
			b.WriteByte(c)
			if c == '"' {
				inQuote = false
			}
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
			if depth == 0 {
				b.WriteByte(' ')
			}
		case depth > 0:
		case c == '"':
			inQuote = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	if depth > 0 || inQuote {
		return "", fmt.Errorf("authentication results with an unclosed comment or quote")
	}
	return b.String(), nil
}

func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	start, inQuote := 0, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && inQuote:
			i++
		case s[i] == '"':
			inQuote = !inQuote
		case s[i] == sep && !inQuote:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// fieldsOutsideQuotes splits on white space outside quoted strings and
// joins "key = value" written with spaces around the "=".
func fieldsOutsideQuotes(s string) []string {
	var raw []string
	var b strings.Builder
	inQuote := false
	flush := func() {
		if b.Len() > 0 {
			raw = append(raw, b.String())
			b.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(s):
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
		case c == '"':
			inQuote = !inQuote
			b.WriteByte(c)
		case !inQuote && (c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			flush()
		default:
			b.WriteByte(c)
		}
	}
	flush()
	var out []string
	for i := 0; i < len(raw); i++ {
		t := raw[i]
		switch {
		case t == "=" && len(out) > 0 && i+1 < len(raw):
			out[len(out)-1] += "=" + raw[i+1]
			i++
		case strings.HasSuffix(t, "=") && i+1 < len(raw) && !strings.Contains(raw[i+1], "="):
			out = append(out, t+raw[i+1])
			i++
		case strings.HasPrefix(t, "=") && len(out) > 0:
			out[len(out)-1] += t
		default:
			out = append(out, t)
		}
	}
	return out
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
		s = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s)
	}
	return s
}

// identity is the domain a result speaks for: the signing domain (dkim),
// the envelope sender's domain (spf), the From domain (dmarc). "" when the
// result names none (dkim=none: there was no signature at all).
func (r AuthResult) identity() string {
	var v string
	switch r.Method {
	case "dkim":
		v = r.Props["header.d"]
		if v == "" {
			v = r.Props["header.i"]
		}
	case "spf":
		v = r.Props["smtp.mailfrom"]
		if v == "" {
			v = r.Props["smtp.helo"]
		}
	case "dmarc":
		v = r.Props["header.from"]
	}
	if i := strings.LastIndex(v, "@"); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(v)), ".")
}

// aligned reports whether a result for domain id speaks for the From
// domain: the same domain, or a parent of it (a key for example.org may
// sign mail.example.org; the reverse would let a subdomain speak for its
// parent).
func aligned(id, fromDomain string) bool {
	return id != "" && (id == fromDomain || strings.HasSuffix(fromDomain, "."+id))
}

// related reports whether two domains are the same or one is a parent of
// the other (DMARC's relaxed alignment, without the public suffix list).
func related(a, b string) bool { return aligned(a, b) || aligned(b, a) }

// AuthVerdict checks the From domain against the Authentication-Results
// headers written by the trusted server (servID); headers with any other
// authserv-id are the sender's own claims and ignored. It passes when one
// of methods passes for the From domain:
//
//   - dkim: a passing signature by the From domain (or a parent of it);
//   - spf: an SPF pass for an envelope sender in the From domain;
//   - dmarc: a DMARC pass for the From domain, backed by a DKIM or SPF
//     pass for a related domain in the same trusted results;
//
// and no trusted result contradicts that pass: a result of the same
// method that is not a pass and names the From domain or no domain
// (dkim=none: no signature at all), or any DMARC non-pass for it. A
// claim planted by the sender under the trusted id then collides with the
// server's real verdict instead of replacing it, even on a server that
// does not strip such headers as RFC 8601 §5 requires (a server that
// strips them is still needed for methods it does not evaluate).
func AuthVerdict(headers []string, servID string, methods []string, fromDomain string) (bool, string) {
	fromDomain = strings.TrimSuffix(strings.ToLower(fromDomain), ".")
	if servID == "" || fromDomain == "" {
		return false, "no trusted authserv-id or From domain"
	}
	var trusted []AuthResult
	seen := 0
	for _, h := range headers {
		ar, err := ParseAuthResults(h)
		if err != nil || !strings.EqualFold(ar.ServID, servID) {
			continue
		}
		seen++
		trusted = append(trusted, ar.Results...)
	}
	if seen == 0 {
		return false, "no Authentication-Results from " + servID
	}
	// contradicted reports a non-pass of method about the From domain.
	contradicted := func(method string) (string, bool) {
		for _, r := range trusted {
			if id := r.identity(); r.Method == method && r.Result != "pass" && (id == "" || related(id, fromDomain)) {
				return fmt.Sprintf("%s=%s for %s", r.Method, r.Result, orNone(id)), true
			}
		}
		return "", false
	}
	if why, bad := contradicted("dmarc"); bad {
		return false, why
	}
	backed := func() bool {
		for _, r := range trusted {
			if (r.Method == "dkim" || r.Method == "spf") && r.Result == "pass" && related(r.identity(), fromDomain) {
				if _, bad := contradicted(r.Method); !bad {
					return true
				}
			}
		}
		return false
	}
	why := ""
	for _, m := range methods {
		m = strings.ToLower(m)
		for _, r := range trusted {
			if r.Method != m || r.Result != "pass" || !aligned(r.identity(), fromDomain) {
				continue
			}
			if c, bad := contradicted(m); bad {
				why = c
				continue
			}
			if m == "dmarc" && !backed() {
				why = "dmarc=pass without a DKIM or SPF pass behind it"
				continue
			}
			return true, m + "=pass for " + r.identity()
		}
	}
	for _, m := range methods {
		if c, bad := contradicted(strings.ToLower(m)); bad && why == "" {
			why = c
		}
	}
	if why == "" {
		why = fmt.Sprintf("no %s pass for %s from %s", strings.Join(methods, "/"), fromDomain, servID)
	}
	return false, why
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// tagMatches reports whether addr is local+tag@domain for the dedicated
// address local@domain, comparing the tag in constant time (case-folded:
// some servers lower-case addresses on the way).
func tagMatches(addr, local, domain, tag string) bool {
	if tag == "" {
		return false
	}
	l, d, ok := splitAddr(addr)
	if !ok || d != domain {
		return false
	}
	got, ok := strings.CutPrefix(l, local+"+")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(strings.ToLower(tag))) == 1
}

// splitAddr lower-cases and splits an address at its last "@".
func splitAddr(addr string) (local, domain string, ok bool) {
	addr = strings.ToLower(strings.TrimSpace(addr))
	i := strings.LastIndex(addr, "@")
	if i <= 0 || i == len(addr)-1 {
		return "", "", false
	}
	return addr[:i], addr[i+1:], true
}
