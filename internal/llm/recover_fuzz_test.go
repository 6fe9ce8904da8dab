package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRecoverToolCalls checks the recovery parser on any text: it never
// panics, a recovered call names an offered tool and carries a JSON
// object, and the result does not depend on how the text was split into
// stream deltas. Seeds: testdata/fuzz/FuzzRecoverToolCalls.
func FuzzRecoverToolCalls(f *testing.F) {
	f.Add(`<tool_call>{"name": "list_dir", "arguments": {"path": "~"}}</tool_call>`, 5)
	f.Add(`[TOOL_CALLS]read_file[ARGS]{"path": "c"}`, 13)
	f.Add(`<|python_tag|>{"name": "list_dir", "parameters": {}}; {"name": "read_file", "parameters": {"path": "x"}}`, 1)
	known := map[string]bool{"list_dir": true, "read_file": true}
	f.Fuzz(func(t *testing.T, text string, split int) {
		whole := newCallFilter([]ToolDef{{Name: "list_dir"}, {Name: "read_file"}})
		shown := whole.feed(text)
		tail, calls := whole.finish()
		for _, c := range calls {
			var obj map[string]any
			if !known[c.Name] || json.Unmarshal([]byte(c.Arguments), &obj) != nil || obj == nil {
				t.Fatalf("bad call %+v from %q", c, text)
			}
		}
		if len(calls) == 0 && shown+tail != text {
			t.Fatalf("text changed without a call: %q → %q", text, shown+tail)
		}
		if split < 0 {
			split = -split
		}
		if len(text) > 0 {
			split %= len(text) + 1
		} else {
			split = 0
		}
		parts := newCallFilter([]ToolDef{{Name: "list_dir"}, {Name: "read_file"}})
		shown2 := parts.feed(text[:split])
		shown2 += parts.feed(text[split:])
		tail2, calls2 := parts.finish()
		if shown2+tail2 != shown+tail || len(calls2) != len(calls) {
			t.Fatalf("split at %d changes the result of %q: %q+%d calls vs %q+%d calls", split, text, shown2+tail2, len(calls2), shown+tail, len(calls))
		}
		for i := range calls {
			if calls[i].Name != calls2[i].Name || calls[i].Arguments != calls2[i].Arguments {
				t.Fatalf("split changes call %d", i)
			}
		}
		if len(calls) > 0 && strings.Contains(shown, "<tool_call>") {
			t.Fatalf("markup shown before a recovered call: %q", shown)
		}
	})
}
