package audit

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Redaction bounds. Audit rows describe what happened; they are not a copy
// of the user's data, so long bodies become snippets.
const (
	MaxString  = 2000 // characters kept of any string
	MaxDepth   = 8    // nesting kept; deeper values become "[nested]"
	MaxItems   = 50   // list items and object keys kept
	SnippetLen = 500  // body-like fields are cut harder
	Mask       = "[redacted]"
)

var secretKeyRE = lazyre.New(`(?i)(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth(orization)?|cookie|session[_-]?id|private[_-]?key|credential|bearer|client[_-]?secret|access[_-]?key|signature)`)

var bodyKeyRE = lazyre.New(`(?i)^(body|content|text|html|raw|output|data|message_body|new_text|old_text)$`)

var valueREs = []*lazyre.Regexp{
	lazyre.New(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`),
	lazyre.New(`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}`),
	lazyre.New(`\bsk-[A-Za-z0-9_-]{8,}`),
	lazyre.New(`\b(ghp|gho|ghu|ghs|github_pat|xox[abpr]|glpat)[-_][A-Za-z0-9_-]{8,}`),
	lazyre.New(`\bAKIA[0-9A-Z]{16}\b`),
	lazyre.New(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), // JWT
}

// urlCredRE matches user:password@ in URLs.
var urlCredRE = lazyre.New(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@`)

// kvSecretRE matches key=value / key: value pairs with secret-like keys in
// free text ("password=hunter2", "api_key: abc").
var kvSecretRE = lazyre.New(`(?i)\b(password|passwd|secret|token|api[_-]?key|access[_-]?key)\b(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&]+)`)

// RedactString masks secrets inside free text and bounds its length.
func RedactString(s string, max int) string {
	for _, re := range valueREs {
		s = re.ReplaceAllString(s, Mask)
	}
	s = urlCredRE.ReplaceAllString(s, "${1}"+Mask+"@")
	s = kvSecretRE.ReplaceAllString(s, "${1}${2}"+Mask)
	return cut(s, max)
}

func cut(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + fmt.Sprintf("… [%d characters cut]", len(r)-max)
}

// Redact returns a copy of v (decoded JSON-like data: maps, slices, strings,
// numbers, bools) with secret-like keys masked, secrets in strings masked,
// long strings cut, and nesting and list length bounded.
func Redact(v any) any { return redact(v, "", 0) }

func redact(v any, key string, depth int) any {
	if depth > MaxDepth {
		return "[nested]"
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, min(len(keys), MaxItems+1))
		for i, k := range keys {
			if i >= MaxItems {
				out["…"] = fmt.Sprintf("%d more keys", len(keys)-MaxItems)
				break
			}
			if secretKeyRE.MatchString(k) && !isHarmless(x[k]) {
				out[k] = Mask
				continue
			}
			out[k] = redact(x[k], k, depth+1)
		}
		return out
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		return redact(m, key, depth)
	case []any:
		n := min(len(x), MaxItems)
		out := make([]any, 0, n+1)
		for _, e := range x[:n] {
			out = append(out, redact(e, key, depth+1))
		}
		if len(x) > n {
			out = append(out, fmt.Sprintf("… %d more items", len(x)-n))
		}
		return out
	case []string:
		a := make([]any, len(x))
		for i, s := range x {
			a[i] = s
		}
		return redact(a, key, depth)
	case string:
		max := MaxString
		if bodyKeyRE.MatchString(key) {
			max = SnippetLen
		}
		return RedactString(x, max)
	default:
		return v
	}
}

// isHarmless lets booleans and empty values under secret-like keys through
// ("token_count": 12 is not a secret; "password": "" hides nothing).
func isHarmless(v any) bool {
	switch x := v.(type) {
	case nil, bool:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case float64, int, int64:
		return true
	}
	return false
}
