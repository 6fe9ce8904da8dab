package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

// instantModel answers without any model time: steps tool calls to probe,
// then a final text. It isolates the agent's own overhead per tool step.
type instantModel struct {
	steps int
	n     atomic.Int64
}

func (m *instantModel) Stream(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	i := m.n.Add(1)
	if int(i)%(m.steps+1) == 0 {
		fn(llm.Event{Kind: llm.EventText, Text: "done"})
		return llm.Response{Text: "done", FinishReason: llm.FinishStop}, nil
	}
	tc := llm.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "probe", Arguments: `{"tag":"bench"}`}
	return llm.Response{ToolCalls: []llm.ToolCall{tc}, FinishReason: llm.FinishToolCalls}, nil
}

func (m *instantModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return m.Stream(ctx, req, func(llm.Event) error { return nil })
}

// BenchmarkToolStep measures the agent's overhead for one tool step —
// validation, policy, run, result cap, transcript and audit writes in
// SQLite, event publishing — with a model that takes no time. Reported as
// ns per tool step.
func BenchmarkToolStep(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	open := func(s store.Schema) *store.DB {
		db, err := store.Open(ctx, filepath.Join(root, s.Name+".db"), s)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
	chats := chat.New(open(chat.Schema), nil)
	auditLog := audit.New(open(audit.Schema), nil, nil)
	rules, _ := policy.NewRuleStore(ctx, open(policy.Schema), nil, nil)
	eng, _ := policy.New(policy.Config{AutoApprove: policy.ThresholdLow}, rules, policy.NewModes(nil), nil)
	pp, _ := pathpolicy.New(pathpolicy.Options{Home: root})
	reg := tools.NewRegistry()
	reg.MustRegister(&probeTool{})
	bus := events.NewBus(nil, 0, 0)
	sub := bus.Subscribe(events.SubscribeOptions{}) // one live client draining
	go func() {
		for range sub.C() {
		}
	}()
	defer sub.Close()
	const steps = 10
	ag, err := New(Config{StepLimit: steps + 1}, Deps{LLM: &instantModel{steps: steps}, Tools: reg, Policy: eng, Paths: pp,
		Approvals: approval.New(approval.Options{}), Chats: chats, Audit: auditLog, Events: bus})
	if err != nil {
		b.Fatal(err)
	}
	defer ag.Close()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, _ := chats.Create(ctx, "bench") // fresh chat: history does not grow across iterations
		b.StartTimer()
		res, err := ag.Run(ctx, c.ID, "go", Options{})
		if err != nil || !res.OK || res.Steps != steps+1 {
			b.Fatalf("run: %+v %v", res, err)
		}
	}
	_ = start
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/toolstep")
}
