package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// npmClientDir holds the official openai npm package client script.
const npmClientDir = "testdata/npmclient"

// needNode returns the node binary, installing the package's dependencies
// with npm when node_modules is missing. Without npm the test is skipped,
// unless HESTIA_REQUIRE_SERVICES=1 (CI), where it fails.
func needNode(t *testing.T) string {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" {
			t.Fatalf("%s is required (HESTIA_REQUIRE_SERVICES=1) but not found", what)
		}
		t.Skipf("%s not found; skipping the openai npm compatibility test", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		missing("npm")
	}
	if _, err := os.Stat(filepath.Join(npmClientDir, "node_modules", "openai", "package.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = npmClientDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", npmClientDir, err, out)
		}
	}
	return node
}

func TestOfficialNPMClient(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	e := setup(t)
	e.a.Push(
		llmtest.Turn{Text: []string{"Hi there"}, Usage: &llmtest.Usage{Prompt: 5, Completion: 2}},
		llmtest.Turn{Text: []string{"Search", "ing"}, ToolCalls: []llmtest.ToolCall{llmtest.Call("n1", "mail_search", `{"q":"rent due"}`), llmtest.Call("n2", "mail_search", `{"q":"gas"}`)}, ArgChunks: 3},
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = npmClientDir
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+e.url, "GATEWAY_TOKEN="+token)
	raw, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client: %v\n%s\n%s", err, raw, stderr)
	}
	var out struct {
		Plain struct {
			Text, Finish string
			Usage        struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		Stream struct {
			Deltas, Text, Finish string
			ToolCalls            []struct{ ID, Name, Args string }
		}
		Embeddings struct {
			Count, Dim int
			First      []float32
		}
		Models []string
		Error  *struct {
			Status int
			Code   string
		}
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("node output %s: %v", raw, err)
	}
	if out.Plain.Text != "Hi there" || out.Plain.Finish != "stop" || out.Plain.Usage.PromptTokens != 5 {
		t.Errorf("plain %+v", out.Plain)
	}
	s := out.Stream
	if s.Deltas != "Searching" || s.Text != "Searching" || s.Finish != "tool_calls" || len(s.ToolCalls) != 2 ||
		s.ToolCalls[0].ID != "n1" || s.ToolCalls[0].Name != "mail_search" || s.ToolCalls[0].Args != `{"q":"rent due"}` || s.ToolCalls[1].Args != `{"q":"gas"}` {
		t.Errorf("stream %+v", s)
	}
	want := llm.LocalVector("flight berlin")
	if out.Embeddings.Count != 2 || out.Embeddings.Dim != llm.LocalEmbedDim || out.Embeddings.First[0] != want[0] || out.Embeddings.First[3] != want[3] {
		t.Errorf("embeddings %+v", out.Embeddings)
	}
	if len(out.Models) != 2 || out.Models[0] != "tier-3" {
		t.Errorf("models %v", out.Models)
	}
	if out.Error == nil || out.Error.Status != 404 || out.Error.Code != "model_not_found" {
		t.Errorf("error %+v", out.Error)
	}
	if sum := e.summary(t); sum.ByService[0].Key != "npm-test" || sum.Totals.Requests != 2 || sum.Local.Requests != 1 {
		t.Errorf("ledger %+v", sum.ByService)
	}
}
