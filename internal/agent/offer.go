package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/tools"
)

// stepOffer is what one model step offers.
//
// With tools_load registered (on-demand loading), defs carries the core
// tools in full, tools_load's description carries a one-line-per-group
// catalogue naming every other available tool, and the groups loaded so far
// in the chat follow in the order they were loaded: a request's tool list
// only ever grows at its end, so a server's prompt cache keeps the earlier
// bytes. The catalogue is part of the offer: a tool it names may be called
// by its exact name (it runs under the same authority checks as any call,
// arguments validated against its full schema), and calling it loads its
// group from the next step. Without tools_load every available tool is
// sent in full, as before.
type stepOffer struct {
	defs []llm.ToolDef
	// names is every tool the model may call this step (the authority's
	// Origin.Tools): the definitions sent plus, on demand, the catalogue.
	names []string
	// full holds the names whose definition was sent.
	full map[string]bool
	lazy bool
}

func (o stepOffer) offered(name string) bool { return slices.Contains(o.names, name) }

// offer builds the step's tools from the available ones, leaving out any a
// deny prefix refuses outright. loaded are the chat's loaded groups.
func (a *Agent) offer(ctx context.Context, loaded []string) stepOffer {
	var avail []tools.Tool // sorted by name
	lazy := false
	for _, t := range a.d.Tools.Available(ctx) {
		n := t.Spec().Name
		if a.deniedByPrefix(n) {
			continue // never offer what policy would refuse outright
		}
		avail = append(avail, t)
		lazy = lazy || n == tools.LoadToolName
	}
	o := stepOffer{names: make([]string, 0, len(avail)), full: map[string]bool{}, lazy: lazy}
	add := func(s tools.Spec, desc string) {
		o.defs = append(o.defs, llm.ToolDef{Name: s.Name, Description: desc, Parameters: s.Schema})
		o.full[s.Name] = true
	}
	for _, t := range avail {
		o.names = append(o.names, t.Spec().Name)
	}
	if !lazy {
		for _, t := range avail {
			add(t.Spec(), t.Spec().Description)
		}
		return o
	}
	cat := tools.Catalogue(o.names)
	byName := map[string]tools.Tool{}
	for _, t := range avail {
		s := t.Spec()
		byName[s.Name] = t
		if tools.GroupOf(s.Name) != tools.CoreGroup {
			continue
		}
		if s.Name == tools.LoadToolName {
			if len(cat) == 0 {
				continue // nothing to load
			}
			add(s, s.Description+tools.CatalogueText(cat))
			continue
		}
		add(s, s.Description)
	}
	for _, g := range loaded {
		for _, e := range cat {
			if e.Name != g {
				continue
			}
			for _, n := range e.Tools {
				s := byName[n].Spec()
				add(s, s.Description)
			}
		}
	}
	return o
}

// loadHint is added to the refusal of a call whose arguments failed
// validation when its definition had not been sent: the model guessed them.
func loadHint(name string) string {
	g := tools.GroupOf(name)
	return fmt.Sprintf(" %s's definition was not loaded, so its parameters were guessed; its group %q is loaded now (as tools_load({\"group\":%q}) does): read %s's parameters in your tools and call it again.", name, g, g, name)
}

// loads tracks the groups a chat has loaded, in the order they were first
// loaded. A step contributes first the groups of the registered tools it
// called by name (in call order), then the groups of its successful
// tools_load calls (in call order): the same order whether read back from
// the transcript or noted live, so the next turn's tool list is the same
// bytes as the last step's.
type loads struct {
	reg    *tools.Registry
	groups []string
}

func (l *loads) add(g string) {
	if g != "" && g != tools.CoreGroup && !slices.Contains(l.groups, g) {
		l.groups = append(l.groups, g)
	}
}

// called notes a call by name: a registered tool outside the core loads
// its group.
func (l *loads) called(name string) {
	if name == tools.LoadToolName {
		return
	}
	if _, err := l.reg.Get(name); err == nil {
		l.add(tools.GroupOf(name))
	}
}

// loadedBy notes a tools_load call that succeeded with args.
func (l *loads) loadedBy(args json.RawMessage) {
	var a struct {
		Group string `json:"group"`
	}
	if json.Unmarshal(args, &a) == nil {
		l.add(a.Group)
	}
}

// fromHistory reads the loads of a stored transcript.
func (l *loads) fromHistory(ms []chat.Message) {
	for _, m := range ms {
		switch {
		case m.Role == chat.RoleAssistant:
			for _, c := range m.ToolCalls {
				l.called(c.Name)
			}
		case m.Role == chat.RoleTool && m.ToolName == tools.LoadToolName && m.Tool != nil && m.Tool.Status == StatusOK:
			l.loadedBy(m.Tool.Input)
		}
	}
}

// fromStep notes a step's calls and results (results in call order).
func (l *loads) fromStep(ps []*prepared, rs []*callResult) {
	for _, p := range ps {
		l.called(p.name)
	}
	for _, r := range rs {
		if r.name == tools.LoadToolName && r.run.Status == StatusOK {
			l.loadedBy(r.run.Input)
		}
	}
}

// contextMarker opens the context note, so neither the model nor a reader
// takes it for the user's words.
const contextMarker = "\n\n[Context from Hestia, not written by the user]"

// contextNote is the turn's volatile context (the time), appended to the
// latest user message instead of the system prompt: the system prompt and
// the tools stay the same bytes across turns and chats, so a server's
// prompt cache reuses them.
func (a *Agent) contextNote() string {
	now := a.d.Clock()
	return fmt.Sprintf("%s Current time: %s (%s).", contextMarker, now.Format(time.RFC3339), now.Weekday())
}

// withContext appends note to the current turn's user message (a copy:
// the stored message is unchanged).
func withContext(msgs []llm.Message, note string) []llm.Message {
	i := currentTurnStart(msgs)
	if i >= len(msgs) || msgs[i].Role != llm.RoleUser {
		return msgs
	}
	out := slices.Clone(msgs)
	out[i].Content += note
	return out
}
