package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/budget"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// At a reached cap a turn fails with budget_exceeded before any model
// request; the user's explicit over_budget lets the next turn through.
func TestBudgetCapAndOverride(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{}, llmtest.Text("over budget but answering"))
	spent := budget.LedgerFunc(func(context.Context, time.Time) (budget.Spend, error) {
		return budget.Spend{Tokens: 5000}, nil
	})
	g, err := budget.New(budget.Options{Config: config.BudgetConfig{DailyTokens: 1000, WarnPercent: 80}, Ledger: spent, Events: h.bus})
	if err != nil {
		t.Fatal(err)
	}
	inner := llm.NewOpenAI(llm.Target{Provider: "llmtest", BaseURL: h.srv.URL, APIKey: "k", Model: "llmtest-model"}, nil)
	ag, err := New(Config{}, Deps{LLM: &budget.Client{Inner: inner, Guard: g}, Budget: g, Tools: h.reg, Policy: h.policy, Approvals: h.broker, Chats: h.chats, Events: h.bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ag.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	res, err := ag.Run(ctx, h.chatID, "hello", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Error == nil || res.Error.Code != CodeBudgetExceeded {
		t.Fatalf("over the cap: %+v", res)
	}
	if n := len(h.srv.Requests()); n != 0 {
		t.Fatalf("%d model requests despite the cap", n)
	}
	// Over HTTP, as the web UI and `hestia chat --over-budget` send it.
	mux := http.NewServeMux()
	ag.Routes(mux)
	post := func(body string) Result {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", "/api/chats/"+h.chatID+"/messages", strings.NewReader(body)))
		var res Result
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &res) != nil {
			t.Fatalf("POST: %d %s", rec.Code, rec.Body)
		}
		return res
	}
	if res := post(`{"text":"again","wait":true}`); res.Error == nil || res.Error.Code != CodeBudgetExceeded {
		t.Fatalf("without over_budget: %+v", res)
	}
	if res := post(`{"text":"hello again","wait":true,"over_budget":true}`); !res.OK || res.Text != "over budget but answering" {
		t.Fatalf("with over_budget: %+v", res)
	}
}
