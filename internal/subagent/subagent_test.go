package subagent

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
)

type fixture struct {
	srv    *llmtest.Server
	reg    *tools.Registry
	runner *Runner
	writes atomic.Int32
	reads  atomic.Int32
}

func newFixture(t *testing.T, turns ...llmtest.Turn) *fixture {
	t.Helper()
	f := &fixture{srv: llmtest.New(t, turns...), reg: tools.NewRegistry()}
	obj := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"id":{"type":"integer"}}}`)
	f.reg.MustRegister(
		&tools.Func{S: tools.Spec{Name: "mail_search", Risk: tools.RiskLow, ReadOnly: true, UntrustedOutput: true, Schema: obj}, Fn: func(context.Context, tools.Call) (tools.Result, error) {
			f.reads.Add(1)
			return tools.Result{Content: `[{"id":42,"subject":"Boiler service on 12 May"}]`}, nil
		}},
		&tools.Func{S: tools.Spec{Name: "wiki_search", Risk: tools.RiskLow, ReadOnly: true, Schema: obj}, Fn: func(context.Context, tools.Call) (tools.Result, error) {
			return tools.Result{Content: "Projects/Boiler: serviced yearly"}, nil
		}},
		&tools.Func{S: tools.Spec{Name: "write_file", Risk: tools.RiskLow, Schema: obj}, Fn: func(context.Context, tools.Call) (tools.Result, error) {
			f.writes.Add(1)
			return tools.Result{Content: "written"}, nil
		}},
		&tools.Func{S: tools.Spec{Name: "mail_send", Risk: tools.RiskLow, ReadOnly: true, Egress: true, Schema: obj}, Fn: func(context.Context, tools.Call) (tools.Result, error) {
			f.writes.Add(1)
			return tools.Result{Content: "sent"}, nil
		}},
		&tools.Func{S: tools.Spec{Name: "slow_lookup", Risk: tools.RiskHigh, ReadOnly: true, Schema: obj}, Fn: func(context.Context, tools.Call) (tools.Result, error) {
			f.reads.Add(1)
			return tools.Result{Content: "x"}, nil
		}},
	)
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "policy.db"), policy.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rules, _ := policy.NewRuleStore(context.Background(), db, nil, nil)
	eng, _ := policy.New(policy.Config{AutoApprove: policy.ThresholdLow}, rules, policy.NewModes(nil), nil)
	client := llm.NewOpenAI(llm.Target{Provider: "llmtest", BaseURL: f.srv.URL, APIKey: "k", Model: "m"}, nil)
	f.runner = New(Deps{LLM: client, Tools: f.reg, Policy: eng})
	for _, tl := range f.runner.Tools([]string{"mail_search", "wiki_search", "web_fetch"}) {
		f.reg.MustRegister(tl)
	}
	return f
}

func (f *fixture) run(t *testing.T, ctx context.Context, tool, args string) tools.Result {
	t.Helper()
	tl, err := f.reg.Get(tool)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(ctx, tools.Call{Args: json.RawMessage(args), ChatID: "c1"})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func TestResearchCitesAndTaintsParent(t *testing.T) {
	t.Parallel()
	f := newFixture(t,
		llmtest.ToolCalls(llmtest.Call("a", "mail_search", `{"q":"boiler"}`), llmtest.Call("b", "wiki_search", `{"q":"boiler"}`)),
		llmtest.Text("The boiler is serviced on 12 May [mail 42] and yearly [wiki Projects/Boiler]."))
	tr := taint.NewTracker()
	res := f.run(t, taint.WithTracker(context.Background(), tr), "research", `{"question":"when is the boiler serviced?"}`)
	if res.IsError || !strings.Contains(res.Content, "[mail 42]") || !strings.Contains(res.Content, `mail_search {"q":"boiler"}`) {
		t.Fatalf("research: %+v", res)
	}
	if !tr.Tainted() {
		t.Fatal("the parent turn was not tainted by the child's untrusted read")
	}
	reqs := f.srv.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	offered := append([]string(nil), reqs[0].Tools...)
	if strings.Join(offered, ",") != "mail_search,wiki_search" {
		t.Fatalf("research offered %v, want only the preset's read tools", offered)
	}
	body, _ := json.Marshal(reqs[1].Messages)
	if !strings.Contains(string(body), "untrusted_content") {
		t.Fatal("mail output not wrapped for the child model")
	}
}

func TestDelegateLimits(t *testing.T) {
	t.Parallel()
	// A child that keeps calling tools stops at its step limit, with one
	// tools-off wrap-up reply.
	var loop []llmtest.Turn
	for range 3 {
		loop = append(loop, llmtest.ToolCalls(llmtest.Call("", "mail_search", `{"q":"x"}`)))
	}
	loop = append(loop, llmtest.Text("partial answer"))
	f := newFixture(t, loop...)
	res := f.run(t, context.Background(), "delegate", `{"task":"look everything up","max_steps":4}`)
	if res.IsError || !strings.Contains(res.Content, "partial answer") || !strings.Contains(res.Content, "stopped at the steps limit") {
		t.Fatalf("step limit: %+v", res)
	}
	reqs := f.srv.ChatRequests()
	if len(reqs) != 4 || len(reqs[3].Tools) != 0 {
		t.Fatalf("%d calls; the last must have tools off", len(reqs))
	}

	// Forbidden and write tools are refused before anything runs.
	for _, args := range []string{`{"task":"x","tools":["write_file"]}`, `{"task":"x","tools":["mail_send"]}`, `{"task":"x","tools":["delegate"]}`, `{"task":"x","tools":["nope"]}`} {
		if r := f.run(t, context.Background(), "delegate", args); !r.IsError {
			t.Errorf("%s: accepted: %+v", args, r)
		}
	}
	if d, _ := f.reg.Get("delegate"); d != nil {
		if _, _, err := tools.DecodeArgs("delegate", `{"task":"x","max_steps":21}`, d.Spec().Schema); err == nil {
			t.Error("max_steps above 20 accepted")
		}
	}
}

// A child cannot run what the policy would gate, nor anything outside its
// set; a cancelled parent ends the child.
func TestDelegatePolicyAndCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t,
		llmtest.ToolCalls(llmtest.Call("a", "slow_lookup", `{}`), llmtest.Call("b", "write_file", `{}`), llmtest.Call("c", "mail_send", `{}`)),
		llmtest.Text("could not do it"))
	res := f.run(t, context.Background(), "delegate", `{"task":"do things"}`)
	if res.IsError || f.writes.Load() != 0 || f.reads.Load() != 0 {
		t.Fatalf("gated or write calls ran: writes %d reads %d %+v", f.writes.Load(), f.reads.Load(), res)
	}
	body, _ := json.Marshal(f.srv.ChatRequests()[1].Messages)
	for _, want := range []string{"needs the user's approval", `tool \"write_file\" is not available`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("child was not told %q: %s", want, body)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tl, _ := f.reg.Get("delegate")
	if _, err := tl.Run(ctx, tools.Call{Args: json.RawMessage(`{"task":"x"}`)}); err == nil {
		t.Fatal("a cancelled parent did not stop the child")
	}
}

func TestForbidden(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"delegate", "research", "ask_user", "memory_write", "mail_send", "mail_reply", "schedule_add", "jobs_add", "wiki_write", "calendar_create"} {
		if !Forbidden(n) {
			t.Errorf("%s allowed", n)
		}
	}
	for _, n := range []string{"mail_search", "wiki_read", "document_read", "read_file"} {
		if Forbidden(n) {
			t.Errorf("%s forbidden", n)
		}
	}
}

func TestTokenBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t,
		llmtest.ToolCalls(llmtest.Call("a", "mail_search", `{"q":"x"}`)),
		llmtest.Text("answer within budget"))
	res, err := f.runner.Run(context.Background(), Task{Action: "delegate", Prompt: "x", MaxTokens: 1, ChatID: "c1"})
	if err != nil || res.StoppedBy != "tokens" || res.Text != "answer within budget" || res.Steps != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := f.runner.Run(context.Background(), Task{Action: "delegate", Prompt: "  "}); err == nil {
		t.Fatal("empty task accepted")
	}
}
