package docs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/files"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/shell"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

// TestAgentAnswersFromLocalFiles runs the real agent loop, policy and
// tools (documents through the extraction child, find_files, shell_run)
// with the scripted model, for the two questions of issue 13: what the
// contract in ~/Documents says about termination, and which files in
// ~/Downloads are over 100 MB.
func TestAgentAnswersFromLocalFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	contract, err := os.ReadFile(filepath.Join("testdata", "contract.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"Documents", "Downloads"} {
		os.MkdirAll(filepath.Join(home, d), 0o755)
	}
	os.WriteFile(filepath.Join(home, "Documents", "contract.pdf"), contract, 0o644)
	for name, size := range map[string]int64{"movie.mkv": 700 << 20, "iso.img": 101 << 20, "notes.txt": 10 << 10} {
		f, _ := os.Create(filepath.Join(home, "Downloads", name))
		f.Truncate(size)
		f.Close()
	}

	srv := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("c1", "document_search", `{"path":"~/Documents/contract.pdf","query":"termination"}`)),
		llmtest.Text("Section 7: either party may terminate with three months notice; termination for cause needs written notice."),
		llmtest.ToolCalls(llmtest.Call("c2", "find_files", `{"root":"~/Downloads","min_size":"100MB","sort":"size"}`)),
		llmtest.ToolCalls(llmtest.Call("c3", "shell_run", `{"command":"find ~/Downloads -type f -size +100M"}`)),
		llmtest.Text("movie.mkv (700 MiB) and iso.img (101 MiB)."),
	)
	client := llm.NewOpenAI(llm.Target{Provider: "llmtest", BaseURL: srv.URL, APIKey: "k", Model: "m"}, nil)
	open := func(s store.Schema) *store.DB {
		db, err := store.Open(ctx, filepath.Join(root, "db", s.Name+".db"), s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	chats := chat.New(open(chat.Schema), nil)
	auditLog := audit.New(open(audit.Schema), nil, nil)
	rules, err := policy.NewRuleStore(ctx, open(policy.Schema), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.Config{AutoApprove: policy.ThresholdLow}, rules, policy.NewModes(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := pathpolicy.New(pathpolicy.Options{Home: home, Roots: []string{home}})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	svc := docs.NewService(pp, &docs.Extractor{Exe: os.Args[0], Args: []string{"extract"}}, nil, docs.Limits{})
	reg.MustRegister(svc.Tools()...)
	reg.MustRegister(files.FindTool(pp, nil))
	reg.MustRegister((&shell.Runner{Paths: pp, Home: home}).Tools()...)
	bus := events.NewBus(nil, 0, 0)
	broker := approval.New(approval.Options{Timeout: 5 * time.Second, Approvers: func() int { return 0 }, Notify: agent.Notifier{Events: bus, Audit: auditLog}})
	ag, err := agent.New(agent.Config{}, agent.Deps{LLM: client, Tools: reg, Policy: pol, Paths: pp, Approvals: broker, Chats: chats, Audit: auditLog, Events: bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ag.Close() })
	c, err := chats.Create(ctx, "local files")
	if err != nil {
		t.Fatal(err)
	}

	res, err := ag.Run(ctx, c.ID, "What does the contract in ~/Documents say about termination?", agent.Options{})
	if err != nil || !res.OK || !strings.Contains(res.Text, "three months notice") {
		t.Fatalf("turn 1: %v %+v", err, res)
	}
	res, err = ag.Run(ctx, c.ID, "Which files in ~/Downloads are over 100 MB?", agent.Options{})
	if err != nil || !res.OK || !strings.Contains(res.Text, "movie.mkv") {
		t.Fatalf("turn 2: %v %+v", err, res)
	}

	// What the model was shown: the clause (as untrusted content) and the
	// two big files from both tools, never the small one.
	reqs := srv.ChatRequests()
	toolText := func(i int) string {
		var b strings.Builder
		for _, m := range reqs[i].Messages {
			if m.Role == "tool" {
				b.WriteString(m.Content)
			}
		}
		return b.String()
	}
	if s := toolText(1); !strings.Contains(s, "terminate this contract with three months notice") || !strings.Contains(s, "<untrusted_content") || !strings.Contains(s, `"page":3`) {
		t.Fatalf("document_search result the model saw:\n%s", s)
	}
	last := toolText(len(reqs) - 1)
	for _, want := range []string{"2 matches under " + home + "/Downloads", "700.0 MiB", "movie.mkv", "iso.img"} {
		if !strings.Contains(last, want) {
			t.Fatalf("find results lack %q:\n%s", want, last)
		}
	}
	if strings.Contains(last, "notes.txt") {
		t.Fatalf("a small file was listed:\n%s", last)
	}
}
