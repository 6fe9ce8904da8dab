package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/tools"
)

const ruleSchema = `{"type":"object","additionalProperties":false,"properties":{
"id":{"type":"string"},
"event":{"type":"string","description":"event type, e.g. train.arrived, url.changed, file.changed"},
"trigger":{"type":"object","description":"instead of event: {field, before_minutes|after_minutes} or {at}"},
"where":{"type":"object","description":"equality filters on event data, dot paths"},
"once":{"type":"boolean"},
"grants":{"type":"array","items":{"type":"object"},"description":"[{tool, args: {name: {exact|set|min/max|template}}, max}]"}}}`

func createSchema(grants bool) json.RawMessage {
	desc := "rules without grants"
	if grants {
		desc = "rules; at least one carries grants"
	}
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":["source","ref","instruction","rules"],"properties":{
"source":{"type":"string","description":"train, url, file or mail"},
"ref":{"type":"string","description":"the resource: train originId/number/serviceDayMs, a URL, an absolute file path, a mail search: plain words or JSON {\"from\",\"subject\",\"query\",\"role\",…}; mail watches fire mail.received once per newly arrived match"},
"instruction":{"type":"string","description":"the user's own words"},
"expires_at":{"type":"string","description":"RFC 3339; required unless the source has a natural end (trains)"},
"deliver":{"type":"array","items":{"type":"string","enum":["inbox","push","telegram","call","slack","discord","whatsapp","matrix","signal","email","none"]},"description":"where the user gets each event's message besides the chat; only when the user asked (default inbox and push); call rings the user's phone and reads it out; a channel name posts it in the user's conversation there"},
"rules":{"type":"array","minItems":1,"maxItems":20,"description":"` + desc + `","items":` + ruleSchema + `}}}`)
}

type createArgs struct {
	Source      string   `json:"source"`
	Ref         string   `json:"ref"`
	Instruction string   `json:"instruction"`
	ExpiresAt   string   `json:"expires_at"`
	Rules       []Rule   `json:"rules"`
	Deliver     []string `json:"deliver,omitempty"`
}

func parseCreate(raw json.RawMessage) (Spec, error) {
	var a createArgs
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Spec{}, fmt.Errorf("rules: %v", err)
	}
	s := Spec{Source: a.Source, Ref: a.Ref, Instruction: a.Instruction, Rules: a.Rules, Deliver: a.Deliver}
	if a.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339, a.ExpiresAt)
		if err != nil {
			return Spec{}, fieldErr("expires_at", "%q is not an RFC 3339 time", a.ExpiresAt)
		}
		s.ExpiresAt = t
	}
	return s, nil
}

func hasGrants(rules []Rule) bool {
	for _, r := range rules {
		if len(r.Grants) > 0 {
			return true
		}
	}
	return false
}

// Tools returns the watch tools. With a nil engine they only describe
// themselves (the security suite uses their specs).
func Tools(e *Engine) []tools.Tool {
	avail := func(ctx context.Context) error {
		if e == nil {
			return errors.New("the watch engine is not running")
		}
		return nil
	}
	create := func(grants bool) func(ctx context.Context, c tools.Call) (tools.Result, error) {
		return func(ctx context.Context, c tools.Call) (tools.Result, error) {
			s, err := parseCreate(c.Args)
			if err == nil && hasGrants(s.Rules) != grants {
				if grants {
					err = errors.New("rules: watch_create_agent needs at least one rule with grants; use watch_create to only notify")
				} else {
					err = errors.New("rules: grants need watch_create_agent (the user approves them)")
				}
			}
			if err != nil {
				return tools.Result{Content: err.Error(), IsError: true}, nil
			}
			s.ChatID = c.ChatID
			w, err := e.Create(ctx, s)
			if err != nil {
				return tools.Result{Content: err.Error(), IsError: true}, nil
			}
			b, _ := json.Marshal(map[string]any{"id": w.ID, "state": w.State, "expires_at": w.ExpiresAt, "rules": len(w.Rules),
				"note": "watching from the current state: only later changes fire"})
			return tools.Result{Content: string(b)}, nil
		}
	}
	preview := func(ctx context.Context, args json.RawMessage) string {
		s, err := parseCreate(args)
		if err != nil {
			return "invalid watch: " + err.Error()
		}
		var parts []string
		for _, r := range s.Rules {
			on := r.Event
			if r.Trigger != nil {
				on = "time trigger"
			}
			for _, g := range r.Grants {
				var cs []string
				for k, c := range g.Args {
					cs = append(cs, k+"="+describe(c))
				}
				max := g.Max
				if max == 0 {
					max = 1
				}
				parts = append(parts, fmt.Sprintf("on %s may call %s (%s) up to %d time(s) without asking", on, g.Tool, strings.Join(cs, ", "), max))
			}
		}
		return fmt.Sprintf("watch %s %s: %s", s.Source, s.Ref, strings.Join(parts, "; "))
	}
	return []tools.Tool{
		&tools.Func{S: tools.Spec{Name: "watch_create", Description: "Watch a resource and tell the user when it changes (train status, a web page or JSON URL, a file, new mail matching a search). Only later changes fire: answer the current state yourself. Rules without grants.",
			Schema: createSchema(false), Risk: tools.RiskLow, ReadOnly: true,
			// The url source fetches what it is given: a URL can carry data
			// off the machine, so a tainted turn must not create one freely.
			Egress: true}, Check: avail, Fn: create(false), PreviewF: preview},
		&tools.Func{S: tools.Spec{Name: "watch_create_agent", Description: "Like watch_create, but rules may carry grants: tools the watch may call later without asking, each argument constrained (exact, set, min/max range or a template filled from the event such as {{event.train}}), with a maximum number of calls. Needs the user's approval.",
			Schema: createSchema(true), Risk: tools.RiskHigh, Egress: true}, Check: avail, Fn: create(true), PreviewF: preview},
		&tools.Func{S: tools.Spec{Name: "watch_list", Description: "List the user's watches (active first) with their state and last poll.",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"state":{"type":"string","enum":["active","paused","stopped","expired","completed"]}}}`),
			Risk:   tools.RiskLow, ReadOnly: true, ParallelSafe: true}, Check: avail,
			Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
				var a struct {
					State string `json:"state"`
				}
				json.Unmarshal(c.Args, &a)
				ws, err := e.List(ctx, a.State)
				if err != nil {
					return tools.Result{}, err
				}
				type row struct {
					ID, Source, Ref, State, Instruction string
					ExpiresAt                           time.Time
					Events                              int
					LastError                           string `json:",omitempty"`
				}
				var out []row
				for _, w := range ws {
					out = append(out, row{w.ID, w.Source, w.Ref, w.State, clipStr(w.Instruction, 200), w.ExpiresAt, w.Events, w.LastError})
				}
				b, _ := json.Marshal(map[string]any{"watches": out})
				return tools.Result{Content: string(b)}, nil
			}},
		&tools.Func{S: tools.Spec{Name: "watch_stop", Description: "Stop a watch by id (it only reduces background work).",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string"}}}`),
			Risk:   tools.RiskLow, ReadOnly: true}, Check: avail,
			Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
				var a struct {
					ID string `json:"id"`
				}
				json.Unmarshal(c.Args, &a)
				w, err := e.Stop(ctx, a.ID)
				if err != nil {
					return tools.Result{Content: err.Error(), IsError: true}, nil
				}
				return tools.Result{Content: fmt.Sprintf(`{"id":%q,"state":%q}`, w.ID, w.State)}, nil
			}},
	}
}

func describe(c Constraint) string {
	switch {
	case c.Exact != nil:
		return mustJSON(c.Exact)
	case c.Set != nil:
		return "one of " + mustJSON(c.Set)
	case c.Template != "":
		return "template " + mustJSON(c.Template)
	default:
		lo, hi := "-∞", "∞"
		if c.Min != nil {
			lo = fmt.Sprint(*c.Min)
		}
		if c.Max != nil {
			hi = fmt.Sprint(*c.Max)
		}
		return "range " + lo + ".." + hi
	}
}
