package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

var schema = json.RawMessage(`{"type":"object","properties":{
"path":{"type":"string","minLength":1,"maxLength":10},
"n":{"type":"integer","minimum":1,"maximum":5},
"mode":{"type":"string","enum":["a","b"]},
"tags":{"type":"array","items":{"type":"string"},"maxItems":2},
"opts":{"type":"object","properties":{"deep":{"type":"boolean"}},"required":["deep"]}},
"required":["path"],"additionalProperties":false}`)

func TestDecodeArgs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, raw string
		want      string // canonical on success
		err       string // substring on failure
	}{
		{"ok", `{"path":"a","n":2}`, `{"n":2,"path":"a"}`, ""},
		{"whitespace and order", " {\n \"n\" : 3 , \"path\":\"b\"} ", `{"n":3,"path":"b"}`, ""},
		{"double encoded", `"{\"path\":\"x\"}"`, `{"path":"x"}`, ""},
		{"equal duplicate kept once", `{"path":"a","path":"a"}`, `{"path":"a"}`, ""},
		{"empty with required", ``, "", "are missing (required: path)"},
		{"null with required", `null`, "", "are missing (required: path)"},
		{"explicit empty object", `{}`, "", `missing required field "path"`},
		{"invalid", `{"path":`, "", "are not valid JSON"},
		{"trailing data", `{"path":"a"} {}`, "", "data after the JSON value"},
		{"array", `[1]`, "", "not a JSON object (got array)"},
		{"string", `"hello"`, "", "not a JSON object (got string)"},
		{"number", `12`, "", "not a JSON object (got number)"},
		{"dup different", `{"path":"a","path":"b"}`, "", `key "path" is given two different values`},
		{"dup nested different", `{"path":"a","opts":{"deep":true,"deep":false}}`, "", `key "deep" is given two different values`},
		{"wrong type", `{"path":1}`, "", `field "path" must be string, not number`},
		{"not integer", `{"path":"a","n":1.5}`, "", `field "n" must be integer`},
		{"below minimum", `{"path":"a","n":0}`, "", `field "n" must be at least 1`},
		{"above maximum", `{"path":"a","n":9}`, "", `field "n" must be at most 5`},
		{"too long", `{"path":"aaaaaaaaaaaa"}`, "", `at most 10 characters`},
		{"enum", `{"path":"a","mode":"c"}`, "", `field "mode" must be one of "a", "b"`},
		{"unknown field", `{"path":"a","approved":true}`, "", `unexpected field "approved"`},
		{"array item type", `{"path":"a","tags":[1]}`, "", `field "tags[0]" must be string`},
		{"too many items", `{"path":"a","tags":["a","b","c"]}`, "", "has 3 items, at most 2"},
		{"nested required", `{"path":"a","opts":{}}`, "", `missing required field "opts.deep"`},
		{"huge number", `{"path":"a","n":1e400}`, "", "out of range"},
		{"unpaired surrogate", `{"path":"\ud800"}`, "", "unpaired surrogate"},
		{"deep nesting", `{"path":"a","opts":` + strings.Repeat(`[`, 150) + strings.Repeat(`]`, 150) + `}`, "", "nesting deeper than 100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, canon, err := DecodeArgs("probe", c.raw, schema)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				if !strings.HasPrefix(err.Error(), "arguments for probe ") || !strings.HasSuffix(err.Error(), "the call did not run.") {
					t.Errorf("error does not name the tool and the outcome: %v", err)
				}
				return
			}
			if err != nil || string(canon) != c.want {
				t.Fatalf("canon = %s, err = %v; want %s", canon, err, c.want)
			}
		})
	}
}

func TestNoSchemaTool(t *testing.T) {
	t.Parallel()
	if _, c, err := DecodeArgs("now", "", nil); err != nil || string(c) != "{}" {
		t.Fatalf("empty args: %s %v", c, err)
	}
	if _, _, err := DecodeArgs("now", `{"x":1}`, nil); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Fatalf("extra args accepted: %v", err)
	}
}

func TestCap(t *testing.T) {
	t.Parallel()
	if got := Cap("short", 10); got != "short" {
		t.Errorf("short: %q", got)
	}
	got := Cap(strings.Repeat("é", 20), 5)
	if !strings.HasPrefix(got, "ééééé\n[result truncated: showed 5 of 20 characters]") {
		t.Errorf("cut: %q", got)
	}
	if got := Cap(strings.Repeat("x", DefaultMaxResult+1), 0); !strings.Contains(got, "showed 100000 of 100001") {
		t.Errorf("default cap not applied: %q", got[len(got)-60:])
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	ok := &Func{S: Spec{Name: "mail_search", Risk: RiskLow}}
	if err := r.Register(ok); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Tool{
		&Func{S: Spec{Name: "mail_search"}},
		&Func{S: Spec{Name: "Bad-Name"}},
		&Func{S: Spec{Name: "x", Schema: json.RawMessage(`[1]`)}},
	} {
		if err := r.Register(bad); err == nil {
			t.Errorf("registered %q", bad.Spec().Name)
		}
	}
	if err := r.Register(&Func{S: Spec{Name: "mcp__srv__tool"}, Check: func(ctxCtx) error { return errUnavailable }}); err != nil {
		t.Fatal(err)
	}
	if got := len(r.Available(ctxBG())); got != 1 {
		t.Errorf("available = %d, want 1 (unavailable tool offered)", got)
	}
	if _, err := r.Get("nope"); err == nil {
		t.Error("unknown tool found")
	}
}

func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, `{"path":"a","path":"b"}`, `[]`, `"{\"path\":\"x\"}"`, ``, `{"a":{"b":[1,2,{"c":null}]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		obj, canon, err := DecodeArgs("fuzz", raw, json.RawMessage(`{"type":"object"}`))
		if err != nil {
			return
		}
		// Accepted arguments are always a JSON object that round-trips.
		var back map[string]any
		if json.Unmarshal(canon, &back) != nil || obj == nil {
			t.Fatalf("accepted %q but canonical %q is not an object", raw, canon)
		}
		_, canon2, err := DecodeArgs("fuzz", string(canon), json.RawMessage(`{"type":"object"}`))
		if err != nil || string(canon2) != string(canon) {
			t.Fatalf("canonical form is not stable: %q → %q (%v)", canon, canon2, err)
		}
	})
}
