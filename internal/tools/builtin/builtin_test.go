package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/tools"
)

func TestNow(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("CET", 3600)
	tl := Now(func() time.Time { return time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC) }, loc)
	res, err := tl.Run(context.Background(), tools.Call{Args: json.RawMessage(`{}`)})
	if err != nil || res.Content != "2026-12-02T17:00:00+01:00 (Wednesday, CET)" {
		t.Fatalf("%q %v", res.Content, err)
	}
	if s := tl.Spec(); !s.ReadOnly || !s.ParallelSafe || s.Risk != tools.RiskLow {
		t.Errorf("spec %+v", s)
	}
}

func TestAskUser(t *testing.T) {
	t.Parallel()
	tl := AskUser()
	args := json.RawMessage(`{"question":"Which?","choices":["a","b"]}`)
	res, err := tl.Run(context.Background(), tools.Call{Args: args})
	if err != nil || !res.IsError || !strings.Contains(res.Content, "nobody is attached") {
		t.Errorf("without asker: %+v %v", res, err)
	}
	var gotQ string
	var gotC []string
	res, err = tl.Run(context.Background(), tools.Call{Args: args, Ask: func(ctx context.Context, q string, c []string) (string, error) {
		gotQ, gotC = q, c
		return " b ", nil
	}})
	if err != nil || res.Content != "The user answered: b" || gotQ != "Which?" || len(gotC) != 2 {
		t.Errorf("answered: %+v %v %q %v", res, err, gotQ, gotC)
	}
	res, _ = tl.Run(context.Background(), tools.Call{Args: args, Ask: func(context.Context, string, []string) (string, error) {
		return "", errors.New("nobody answered within 5m0s")
	}})
	if !res.IsError || !strings.Contains(res.Content, "not answered") {
		t.Errorf("timeout: %+v", res)
	}
	if _, _, err := tools.DecodeArgs("ask_user", `{"question":""}`, tl.Spec().Schema); err == nil {
		t.Error("empty question accepted")
	}
}

func TestToolsLoad(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	reg.MustRegister(Now(time.Now, time.UTC), &tools.Func{S: tools.Spec{Name: "mail_send"}}, &tools.Func{S: tools.Spec{Name: "mail_search"}},
		&tools.Func{S: tools.Spec{Name: "wiki_read"}, Check: func(context.Context) error { return errors.New("off") }})
	tl := ToolsLoad(reg)
	reg.MustRegister(tl)
	for args, want := range map[string]string{
		`{"group":"mail"}`:  "Loaded mail: mail_search, mail_send. Their definitions are in your tools from your next step.",
		`{"group":"core"}`:  "the core tools are always loaded",
		`{"group":"wiki"}`:  `error: there is no tool group "wiki"; the groups are: mail`,
		`{"group":" mail"}`: "Loaded mail: mail_search, mail_send. Their definitions are in your tools from your next step.",
	} {
		res, err := tl.Run(context.Background(), tools.Call{Args: json.RawMessage(args)})
		got := res.Content
		if res.IsError {
			got = "error: " + got
		}
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", args, got, err, want)
		}
	}
	if _, err := tl.Run(context.Background(), tools.Call{Args: json.RawMessage(`[]`)}); err == nil {
		t.Error("undecodable arguments were accepted")
	}
	if s := tl.Spec(); s.Name != tools.LoadToolName || !s.ReadOnly || s.Risk != tools.RiskLow || s.Egress {
		t.Errorf("spec %+v", s)
	}
}
