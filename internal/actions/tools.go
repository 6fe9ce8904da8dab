package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/tools"
)

// Tools returns actions_list, action_read and flow_create. With a nil
// center they only describe themselves (the security suite).
func Tools(c *Center) []tools.Tool {
	avail := func(ctx context.Context) error {
		if c == nil {
			return errors.New("the Action Center is not running")
		}
		return nil
	}
	return []tools.Tool{
		&tools.Func{S: tools.Spec{Name: "actions_list", Description: "List Action Center items (work found in new mail): id, kind, priority, deadline, summary, state. Open items unless state is given.",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"state":{"type":"string","enum":["new","read","done","dismissed","all"]},"kind":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100}}}`),
			Risk:   tools.RiskLow, ReadOnly: true, ParallelSafe: true}, Check: avail,
			Fn: func(ctx context.Context, call tools.Call) (tools.Result, error) {
				var a struct {
					State, Kind string
					Limit       int
				}
				json.Unmarshal(call.Args, &a)
				if a.Limit == 0 {
					a.Limit = 20
				}
				items, counts, err := c.List(ctx, Filter{State: a.State, Kind: a.Kind, Limit: a.Limit})
				if err != nil {
					return tools.Result{}, err
				}
				type row struct {
					ID       int64   `json:"id"`
					Kind     string  `json:"kind"`
					Priority string  `json:"priority"`
					Deadline *string `json:"deadline,omitempty"`
					Summary  string  `json:"summary"`
					State    string  `json:"state"`
					Steps    int     `json:"steps"`
				}
				out := []row{}
				for _, it := range items {
					r := row{ID: it.ID, Kind: it.Kind, Priority: it.Priority, Summary: snippet(it.Summary, 200), State: it.State, Steps: len(it.Steps)}
					if it.Deadline != nil {
						d := it.Deadline.Format("2006-01-02T15:04Z07:00")
						r.Deadline = &d
					}
					out = append(out, r)
				}
				b, _ := json.Marshal(map[string]any{"actions": out, "counts": counts})
				return tools.Result{Content: string(b)}, nil
			}},
		&tools.Func{S: tools.Spec{Name: "action_read", Description: "Read one Action Center item with its proposed steps and context.",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"integer"}}}`),
			Risk:   tools.RiskLow, ReadOnly: true, ParallelSafe: true}, Check: avail,
			Fn: func(ctx context.Context, call tools.Call) (tools.Result, error) {
				var a struct{ ID int64 }
				json.Unmarshal(call.Args, &a)
				it, err := c.Get(ctx, a.ID)
				if err != nil {
					return tools.Result{Content: err.Error(), IsError: true}, nil
				}
				b, _ := json.Marshal(it)
				return tools.Result{Content: string(b)}, nil
			}},
		&tools.Func{S: tools.Spec{Name: "flow_create", Description: "Save a procedure the Action Center follows when matching mail arrives (\"when a train ticket arrives, add it to my calendar\"). Needs the user's approval.",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name","trigger","procedure"],"properties":{"name":{"type":"string","maxLength":100},"trigger":{"type":"string","maxLength":500},"procedure":{"type":"string","maxLength":4000},"tools":{"type":"array","maxItems":8,"items":{"type":"string","maxLength":64},"description":"tools the flow's steps may call besides mail_reply and mail_send"}}}`),
			Risk:   tools.RiskMedium}, Check: avail,
			PreviewF: func(ctx context.Context, args json.RawMessage) string {
				var f Flow
				json.Unmarshal(args, &f)
				tools := "mail_reply, mail_send"
				if len(f.Tools) > 0 {
					tools += ", " + strings.Join(f.Tools, ", ")
				}
				return fmt.Sprintf("save flow %q: when %s → %s (its steps may call: %s)", f.Name, f.Trigger, snippet(f.Procedure, 200), tools)
			},
			Fn: func(ctx context.Context, call tools.Call) (tools.Result, error) {
				var f Flow
				json.Unmarshal(call.Args, &f)
				f, err := c.AddFlow(ctx, f)
				if err != nil {
					return tools.Result{Content: err.Error(), IsError: true}, nil
				}
				return tools.Result{Content: fmt.Sprintf(`{"id":%d,"name":%q}`, f.ID, f.Name)}, nil
			}},
	}
}
