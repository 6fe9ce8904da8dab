package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxArgDepth bounds nesting of argument JSON; deeper input is refused
// rather than handed to tools, logs or strict readers downstream.
const maxArgDepth = 100

// ArgError is a refusal of a call's arguments. Its text is meant for the
// model: it names the tool, what is wrong, and that the call did not run.
type ArgError struct {
	Tool   string
	Reason string
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("arguments for %s %s; the call did not run.", e.Tool, e.Reason)
}

// DecodeArgs parses the model's raw argument text for tool into a JSON
// object and returns it as canonical JSON (sorted keys, no insignificant
// space). Empty or null input is {} (refused as missing when the schema has
// required fields). One layer of JSON string wrapped around an object is
// unwrapped, since some models double-encode. Duplicate keys with equal
// values are kept once; with different values the call is refused, because
// different readers would pick different values.
func DecodeArgs(tool string, raw string, schema json.RawMessage) (map[string]any, json.RawMessage, error) {
	trimmed := strings.TrimSpace(raw)
	if trimmed == "" || trimmed == "null" {
		if req := requiredOf(schema); len(req) > 0 {
			return nil, nil, &ArgError{Tool: tool, Reason: fmt.Sprintf("are missing (required: %s)", strings.Join(req, ", "))}
		}
		return map[string]any{}, json.RawMessage("{}"), nil
	}
	v, err := parseStrict(trimmed)
	if err != nil {
		return nil, nil, &ArgError{Tool: tool, Reason: "are not valid JSON: " + err.Error()}
	}
	if s, ok := v.(string); ok {
		inner := strings.TrimSpace(s)
		if strings.HasPrefix(inner, "{") {
			if iv, err := parseStrict(inner); err == nil {
				v = iv
			}
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, &ArgError{Tool: tool, Reason: "are not a JSON object (got " + jsonKind(v) + ")"}
	}
	if err := Validate(schema, obj); err != nil {
		return nil, nil, &ArgError{Tool: tool, Reason: "are invalid: " + err.Error()}
	}
	canon, err := Canonical(obj)
	if err != nil {
		return nil, nil, &ArgError{Tool: tool, Reason: "cannot be encoded: " + err.Error()}
	}
	return obj, canon, nil
}

// Canonical encodes v with sorted object keys and no HTML escaping.
func Canonical(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// parseStrict decodes one JSON value token by token so that duplicate keys,
// excessive depth, unpaired surrogates and out-of-range numbers are caught.
// Numbers stay json.Number so integers are not rounded through float64.
func parseStrict(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	p := &strictParser{dec: dec, src: s}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value (char %d of %d)", dec.InputOffset(), len(s))
	}
	return v, nil
}

type strictParser struct {
	dec *json.Decoder
	src string
}

func (p *strictParser) fail(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%s (char %d of %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset, len(p.src))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("unexpected end of JSON input (char %d of %d)", len(p.src), len(p.src))
	}
	return err
}

func (p *strictParser) value(depth int) (any, error) {
	if depth > maxArgDepth {
		return nil, fmt.Errorf("nesting deeper than %d levels", maxArgDepth)
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.fail(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.fail(err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is not a string (char %d of %d)", p.dec.InputOffset(), len(p.src))
				}
				if err := checkString(key); err != nil {
					return nil, err
				}
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				if prev, dup := obj[key]; dup {
					a, _ := Canonical(prev)
					b, _ := Canonical(v)
					if !bytes.Equal(a, b) {
						return nil, fmt.Errorf("key %q is given two different values", key)
					}
				}
				obj[key] = v
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.fail(err)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.fail(err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %q (char %d of %d)", t, p.dec.InputOffset(), len(p.src))
	case string:
		if err := checkString(t); err != nil {
			return nil, err
		}
		return t, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("number %s is out of range", t)
		}
		return t, nil
	default:
		return t, nil // bool or nil
	}
}

// checkString refuses strings that held an unpaired surrogate escape; the
// decoder replaces those with U+FFFD, which is a silent change of the model's
// input that we prefer to report.
func checkString(s string) error {
	if strings.ContainsRune(s, utf8.RuneError) {
		// A real U+FFFD in input is legal but rare; unpaired surrogates are
		// the common cause. Either way the value would not round-trip.
		for _, r := range s {
			if r == utf8.RuneError || utf16.IsSurrogate(r) {
				return errors.New("a string holds an unpaired surrogate or invalid UTF-8")
			}
		}
	}
	return nil
}

// requiredOf lists the schema's required top-level fields.
func requiredOf(schema json.RawMessage) []string {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return s.Required
}

// Validate checks obj against the subset of JSON Schema tools use: type
// (string, integer, number, boolean, array, object, or a list of them),
// properties, required, additionalProperties false, enum, items,
// minimum/maximum, minLength/maxLength, maxItems. Errors name the field path.
func Validate(schema json.RawMessage, obj map[string]any) error {
	if len(schema) == 0 {
		if len(obj) > 0 {
			keys := sortedKeys(obj)
			return fmt.Errorf("unexpected field %q: the tool takes no arguments", keys[0])
		}
		return nil
	}
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("tool schema is broken: %w", err)
	}
	return validateValue(s, obj, "")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func fieldName(path string) string {
	if path == "" {
		return "arguments"
	}
	return "field " + strconv.Quote(path)
}

func validateValue(s map[string]any, v any, path string) error {
	if types := schemaTypes(s["type"]); len(types) > 0 {
		ok := false
		for _, t := range types {
			if typeMatches(t, v) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%s must be %s, not %s", fieldName(path), strings.Join(types, " or "), jsonKind(v))
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		cv, _ := Canonical(v)
		found := false
		var allowed []string
		for _, e := range enum {
			ce, _ := Canonical(e)
			allowed = append(allowed, string(ce))
			if bytes.Equal(normalizeNumberJSON(ce), normalizeNumberJSON(cv)) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s must be one of %s, not %s", fieldName(path), strings.Join(allowed, ", "), cv)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			var missing []string
			for _, r := range req {
				name, _ := r.(string)
				if _, present := x[name]; !present {
					missing = append(missing, join(path, name))
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("missing required field %s", quoteAll(missing))
			}
		}
		for _, k := range sortedKeys(x) {
			ps, known := props[k].(map[string]any)
			if !known {
				if ap, ok := s["additionalProperties"].(bool); ok && !ap {
					names := make([]string, 0, len(props))
					for n := range props {
						names = append(names, n)
					}
					sort.Strings(names)
					return fmt.Errorf("unexpected field %q (known: %s)", join(path, k), strings.Join(names, ", "))
				}
				continue
			}
			if err := validateValue(ps, x[k], join(path, k)); err != nil {
				return err
			}
		}
	case []any:
		if mi, ok := num(s["maxItems"]); ok && float64(len(x)) > mi {
			return fmt.Errorf("%s has %d items, at most %v allowed", fieldName(path), len(x), mi)
		}
		if is, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				if err := validateValue(is, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case string:
		n := utf8.RuneCountInString(x)
		if ml, ok := num(s["minLength"]); ok && float64(n) < ml {
			return fmt.Errorf("%s must be at least %v characters", fieldName(path), ml)
		}
		if ml, ok := num(s["maxLength"]); ok && float64(n) > ml {
			return fmt.Errorf("%s must be at most %v characters, got %d", fieldName(path), ml, n)
		}
	case json.Number:
		f, _ := x.Float64()
		if m, ok := num(s["minimum"]); ok && f < m {
			return fmt.Errorf("%s must be at least %v, got %s", fieldName(path), m, x)
		}
		if m, ok := num(s["maximum"]); ok && f > m {
			return fmt.Errorf("%s must be at most %v, got %s", fieldName(path), m, x)
		}
	}
	return nil
}

func normalizeNumberJSON(b []byte) []byte {
	if f, err := strconv.ParseFloat(string(b), 64); err == nil {
		return []byte(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return b
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func schemaTypes(t any) []string {
	switch x := t.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func typeMatches(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		switch v.(type) {
		case json.Number, float64:
			return true
		}
	case "integer":
		switch n := v.(type) {
		case json.Number:
			if _, err := n.Int64(); err == nil {
				return true
			}
			f, err := n.Float64()
			return err == nil && f == math.Trunc(f)
		case float64:
			return n == math.Trunc(n)
		}
	}
	return false
}

// Args is a small typed view over validated arguments for tool authors.
type Args map[string]any

// ParseArgs decodes canonical arguments into an Args view.
func ParseArgs(raw json.RawMessage) (Args, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var a Args
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("decoding arguments: %w", err)
	}
	if a == nil {
		a = Args{}
	}
	return a, nil
}

// String returns a string argument or def when absent.
func (a Args) String(k, def string) string {
	if s, ok := a[k].(string); ok {
		return s
	}
	return def
}

// Int returns an integer argument or def when absent.
func (a Args) Int(k string, def int) int {
	switch n := a[k].(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
		if f, err := n.Float64(); err == nil {
			return int(f)
		}
	case float64:
		return int(n)
	}
	return def
}

// Bool returns a boolean argument or def when absent.
func (a Args) Bool(k string, def bool) bool {
	if b, ok := a[k].(bool); ok {
		return b
	}
	return def
}
