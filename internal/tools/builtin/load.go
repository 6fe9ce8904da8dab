package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/tools"
)

// LoadDescription is tools_load's own description; the agent appends the
// catalogue of the groups it can load (one line per group, see
// tools.CatalogueText) when it offers the tool.
const LoadDescription = "Load the full definitions of one group of tools: they are added to your tools from your next step for the rest of this chat. Load a group before using its tools. Groups:"

// ToolsLoad returns the tools_load tool over reg. It changes nothing
// itself: the agent reads its successful calls from the transcript and
// offers the group's definitions from the next step on. Registering it is
// what turns on-demand loading on (see internal/agent).
func ToolsLoad(reg *tools.Registry) tools.Tool {
	return &tools.Func{
		S: tools.Spec{
			Name:        tools.LoadToolName,
			Description: LoadDescription,
			Schema: json.RawMessage(`{"type":"object","properties":{
"group":{"type":"string","minLength":1,"maxLength":100,"description":"A group name from the list, e.g. mail"}},
"required":["group"],"additionalProperties":false}`),
			Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true,
		},
		Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			var a struct {
				Group string `json:"group"`
			}
			if err := json.Unmarshal(c.Args, &a); err != nil {
				return tools.Result{}, fmt.Errorf("decoding tools_load arguments: %w", err)
			}
			g := strings.TrimSpace(a.Group)
			if g == tools.CoreGroup {
				return tools.Result{Content: "the core tools are always loaded"}, nil
			}
			var names []string
			for _, t := range reg.Available(ctx) {
				names = append(names, t.Spec().Name)
			}
			cat := tools.Catalogue(names)
			groups := make([]string, len(cat))
			for i, e := range cat {
				if e.Name == g {
					return tools.Result{Content: fmt.Sprintf("Loaded %s: %s. Their definitions are in your tools from your next step.", g, strings.Join(e.Tools, ", "))}, nil
				}
				groups[i] = e.Name
			}
			return tools.Result{Content: fmt.Sprintf("there is no tool group %q; the groups are: %s", g, strings.Join(groups, ", ")), IsError: true}, nil
		},
	}
}
