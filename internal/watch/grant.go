package watch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

var placeholderRE = lazyre.New(`\{\{\s*([a-zA-Z0-9_.]+)\s*\}\}`)

// renderTemplate fills {{event.<path>}} and {{watch.<field>}} from vars.
// With check set, every placeholder must resolve; without it (creation
// time) only the syntax is checked.
func renderTemplate(tmpl string, vars map[string]any, check bool) (string, error) {
	if strings.Count(tmpl, "{{") != len(placeholderRE.FindAllString(tmpl, -1)) {
		return "", fmt.Errorf("template %q has a malformed placeholder (use {{event.path}} or {{watch.ref}})", tmpl)
	}
	var bad error
	out := placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		path := placeholderRE.FindStringSubmatch(m)[1]
		if !strings.HasPrefix(path, "event.") && !strings.HasPrefix(path, "watch.") {
			bad = fmt.Errorf("template placeholder %q must start with \"event.\" or \"watch.\"", path)
			return ""
		}
		if !check {
			return ""
		}
		v, ok := lookup(vars, path)
		if !ok {
			bad = fmt.Errorf("template placeholder %q has no value in this event", path)
			return ""
		}
		switch x := v.(type) {
		case string:
			return x
		default:
			b, _ := json.Marshal(x)
			return string(b)
		}
	})
	return out, bad
}

// GrantCheck is the outcome of checking one call against a rule's grants.
type GrantCheck struct {
	OK     bool
	Grant  *Grant
	Reason string // why it is not granted
}

// checkGrant decides whether a call (canonical JSON args) is within one of
// the grants: same tool, every argument constrained and within its
// constraint, no extra fields.
func checkGrant(grants []Grant, tool string, args json.RawMessage, vars map[string]any) GrantCheck {
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return GrantCheck{Reason: "arguments are not a JSON object"}
	}
	reason := fmt.Sprintf("no grant for %s", tool)
	for i := range grants {
		g := &grants[i]
		if g.Tool != tool {
			continue
		}
		if r := checkArgs(g, obj, vars); r != "" {
			reason = r
			continue
		}
		return GrantCheck{OK: true, Grant: g}
	}
	return GrantCheck{Reason: reason}
}

func checkArgs(g *Grant, obj map[string]any, vars map[string]any) string {
	for k := range obj {
		if _, ok := g.Args[k]; !ok {
			return fmt.Sprintf("argument %q is not allowed by the grant (extra fields are refused)", k)
		}
	}
	for k, c := range g.Args {
		v, present := obj[k]
		if !present {
			continue // an omitted optional argument takes the tool's default
		}
		switch {
		case c.Exact != nil:
			if !jsonEqual(v, c.Exact) {
				return fmt.Sprintf("argument %q must be exactly %s", k, mustJSON(c.Exact))
			}
		case c.Set != nil:
			if !slices.ContainsFunc(c.Set, func(x any) bool { return jsonEqual(v, x) }) {
				return fmt.Sprintf("argument %q must be one of %s", k, mustJSON(c.Set))
			}
		case c.Min != nil || c.Max != nil:
			f, ok := v.(float64)
			if !ok || (c.Min != nil && f < *c.Min) || (c.Max != nil && f > *c.Max) {
				return fmt.Sprintf("argument %q is outside the granted range", k)
			}
		case c.Template != "":
			want, err := renderTemplate(c.Template, vars, true)
			if err != nil {
				return err.Error()
			}
			if s, ok := v.(string); !ok || s != want {
				return fmt.Sprintf("argument %q must be %q", k, want)
			}
		}
	}
	return ""
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
