package wiki

import (
	"bytes"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// FrontMatter is the YAML block at the top of a page. Unknown keys are kept
// by the file (the wiki never rewrites a user's front matter it did not
// write) but are not indexed.
type FrontMatter struct {
	Title    string   `yaml:"title,omitempty" json:"title,omitempty"`
	Tags     []string `yaml:"tags,omitempty" json:"tags,omitempty"`
	Created  string   `yaml:"created,omitempty" json:"created,omitempty"`
	Updated  string   `yaml:"updated,omitempty" json:"updated,omitempty"`
	Sources  []string `yaml:"sources,omitempty" json:"sources,omitempty"`
	ReviewBy string   `yaml:"review_by,omitempty" json:"review_by,omitempty"`
}

// Page is one parsed Markdown file.
type Page struct {
	FrontMatter
	// HasFrontMatter is false when the file has no YAML block at all.
	HasFrontMatter bool
	// Body is the text after the front matter, valid UTF-8.
	Body     string
	Links    []Link
	Problems []string
}

// Link is one [[wikilink]] found in a page body.
type Link struct {
	Target  string `json:"target"`
	Heading string `json:"heading,omitempty"`
	Alias   string `json:"alias,omitempty"`
	Line    int    `json:"line"`
	Embed   bool   `json:"embed,omitempty"`
}

// maxFrontMatter bounds the YAML block: a page whose "front matter" runs on
// for longer is treated as having none (and lint says so), which keeps a
// pathological file from reaching the YAML decoder whole.
const maxFrontMatter = 64 << 10

// ParsePage parses raw file bytes. It never fails: anything wrong (invalid
// UTF-8, malformed or oversized front matter, odd field types) is reported
// in Problems and the rest is indexed as far as possible.
func ParsePage(raw []byte) Page {
	var p Page
	if !utf8.Valid(raw) {
		p.Problems = append(p.Problems, "invalid UTF-8 (replaced)")
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	text := strings.TrimPrefix(string(raw), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	fm, body, found, err := splitFrontMatter(text)
	p.Body = body
	if found {
		p.HasFrontMatter = true
		if err != nil {
			p.Problems = append(p.Problems, "malformed front matter: "+err.Error())
		} else {
			p.FrontMatter, p.Problems = decodeFrontMatter(fm, p.Problems)
		}
	}
	p.Links = ParseLinks(body)
	return p
}

// splitFrontMatter finds a leading "---" block closed by "---" or "...".
func splitFrontMatter(text string) (fm, body string, found bool, err error) {
	if !strings.HasPrefix(text, "---\n") && text != "---" {
		return "", text, false, nil
	}
	rest := strings.TrimPrefix(text, "---")
	rest = strings.TrimPrefix(rest, "\n")
	off := 0
	for off <= len(rest) {
		nl := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if nl >= 0 {
			line = rest[off : off+nl]
		}
		if l := strings.TrimRight(line, " \t"); l == "---" || l == "..." {
			fm = rest[:off]
			if nl < 0 {
				return fm, "", true, nil
			}
			return fm, rest[off+nl+1:], true, nil
		}
		if off > maxFrontMatter {
			return "", text, true, fmt.Errorf("no closing --- within %d KiB", maxFrontMatter>>10)
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	return "", text, true, fmt.Errorf("no closing --- line")
}

// decodeFrontMatter reads the known keys leniently: a scalar where a list
// is expected becomes a one-item list, dates may be YAML timestamps or
// strings, and a wrong type is a problem, not a failure.
func decodeFrontMatter(fm string, problems []string) (FrontMatter, []string) {
	var out FrontMatter
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(fm), &raw); err != nil {
		return out, append(problems, "malformed front matter: "+firstLine(err.Error()))
	}
	str := func(key string) string {
		v, ok := raw[key]
		if !ok || v == nil {
			return ""
		}
		switch x := v.(type) {
		case string:
			return x
		case time.Time:
			if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 {
				return x.Format(time.DateOnly)
			}
			return x.Format(time.RFC3339)
		case int, int64, float64, bool:
			return fmt.Sprint(x)
		}
		problems = append(problems, fmt.Sprintf("front matter %q is not text", key))
		return ""
	}
	list := func(key string) []string {
		v, ok := raw[key]
		if !ok || v == nil {
			return nil
		}
		switch x := v.(type) {
		case string:
			if x == "" {
				return nil
			}
			return []string{x}
		case []any:
			var out []string
			for _, it := range x {
				switch y := it.(type) {
				case string:
					out = append(out, y)
				case map[string]any:
					// sources: [{uri: hestia://…, note: …}]
					if u, ok := y["uri"].(string); ok {
						out = append(out, u)
						continue
					}
					problems = append(problems, fmt.Sprintf("front matter %q has an entry without uri", key))
				case nil:
				default:
					out = append(out, fmt.Sprint(y))
				}
			}
			return out
		}
		problems = append(problems, fmt.Sprintf("front matter %q is not a list", key))
		return nil
	}
	out.Title = str("title")
	out.Created = str("created")
	out.Updated = str("updated")
	out.ReviewBy = str("review_by")
	out.Tags = list("tags")
	out.Sources = list("sources")
	if out.ReviewBy != "" {
		if _, err := parseDate(out.ReviewBy); err != nil {
			problems = append(problems, fmt.Sprintf("review_by %q is not a date (YYYY-MM-DD)", out.ReviewBy))
		}
	}
	return out, problems
}

func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ParseLinks returns the [[wikilinks]] of a Markdown body: [[target]],
// [[target|alias]], [[target#heading]], ![[embeds]]. Links inside fenced
// code blocks and inline code spans are examples, not edges.
func ParseLinks(body string) []Link {
	var out []Link
	fence := ""
	for i, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		out = append(out, lineLinks(line, i+1)...)
		if len(out) >= maxLinksPerPage {
			return out[:maxLinksPerPage]
		}
	}
	return out
}

// maxLinksPerPage bounds the link rows one page can add to the graph.
const maxLinksPerPage = 5000

func lineLinks(line string, n int) []Link {
	var out []Link
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '`':
			// Skip an inline code span: a run of backticks up to the same
			// run closing it; an unclosed run is literal text.
			j := i
			for j < len(line) && line[j] == '`' {
				j++
			}
			run := line[i:j]
			if k := strings.Index(line[j:], run); k >= 0 {
				i = j + k + len(run) - 1
			} else {
				i = j - 1
			}
		case strings.HasPrefix(line[i:], "[["):
			end := strings.Index(line[i+2:], "]]")
			if end < 0 {
				return out
			}
			inner := line[i+2 : i+2+end]
			embed := i > 0 && line[i-1] == '!'
			if l, ok := parseLink(inner); ok {
				l.Line, l.Embed = n, embed
				out = append(out, l)
			}
			i += 2 + end + 1
		}
	}
	return out
}

func parseLink(inner string) (Link, bool) {
	if strings.ContainsAny(inner, "[\n") || len(inner) > 512 {
		return Link{}, false
	}
	var l Link
	target := inner
	if k := strings.IndexByte(target, '|'); k >= 0 {
		l.Alias = strings.TrimSpace(target[k+1:])
		target = target[:k]
	}
	if k := strings.IndexByte(target, '#'); k >= 0 {
		l.Heading = strings.TrimSpace(target[k+1:])
		target = target[:k]
	}
	l.Target = strings.TrimSpace(target)
	if l.Target == "" && l.Heading == "" {
		return Link{}, false
	}
	return l, true
}

// LinkKey normalises a link target or a page name for resolution: lower
// case, forward slashes, no .md extension, no leading "./" or "/".
func LinkKey(s string) string {
	s = strings.ToLower(strings.TrimSpace(strings.ReplaceAll(s, "\\", "/")))
	s = strings.TrimPrefix(s, "./")
	s = strings.TrimPrefix(s, "/")
	s = strings.TrimSuffix(s, ".md")
	return s
}

// Render writes front matter and body back into a file.
func Render(fm FrontMatter, body string) ([]byte, error) {
	b, err := yaml.Marshal(fm)
	if err != nil {
		return nil, fmt.Errorf("encoding front matter: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString("---\n")
	buf.Write(b)
	buf.WriteString("---\n")
	buf.WriteString(body)
	return buf.Bytes(), nil
}
