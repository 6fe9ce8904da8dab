package authority_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
)

type fixture struct {
	auth  *authority.Authority
	rules *policy.RuleStore
	log   *audit.Log
	b     *approval.Broker
	runs  map[string]*atomic.Int32
	cards chan approval.Request
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	pdb, err := store.Open(ctx, filepath.Join(dir, "policy.db"), policy.Schema)
	if err != nil {
		t.Fatal(err)
	}
	adb, err := store.Open(ctx, filepath.Join(dir, "audit.db"), audit.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pdb.Close(); adb.Close() })
	f := &fixture{runs: map[string]*atomic.Int32{}, cards: make(chan approval.Request, 16)}
	if f.rules, err = policy.NewRuleStore(ctx, pdb, nil, nil); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.New(policy.Config{AutoApprove: policy.ThresholdLow}, f.rules, policy.NewModes(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	add := func(s tools.Spec) {
		n := &atomic.Int32{}
		f.runs[s.Name] = n
		s.Description = s.Name
		s.Schema = json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"x":{"type":"string"}}}`)
		reg.MustRegister(&tools.Func{S: s, Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			n.Add(1)
			if s.Name == "hang" {
				<-ctx.Done()
				return tools.Result{}, ctx.Err()
			}
			return tools.Result{Content: "ran " + s.Name}, nil
		}})
	}
	add(tools.Spec{Name: "skill", Risk: tools.RiskLow, ReadOnly: true, Steers: true})
	add(tools.Spec{Name: "note", Risk: tools.RiskMedium})
	add(tools.Spec{Name: "shell", Risk: tools.RiskHigh})
	add(tools.Spec{Name: "hang", Risk: tools.RiskLow, ReadOnly: true})
	f.log = audit.New(adb, nil, nil)
	f.b = approval.New(approval.Options{Timeout: 10 * time.Second, Approvers: func() int { return 1 }})
	f.b.SetNotifier(notifier{f.cards})
	f.auth = authority.New(authority.Deps{Tools: reg, Policy: engine, Approvals: f.b, Audit: f.log, ToolTimeout: 5 * time.Second})
	return f
}

type notifier struct{ c chan approval.Request }

func (n notifier) Requested(r approval.Request)                     { n.c <- r }
func (n notifier) Resolved(r approval.Request, d approval.Decision) {}

// deny answers the next card with a denial and returns it.
func (f *fixture) deny(t *testing.T) approval.Request {
	t.Helper()
	select {
	case r := <-f.cards:
		if _, err := f.b.Decide(r.ID, approval.Decision{Outcome: approval.Deny}); err != nil {
			t.Fatal(err)
		}
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no card")
	}
	return approval.Request{}
}

// A loaded skill's text steers the model: after it, a write that a trust
// rule allows still needs a card naming the skill.
func TestSkillTextTaintsTheTurn(t *testing.T) {
	f := newFixture(t)
	ctx := taint.WithTracker(context.Background(), taint.NewTracker())
	if _, err := f.rules.Create(ctx, policy.Rule{Tool: "note", Decision: policy.Allow, Priority: 100}); err != nil {
		t.Fatal(err)
	}
	o := authority.Origin{Kind: authority.Chat, ChatID: "c1", TurnID: "t1"}
	if out := f.auth.Invoke(ctx, o, authority.Call{Tool: "skill", Args: `{"x":"weekly"}`}); !out.OK() {
		t.Fatalf("skill: %+v", out)
	}
	done := make(chan authority.Outcome)
	go func() { done <- f.auth.Invoke(ctx, o, authority.Call{Tool: "note", Args: `{"x":"y"}`}) }()
	card := f.deny(t)
	out := <-done
	if out.Ran || out.Decision != authority.Denied || len(card.TaintedBy) == 0 || card.TaintedBy[0].Tool != "skill" {
		t.Fatalf("write after a skill: %+v, card tainted by %v", out, card.TaintedBy)
	}
}

// Grants lift a threshold or taint gate, never the high-risk floor or a
// deny; the origin shows on the card.
func TestGrantLimits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	o := authority.Origin{Kind: authority.Watch, ID: "w1", Label: "watch w1", ChatID: "c1", Background: true, Ask: authority.Defer,
		Taint: []taint.Source{{Tool: "watch:url", Detail: "https://x.test"}}, Grant: &authority.Grant{ID: "watch w1 rule r1", Allows: "note"}}
	if out := f.auth.Invoke(ctx, o, authority.Call{Tool: "note", Args: `{}`}); out.Decision != authority.Granted || !out.OK() {
		t.Fatalf("granted medium-risk call: %+v", out)
	}
	if out := f.auth.Invoke(ctx, o, authority.Call{Tool: "shell", Args: `{}`}); out.Decision != authority.Deferred || out.Ran {
		t.Fatalf("granted high-risk call: %+v", out)
	}
	if _, err := f.rules.Create(ctx, policy.Rule{Tool: "note", Decision: policy.Deny, Priority: 100}); err != nil {
		t.Fatal(err)
	}
	if out := f.auth.Invoke(ctx, o, authority.Call{Tool: "note", Args: `{}`}); out.Decision != authority.Blocked || out.Ran {
		t.Fatalf("granted call over a deny rule: %+v", out)
	}
	o.Ask, o.Grant = authority.AskUser, nil
	done := make(chan authority.Outcome)
	go func() { done <- f.auth.Invoke(ctx, o, authority.Call{Tool: "shell", Args: `{}`}) }()
	card := f.deny(t)
	<-done
	if card.Origin != "watch w1" || len(card.TaintedBy) != 1 || !card.NoExpiry {
		t.Fatalf("card: %+v", card)
	}
	if f.runs["note"].Load() != 1 || f.runs["shell"].Load() != 0 {
		t.Fatalf("runs note %d shell %d", f.runs["note"].Load(), f.runs["shell"].Load())
	}
}

// An origin's tool list is enforced, and an unknown tool never runs.
func TestToolListAndUnknownTool(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	o := authority.Origin{Kind: authority.Action, ID: "1", Tools: []string{"note"}}
	if out := f.auth.Invoke(ctx, o, authority.Call{Tool: "skill", Args: `{}`}); out.Decision != authority.Blocked || out.Why != authority.WhyNotOffered {
		t.Fatalf("tool outside the list: %+v", out)
	}
	if out := f.auth.Invoke(ctx, authority.Origin{Kind: authority.Chat}, authority.Call{Tool: "nope", Args: `{}`}); out.Decision != authority.Blocked || out.Why != authority.WhyUnknown {
		t.Fatalf("unknown tool: %+v", out)
	}
	if out := f.auth.Invoke(ctx, authority.Origin{Kind: authority.Chat}, authority.Call{Tool: "skill", Args: `{"y":1}`}); out.Decision != authority.Invalid || out.Ran {
		t.Fatalf("bad arguments: %+v", out)
	}
}

// A call whose start has no result (the daemon died during it) is closed
// as unknown at the next start, once.
func TestCloseUnfinished(t *testing.T) {
	f := newFixture(t)
	// A start row with no result, as a killed process leaves it (the
	// real kill -9 is internal/cli's TestDaemonKilledMidCallLeavesUnknown).
	if _, err := f.log.Append(context.Background(), audit.Entry{Type: audit.TypeToolStarted, Tool: "note", Data: map[string]any{"call_key": "k1", "call_id": "c1", "args": map[string]any{}}}); err != nil {
		t.Fatal(err)
	}
	if out := f.auth.Invoke(context.Background(), authority.Origin{Kind: authority.Chat}, authority.Call{Tool: "hang", Args: `{}`, Timeout: 10 * time.Millisecond}); !out.Ran {
		t.Fatalf("hang: %+v", out)
	}
	n, err := f.auth.CloseUnfinished(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("closed %d (%v), want only the one without a result", n, err)
	}
	if n, _ := f.auth.CloseUnfinished(context.Background()); n != 0 {
		t.Fatalf("closed %d on the second start", n)
	}
	evs, _ := f.log.List(context.Background(), audit.Filter{Type: audit.TypeToolRun, Tool: "note"})
	if len(evs) != 1 || !json.Valid(evs[0].Data) {
		t.Fatalf("result rows %+v", evs)
	}
	var d struct {
		Status string `json:"status"`
		Key    string `json:"call_key"`
	}
	json.Unmarshal(evs[0].Data, &d)
	if d.Status != "unknown" || d.Key != "k1" {
		t.Fatalf("result row %s", evs[0].Data)
	}
	if v, err := f.log.Verify(context.Background()); err != nil || !v.OK {
		t.Fatalf("chain: %+v %v", v, err)
	}
}
