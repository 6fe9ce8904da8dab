package settings

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// The editor works on lines, not on a parsed tree, so that everything it
// does not touch (comments, blank lines, key order, other tables) stays
// byte for byte. It understands what Hestia's config uses: [table] and
// [[array]] headers, `key = value` lines, and arrays spanning lines.

var (
	headerRE = lazyre.New(`^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$`)
	keyRE    = lazyre.New(`^\s*("[^"]*"|[A-Za-z0-9_-]+)\s*=`)
	// BareKey is what a table or key name may be without quoting.
	bareKey = lazyre.New(`^[A-Za-z0-9_-]+$`)
)

type doc struct{ lines []string }

func parseDoc(data []byte) *doc {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return &doc{}
	}
	return &doc{lines: strings.Split(s, "\n")}
}

func (d *doc) bytes() []byte {
	if len(d.lines) == 0 {
		return nil
	}
	return []byte(strings.Join(d.lines, "\n") + "\n")
}

// header returns the table name and whether the line is an array-of-tables header.
func header(line string) (name string, array, ok bool) {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "[") {
		return "", false, false
	}
	m := headerRE.FindStringSubmatch(t)
	if m == nil {
		return "", false, false
	}
	return normName(m[2]), m[1] == "[[", true
}

// normName drops quotes and spaces around dotted parts: [ llm . "tiers" ] → llm.tiers.
func normName(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// span is the line range [start, end) of a table's body (after its header).
type span struct{ head, start, end int }

// tables lists the spans of every header named name.
func (d *doc) tables(name string) []span {
	var out []span
	cur := -1
	for i, l := range d.lines {
		n, _, ok := header(l)
		if !ok {
			continue
		}
		if cur >= 0 {
			out[len(out)-1].end = i
			cur = -1
		}
		if n == name {
			out = append(out, span{head: i, start: i + 1, end: len(d.lines)})
			cur = i
		}
	}
	return out
}

// valueEnd returns the index after the last line of the value starting on
// line i (arrays may span lines).
func (d *doc) valueEnd(i int) int {
	_, v, _ := strings.Cut(d.lines[i], "=")
	depth := bracketDepth(v)
	j := i + 1
	for depth > 0 && j < len(d.lines) {
		depth += bracketDepth(d.lines[j])
		j++
	}
	return j
}

// bracketDepth counts [ minus ] outside strings and comments.
func bracketDepth(s string) int {
	depth := 0
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == '\\' && q == '"' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '#':
			return depth
		case c == '[':
			depth++
		case c == ']':
			depth--
		}
	}
	return depth
}

// comment returns the trailing "# …" of a one-line `key = value` line.
func comment(line string) string {
	var q byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case q != 0:
			if c == '\\' && q == '"' {
				i++
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '#':
			return strings.TrimSpace(line[i:])
		}
	}
	return ""
}

func keyOf(line string) string {
	m := keyRE.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], `"`)
}

// find returns the line of key inside span s, or -1.
func (d *doc) find(s span, key string) int {
	for i := s.start; i < s.end; i++ {
		if keyOf(d.lines[i]) == key {
			return i
		}
	}
	return -1
}

func quoteKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return fmt.Sprintf("%q", k)
}

func tableHeader(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = quoteKey(p)
	}
	return strings.Join(parts, ".")
}

// encode renders v as a TOML value. JSON numbers arrive as float64; whole
// ones are written as integers so integer keys decode (TOML integers also
// load into float keys).
func encode(v any) (string, error) {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return "", errors.New("text is not valid UTF-8")
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			v = int64(x)
		}
	case []any:
		ss := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return "", fmt.Errorf("list items must be strings, got %v", e)
			}
			if !utf8.ValidString(s) {
				return "", errors.New("text is not valid UTF-8")
			}
			ss = append(ss, s)
		}
		v = ss
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(map[string]any{"v": v}); err != nil {
		return "", err
	}
	_, val, ok := strings.Cut(strings.TrimSpace(buf.String()), "=")
	if !ok {
		return "", fmt.Errorf("cannot write %v as a TOML value", v)
	}
	return strings.TrimSpace(val), nil
}

// set writes key = value into the first [table] (created at the end when
// missing), replacing an existing value in place and keeping its comment.
func (d *doc) set(table, key string, value any) error {
	val, err := encode(value)
	if err != nil {
		return fmt.Errorf("%s.%s: %w", table, key, err)
	}
	line := quoteKey(key) + " = " + val
	ts := d.tables(table)
	if len(ts) == 0 {
		if len(d.lines) > 0 && strings.TrimSpace(d.lines[len(d.lines)-1]) != "" {
			d.lines = append(d.lines, "")
		}
		d.lines = append(d.lines, "["+tableHeader(table)+"]", line)
		return nil
	}
	return d.setLine(ts[0], key, line)
}

// setIn writes key = value into the table body s (one [[table]] entry),
// replacing an existing value in place and keeping its comment.
func (d *doc) setIn(s span, key string, value any) error {
	val, err := encode(value)
	if err != nil {
		return err
	}
	return d.setLine(s, key, quoteKey(key)+" = "+val)
}

func (d *doc) setLine(s span, key, line string) error {
	if i := d.find(s, key); i >= 0 {
		end := d.valueEnd(i)
		if c := comment(d.lines[i]); c != "" && end == i+1 {
			line += "  " + c
		}
		d.lines = append(d.lines[:i], append([]string{line}, d.lines[end:]...)...)
		return nil
	}
	// After the table's last non-blank line.
	at := s.start
	for i := s.start; i < s.end; i++ {
		if strings.TrimSpace(d.lines[i]) != "" {
			at = i + 1
		}
	}
	d.lines = append(d.lines[:at], append([]string{line}, d.lines[at:]...)...)
	return nil
}

// unset removes key from [table]; a missing key is not an error.
func (d *doc) unset(table, key string) {
	for _, s := range d.tables(table) {
		if i := d.find(s, key); i >= 0 {
			d.lines = append(d.lines[:i], d.lines[d.valueEnd(i):]...)
			return
		}
	}
}

// dropTable removes a whole [table] or one [[table]] entry (its header,
// body and the comments directly above its header).
func (d *doc) dropSpan(s span) {
	start := s.head
	for start > 0 && strings.HasPrefix(strings.TrimSpace(d.lines[start-1]), "#") {
		start--
	}
	end := s.end
	// Keep the comments that introduce the next table.
	for end > s.start && strings.HasPrefix(strings.TrimSpace(d.lines[end-1]), "#") && end < len(d.lines) {
		end--
	}
	d.lines = append(d.lines[:start], d.lines[end:]...)
	for len(d.lines) > 0 && strings.TrimSpace(d.lines[len(d.lines)-1]) == "" {
		d.lines = d.lines[:len(d.lines)-1]
	}
}

func (d *doc) dropTable(table string) {
	if ts := d.tables(table); len(ts) > 0 {
		d.dropSpan(ts[0])
	}
}

// dropEntry removes the [[table]] entry whose field = value.
func (d *doc) dropEntry(table, field, value string) bool {
	s, ok := d.findEntry(table, field, value)
	if ok {
		d.dropSpan(s)
	}
	return ok
}

// findEntry returns the span of the [[table]] entry whose field = value.
func (d *doc) findEntry(table, field, value string) (span, bool) {
	for _, s := range d.tables(table) {
		if i := d.find(s, field); i >= 0 {
			_, v, _ := strings.Cut(d.lines[i], "=")
			var got struct{ V string }
			if _, err := toml.Decode("v = "+strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), comment(v))), &struct {
				V *string `toml:"v"`
			}{&got.V}); err == nil && got.V == value {
				return s, true
			}
		}
	}
	return span{}, false
}

// unsetIn removes key from the table body s; a missing key is not an error.
func (d *doc) unsetIn(s span, key string) {
	if i := d.find(s, key); i >= 0 {
		d.lines = append(d.lines[:i], d.lines[d.valueEnd(i):]...)
	}
}

// appendEntry adds a [[table]] entry with fields in the given order.
func (d *doc) appendEntry(table string, fields [][2]any) error {
	block := []string{"[[" + tableHeader(table) + "]]"}
	for _, f := range fields {
		val, err := encode(f[1])
		if err != nil {
			return err
		}
		block = append(block, quoteKey(f[0].(string))+" = "+val)
	}
	if len(d.lines) > 0 && strings.TrimSpace(d.lines[len(d.lines)-1]) != "" {
		d.lines = append(d.lines, "")
	}
	d.lines = append(d.lines, block...)
	return nil
}
