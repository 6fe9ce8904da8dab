package llm

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// Small local models often write a tool call as text instead of in the
// structured field: the server's template parser misses it when the model
// slips (Qwen's "<tool_call>{…}" without the newline the template expects),
// or the server has no parser for the model's format at all. The router
// recovers such calls from the reply's content, for the formats below, and
// keeps the markup out of the text the user sees.
//
// A recovered call is kept only when it names a tool offered in the request
// and its arguments are a JSON object; otherwise the text is shown as the
// model wrote it (nothing is run on a guess).
var toolMarkers = []string{
	"<tool_call>",    // Hermes, Qwen 2.5/3
	"<|python_tag|>", // Llama 3.1+
	"[TOOL_CALLS]",   // Mistral
}

// callFilter sits between a backend's text deltas and the caller: it
// passes text through, holds back anything that may be the start of tool
// markup, and at the end either turns the held text into calls or releases
// it as text.
type callFilter struct {
	known     map[string]bool
	pending   string // held back, not yet shown
	capturing bool   // a marker or a leading '{' was seen: hold to the end
	started   bool   // non-space text has been shown
}

func newCallFilter(tools []ToolDef) *callFilter {
	if len(tools) == 0 {
		return nil
	}
	f := &callFilter{known: make(map[string]bool, len(tools))}
	for _, t := range tools {
		f.known[t.Name] = true
	}
	return f
}

// feed takes one text delta and returns the text that is safe to show now.
func (f *callFilter) feed(delta string) string {
	f.pending += delta
	if f.capturing {
		return ""
	}
	if !f.started {
		trimmed := strings.TrimLeftFunc(f.pending, unicode.IsSpace)
		if trimmed == "" {
			return ""
		}
		if trimmed[0] == '{' {
			// A reply that opens with an object may be a bare call.
			f.capturing = true
			return ""
		}
	}
	if i := firstMarker(f.pending); i >= 0 {
		out := f.pending[:i]
		f.pending = f.pending[i:]
		f.capturing = true
		f.markShown(out)
		return out
	}
	// Hold back a tail that could grow into a marker.
	hold := 0
	for _, m := range toolMarkers {
		for n := min(len(m)-1, len(f.pending)); n > hold; n-- {
			if strings.HasSuffix(f.pending, m[:n]) {
				hold = n
				break
			}
		}
	}
	out := f.pending[:len(f.pending)-hold]
	f.pending = f.pending[len(f.pending)-hold:]
	f.markShown(out)
	return out
}

func (f *callFilter) markShown(s string) {
	if strings.TrimSpace(s) != "" {
		f.started = true
	}
}

// finish returns the held text still to show and the recovered calls.
func (f *callFilter) finish() (string, []ToolCall) {
	rest := f.pending
	f.pending = ""
	if !f.capturing {
		return rest, nil
	}
	calls, tail, ok := parseToolText(rest, f.known)
	if !ok {
		return rest, nil
	}
	return tail, calls
}

func firstMarker(s string) int {
	best := -1
	for _, m := range toolMarkers {
		if i := strings.Index(s, m); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

// RecoverToolCalls returns the tool calls written as text in s (a whole
// reply) and the text left to show, for calls naming one of known. ok is
// false when s holds no recoverable call.
func RecoverToolCalls(s string, known []string) (calls []ToolCall, text string, ok bool) {
	defs := make([]ToolDef, len(known))
	for i, n := range known {
		defs[i] = ToolDef{Name: n}
	}
	f := newCallFilter(defs)
	if f == nil {
		return nil, s, false
	}
	shown := f.feed(s)
	tail, calls := f.finish()
	return calls, shown + tail, len(calls) > 0
}

// parseToolText parses s, which starts at a marker or at '{', into calls.
// Text that follows the calls is returned as tail. ok is false when a call
// is malformed or names an unknown tool, or when nothing was found.
func parseToolText(s string, known map[string]bool) (calls []ToolCall, tail string, ok bool) {
	i := 0
	for {
		i = skipSpace(s, i)
		if i >= len(s) {
			break
		}
		rest := s[i:]
		var got []ToolCall
		var n int
		switch {
		case strings.HasPrefix(rest, "<tool_call>"):
			got, n, ok = parseHermes(rest, known)
		case strings.HasPrefix(rest, "<|python_tag|>"):
			got, n, ok = parseJSONCalls(rest, len("<|python_tag|>"), known)
		case strings.HasPrefix(rest, "[TOOL_CALLS]"):
			got, n, ok = parseMistral(rest, known)
		case rest[0] == '{' && len(calls) == 0 && i == skipSpace(s, 0):
			got, n, ok = parseJSONCalls(rest, 0, known)
		default:
			ok = len(calls) > 0
			if ok {
				tail = rest
			}
			return calls, tail, ok
		}
		if !ok {
			return nil, "", false
		}
		calls = append(calls, got...)
		i += n
		// Llama 3 ends a call with <|eom_id|> or <|eot_id|> when the server
		// leaves them in.
		for _, end := range []string{"<|eom_id|>", "<|eot_id|>"} {
			if j := skipSpace(s, i); strings.HasPrefix(s[j:], end) {
				i = j + len(end)
			}
		}
	}
	return calls, "", len(calls) > 0
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	return i
}

// parseHermes reads "<tool_call>" JSON "</tool_call>"; the closing tag may
// be missing at the end of the reply.
func parseHermes(s string, known map[string]bool) ([]ToolCall, int, bool) {
	calls, n, ok := parseJSONCalls(s, len("<tool_call>"), known)
	if !ok {
		return nil, 0, false
	}
	j := skipSpace(s, n)
	switch {
	case strings.HasPrefix(s[j:], "</tool_call>"):
		return calls, j + len("</tool_call>"), true
	case j == len(s):
		return calls, j, true
	}
	return nil, 0, false
}

// parseMistral reads "[TOOL_CALLS]" followed by a JSON array (v3) or by
// name[ARGS]{…} pairs (v11 tokenizers).
func parseMistral(s string, known map[string]bool) ([]ToolCall, int, bool) {
	i := skipSpace(s, len("[TOOL_CALLS]"))
	if i < len(s) && (s[i] == '[' || s[i] == '{') {
		return parseJSONCalls(s, i, known)
	}
	var calls []ToolCall
	for {
		k := strings.Index(s[i:], "[ARGS]")
		if k <= 0 {
			break
		}
		name := strings.TrimSpace(s[i : i+k])
		if !known[name] || strings.ContainsAny(name, " \n{[") {
			return nil, 0, false
		}
		args, n, ok := decodeOne(s, i+k+len("[ARGS]"))
		if !ok {
			return nil, 0, false
		}
		a, ok := argsObject(args)
		if !ok {
			return nil, 0, false
		}
		calls = append(calls, ToolCall{ID: missingCallID(len(calls)), Name: name, Arguments: a})
		i = n
		if j := skipSpace(s, i); strings.HasPrefix(s[j:], "[TOOL_CALLS]") {
			i = skipSpace(s, j+len("[TOOL_CALLS]"))
			continue
		}
		break
	}
	return calls, i, len(calls) > 0
}

// parseJSONCalls decodes, from s[at:], one or more call objects (an
// array, or objects separated by space or ';').
func parseJSONCalls(s string, at int, known map[string]bool) ([]ToolCall, int, bool) {
	var calls []ToolCall
	i := at
	for {
		raw, n, ok := decodeOne(s, i)
		if !ok {
			break
		}
		var objs []json.RawMessage
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
			if json.Unmarshal(raw, &objs) != nil {
				return nil, 0, false
			}
		} else {
			objs = []json.RawMessage{raw}
		}
		for _, o := range objs {
			c, ok := callObject(o, known)
			if !ok {
				return nil, 0, false
			}
			c.ID = missingCallID(len(calls))
			calls = append(calls, c)
		}
		i = n
		j := skipSpace(s, i)
		if j < len(s) && s[j] == ';' {
			j = skipSpace(s, j+1)
		}
		if j < len(s) && (s[j] == '{' || s[j] == '[') {
			i = j
			continue
		}
		break
	}
	return calls, i, len(calls) > 0
}

// decodeOne decodes one JSON value starting at s[i:] (after spaces) and
// returns it with the offset just past it.
func decodeOne(s string, i int) (json.RawMessage, int, bool) {
	i = skipSpace(s, i)
	if i >= len(s) || (s[i] != '{' && s[i] != '[') {
		return nil, 0, false
	}
	dec := json.NewDecoder(strings.NewReader(s[i:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, 0, false
	}
	return raw, i + int(dec.InputOffset()), true
}

// callObject reads {"name": …, "arguments"|"parameters": {…}}.
func callObject(raw json.RawMessage, known map[string]bool) (ToolCall, bool) {
	var o struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal(raw, &o) != nil || !known[o.Name] {
		return ToolCall{}, false
	}
	args := o.Arguments
	if len(args) == 0 {
		args = o.Parameters
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	a, ok := argsObject(args)
	if !ok {
		return ToolCall{}, false
	}
	return ToolCall{Name: o.Name, Arguments: a}, true
}

// argsObject accepts a JSON object, or a string holding one (some
// templates encode arguments twice).
func argsObject(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		raw = json.RawMessage(strings.TrimSpace(s))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return "", false
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return "", false
	}
	return b.String(), true
}
