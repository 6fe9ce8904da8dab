package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// LoadToolName is the tool that activates a skill.
const LoadToolName = "skill_load"

// alwaysPermitted are calls no skill manifest needs to list: loading
// another skill only adds its restriction; asking the user is harmless.
var alwaysPermitted = map[string]bool{LoadToolName: true, "ask_user": true}

// restriction is an active skill's manifest as a policy restriction.
type restriction struct {
	name string
	m    *Manifest // nil: read-only tools only
	reg  *tools.Registry
}

func (r restriction) Name() string { return "skill " + r.name }

func (r restriction) Permits(tool string, args json.RawMessage) error {
	if alwaysPermitted[tool] {
		return nil
	}
	if r.m != nil {
		return r.m.Permits(tool, args)
	}
	t, err := r.reg.Get(tool)
	if err != nil {
		return fmt.Errorf("%s is unknown", tool)
	}
	if s := t.Spec(); !s.ReadOnly || s.Egress {
		return fmt.Errorf("the skill has no TOOLS.json, so it may use read-only tools only, and %s writes or sends", tool)
	}
	return nil
}

// Restriction returns the policy restriction of a loaded skill.
func (sk *Skill) Restriction(reg *tools.Registry) policy.Restriction {
	return restriction{name: sk.Name, m: sk.Manifest, reg: reg}
}

// LoadTool returns skill_load: it returns a skill's instructions and
// activates its manifest for the rest of the chat (see Replay).
func LoadTool(st *Store, reg *tools.Registry) tools.Tool {
	return &loadTool{st: st, reg: reg}
}

type loadTool struct {
	st  *Store
	reg *tools.Registry
}

func (t *loadTool) Spec() tools.Spec {
	return tools.Spec{
		Name:        LoadToolName,
		Description: "Load an installed skill by name: returns its instructions. While it is loaded, only the tools its manifest allows can run in this chat.",
		Schema:      json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string","minLength":1,"maxLength":48}}}`),
		Risk:        tools.RiskLow, ReadOnly: true,
		// A skill's text steers the model and its author is not the user
		// (the scanner cannot catch a paraphrased injection): loading one
		// taints the turn, so writes and sends after it need a card.
		Steers:    true,
		MaxResult: 60_000,
	}
}

func (t *loadTool) Available(ctx context.Context) error { return nil }

func skillName(args json.RawMessage) string {
	var a struct{ Name string }
	_ = json.Unmarshal(args, &a)
	return a.Name
}

func (t *loadTool) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	sk, err := t.st.Get(ctx, skillName(c.Args))
	if err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, nil
	}
	if sk.Blocked != "" {
		return tools.Result{Content: fmt.Sprintf("skill %s is blocked: %s", sk.Name, sk.Blocked), IsError: true}, nil
	}
	// Activate before the model sees the body: from its next call on, the
	// manifest holds.
	if sc := policy.ScopeFrom(ctx); sc != nil {
		sc.Add(sk.Restriction(t.reg))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s", sk.Name)
	if sk.Version != "" {
		fmt.Fprintf(&b, " (version %s)", sk.Version)
	}
	b.WriteString(" is loaded. ")
	if sk.Manifest == nil {
		b.WriteString("It has no tool manifest, so only read-only tools can run while it is loaded.\n\n")
	} else {
		var names []string
		for _, g := range sk.Manifest.Tools {
			names = append(names, g.Name)
		}
		fmt.Fprintf(&b, "Tools it may use: %s. Other tools are refused while it is loaded.\n\n", strings.Join(names, ", "))
	}
	b.WriteString(sk.Body)
	return tools.Result{Content: b.String()}, nil
}

// Replay re-activates the manifest of a skill loaded earlier in the chat.
// A skill that is blocked now (changed, risky) still restricts, to
// read-only tools; one the user removed restricts no more.
func (t *loadTool) Replay(ctx context.Context, args json.RawMessage) {
	sc := policy.ScopeFrom(ctx)
	if sc == nil {
		return
	}
	name := skillName(args)
	sk, err := t.st.Get(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return
	}
	if err != nil || sk.Blocked != "" {
		sc.Add(restriction{name: name, reg: t.reg})
		return
	}
	sc.Add(sk.Restriction(t.reg))
}
