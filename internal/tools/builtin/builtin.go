// Package builtin holds the tools every Hestia agent has regardless of
// connectors: now (the current time), ask_user (a question card) and
// tools_load (a tool group's definitions on demand, load.go).
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/tools"
)

// Now returns the now tool. clock is injected for tests.
func Now(clock func() time.Time, loc *time.Location) tools.Tool {
	if loc == nil {
		loc = time.Local
	}
	return &tools.Func{
		S: tools.Spec{
			Name:        "now",
			Description: "The current date, time, weekday and time zone.",
			Schema:      json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Risk:        tools.RiskLow, ReadOnly: true, ParallelSafe: true,
		},
		Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			t := clock().In(loc)
			return tools.Result{Content: fmt.Sprintf("%s (%s, %s)", t.Format(time.RFC3339), t.Weekday(), t.Location())}, nil
		},
	}
}

// AskUser returns the ask_user tool. It is read-only and low risk: asking
// changes nothing, and the answer comes from the user, not from the model.
func AskUser() tools.Tool {
	return &tools.Func{
		S: tools.Spec{
			Name:        "ask_user",
			Description: "Ask the user a question and wait for the answer. Use when you need a choice or a fact only the user knows.",
			Schema: json.RawMessage(`{"type":"object","properties":{
"question":{"type":"string","minLength":1,"maxLength":2000},
"choices":{"type":"array","items":{"type":"string","maxLength":200},"maxItems":10,"description":"Optional suggested answers"}},
"required":["question"],"additionalProperties":false}`),
			Risk: tools.RiskLow, ReadOnly: true,
		},
		Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			if c.Ask == nil {
				return tools.Result{Content: "nobody is attached to answer questions right now; continue without the answer or say what you need", IsError: true}, nil
			}
			var a struct {
				Question string   `json:"question"`
				Choices  []string `json:"choices"`
			}
			if err := json.Unmarshal(c.Args, &a); err != nil {
				return tools.Result{}, fmt.Errorf("decoding ask_user arguments: %w", err)
			}
			ans, err := c.Ask(ctx, a.Question, a.Choices)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return tools.Result{}, err
				}
				return tools.Result{Content: "the question was not answered: " + err.Error(), IsError: true}, nil
			}
			return tools.Result{Content: "The user answered: " + strings.TrimSpace(ans)}, nil
		},
	}
}
