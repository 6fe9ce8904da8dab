package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// fakeAdapter answers from memory: a counter that changes every poll for
// one watch in a hundred, so most polls find nothing new (the common case).
type fakeAdapter struct{ n *int }

func (fakeAdapter) Name() string                                { return "fake" }
func (fakeAdapter) Validate(string) error                       { return nil }
func (fakeAdapter) EventTypes() []string                        { return []string{"fake.changed"} }
func (fakeAdapter) DefaultExpiry(json.RawMessage) time.Duration { return time.Hour }
func (fakeAdapter) Terminal(json.RawMessage) bool               { return false }
func (f fakeAdapter) Snapshot(_ context.Context, ref string) (json.RawMessage, error) {
	v := 0
	if ref[len(ref)-2:] == "00" {
		v = *f.n
	}
	return json.RawMessage(fmt.Sprintf(`{"v":%d}`, v)), nil
}
func (fakeAdapter) Events(prev, cur json.RawMessage) ([]Event, error) {
	if string(prev) == string(cur) {
		return nil, nil
	}
	return []Event{{Type: "fake.changed", Key: string(cur), Text: "changed"}}, nil
}

// BenchmarkPass1000 is one poll-and-deliver pass over 1,000 active
// watches with a fake adapter. At a 1-minute interval the budget is 5% of
// one core: a pass must stay under 3 s of CPU.
func BenchmarkPass1000(b *testing.B) {
	n := 0
	e, err := Open(context.Background(), filepath.Join(b.TempDir(), "watches.db"), Options{Adapters: []Adapter{fakeAdapter{&n}},
		Deliver: func(context.Context, Delivery, string) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		if _, err := e.Create(ctx, Spec{Source: "fake", Ref: fmt.Sprintf("r%04d", i), Instruction: "x", Rules: []Rule{{Event: "fake.changed"}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n++
		if err := e.Pass(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/600, "%core@1m")
}
