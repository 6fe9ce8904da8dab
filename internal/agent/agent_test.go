package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/policy"
)

var call = llmtest.Call

func TestMultiStepToolUse(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(call("c1", "list_dir", `{"path":"notes"}`)),
		llmtest.ToolCalls(call("c2", "read_file", `{"path":"~/notes/hello.txt"}`)),
		llmtest.Text("It says ", "hello."),
	)
	res := h.run("what is in my notes?", Options{})
	if !res.OK || res.Text != "It says hello." || res.Steps != 3 || res.MessageID == "" {
		t.Fatalf("result = %+v", res)
	}
	sent := h.toolResultsSent(2)
	if len(sent) != 2 || sent[0].ToolCallID != "c1" || sent[1].ToolCallID != "c2" {
		t.Fatalf("tool results sent = %+v", sent)
	}
	if !strings.Contains(sent[0].Content, "hello.txt") {
		t.Errorf("list_dir result lacks the file: %q", sent[0].Content)
	}
	if !strings.Contains(sent[1].Content, "hello from the notes") || !strings.Contains(sent[1].Content, "untrusted") {
		t.Errorf("read_file result not delivered as wrapped untrusted content: %q", sent[1].Content)
	}
	ms, _ := h.chats.Messages(context.Background(), h.chatID, 0)
	roles := ""
	for _, m := range ms {
		roles += m.Role[:1]
	}
	if roles != "uatataa"[:len(roles)] || len(ms) != 6 {
		t.Errorf("transcript roles = %s (%d messages), want uatata", roles, len(ms))
	}
	tm := h.toolMessages()
	if tm[1].Tool == nil || tm[1].Tool.Decision != DecAllowed || tm[1].Tool.Status != StatusOK {
		t.Errorf("tool run record = %+v", tm[1].Tool)
	}
}

func TestParallelSafeBatchRunsConcurrentlyInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(call("a", "probe", `{"tag":"one"}`), call("b", "probe", `{"tag":"two"}`), call("c", "probe", `{"tag":"three"}`)),
		llmtest.Text("done"),
	)
	h.probe.delay = 150 * time.Millisecond
	start := time.Now()
	res := h.run("go", Options{})
	if !res.OK {
		t.Fatalf("result = %+v", res)
	}
	if h.probe.maxSeen.Load() < 2 {
		t.Errorf("max concurrency %d; parallel-safe calls should overlap", h.probe.maxSeen.Load())
	}
	if el := time.Since(start); el > 400*time.Millisecond+time.Second {
		t.Errorf("took %s; calls look serial", el)
	}
	sent := h.toolResultsSent(1)
	want := []string{"a", "b", "c"}
	for i, m := range sent {
		if m.ToolCallID != want[i] {
			t.Fatalf("results out of call order: %+v", sent)
		}
	}
	// Result cap: probe caps at 50 characters.
	if !strings.Contains(sent[0].Content, "[result truncated: showed 50 of") {
		t.Errorf("per-tool result cap not applied: %q", sent[0].Content)
	}
}

func TestMixedBatchRunsSerially(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(call("a", "probe", `{"tag":"one"}`), call("b", "now", `{}`), call("c", "probe", `{"tag":"oops","bad":1}`), call("d", "probe", `{"tag":"two"}`)),
		llmtest.Text("done"),
	)
	h.probe.delay = 20 * time.Millisecond
	res := h.run("go", Options{})
	if !res.OK {
		t.Fatalf("result = %+v", res)
	}
	if h.probe.maxSeen.Load() != 1 {
		t.Errorf("batch with a refused call ran concurrently (max %d)", h.probe.maxSeen.Load())
	}
	if got := strings.Join(h.probe.tags(), ","); got != "one,two" {
		t.Errorf("probe ran %s, want one,two", got)
	}
}

func TestArgumentValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, args, want string
	}{
		{"invalid json", `{"tag": "x"`, "are not valid JSON"},
		{"not an object", `["x"]`, "are not a JSON object (got array)"},
		{"missing required", `{}`, `missing required field "tag"`},
		{"empty with required", ``, "are missing (required: tag)"},
		{"duplicate keys differ", `{"tag":"a","tag":"b"}`, `key "tag" is given two different values`},
		{"wrong type", `{"tag":5}`, `field "tag" must be string, not number`},
		{"unknown field", `{"tag":"a","approved":true}`, `unexpected field "approved"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOpts{}, llmtest.ToolCalls(call("x", "probe", c.args)), llmtest.Text("ok"))
			h.run("go", Options{})
			if len(h.probe.tags()) != 0 {
				t.Fatal("the tool ran with refused arguments")
			}
			sent := h.toolResultsSent(1)
			if len(sent) != 1 || !strings.Contains(sent[0].Content, c.want) || !strings.Contains(sent[0].Content, "the call did not run") {
				t.Fatalf("model got %+v, want text containing %q", sent, c.want)
			}
			if tm := h.toolMessages(); tm[0].Tool.Decision != DecInvalid {
				t.Errorf("decision = %s", tm[0].Tool.Decision)
			}
		})
	}
	// Duplicate keys with equal values are accepted.
	h := newHarness(t, harnessOpts{}, llmtest.ToolCalls(call("x", "probe", `{"tag":"a","tag":"a"}`)), llmtest.Text("ok"))
	h.run("go", Options{})
	if got := h.probe.tags(); len(got) != 1 || got[0] != "a" {
		t.Errorf("equal duplicate keys: probe calls = %v", got)
	}
}

func writeCall(id, path, content string) llmtest.ToolCall {
	b, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return call(id, "write_file", string(b))
}

func TestApprovalOutcomes(t *testing.T) {
	t.Parallel()
	t.Run("approve", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, harnessOpts{}, llmtest.ToolCalls(writeCall("w", "out.txt", "hi")), llmtest.Text("written"))
		h.decideInBackground(approval.Decision{Outcome: approval.Approve})
		res := h.run("write it", Options{})
		if !res.OK || h.read("out.txt") != "hi" {
			t.Fatalf("res=%+v file=%q", res, h.read("out.txt"))
		}
		if tm := h.toolMessages(); tm[0].Tool.Decision != DecApproved || tm[0].Tool.Policy != "gate" {
			t.Errorf("record = %+v", tm[0].Tool)
		}
	})
	t.Run("edit revalidated", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, harnessOpts{}, llmtest.ToolCalls(writeCall("w", "out.txt", "model text")), llmtest.Text("written"))
		done := make(chan error, 1)
		go func() {
			req := h.waitPending()
			if req.Tool != "write_file" || !strings.Contains(string(req.Args), "model text") || req.Risk != "medium" || !strings.Contains(req.Preview, "out.txt") {
				done <- errors.New("request lacks tool/args/risk/preview: " + string(req.Args) + req.Preview)
				return
			}
			// An invalid edit is refused and the request stays pending.
			for _, bad := range []string{`{"path":"out.txt"}`, `{"path":"out.txt","content":"x","extra":1}`, `{"path":"~/.ssh/authorized_keys","content":"x"}`} {
				_, err := h.broker.Decide(req.ID, approval.Decision{Outcome: approval.Edit, Args: json.RawMessage(bad)})
				if !errors.Is(err, approval.ErrInvalid) {
					h.policy.Rules() // keep vet quiet about unused
					done <- errors.New("bad edit accepted: " + bad)
					return
				}
			}
			_, err := h.broker.Decide(req.ID, approval.Decision{Outcome: approval.Edit, Args: json.RawMessage(`{"content":"user text","path":"out.txt"}`)})
			if err == nil {
				_, err2 := h.broker.Decide(req.ID, approval.Decision{Outcome: approval.Approve})
				if !errors.Is(err2, approval.ErrAlreadyDecided) {
					err = errors.New("second decision was not rejected")
				}
			}
			done <- err
		}()
		res := h.run("write it", Options{})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !res.OK || h.read("out.txt") != "user text" {
			t.Fatalf("res=%+v file=%q", res, h.read("out.txt"))
		}
		tm := h.toolMessages()
		if tm[0].Tool.Decision != DecEdited || !strings.Contains(string(tm[0].Tool.EffectiveInput), "user text") || !strings.Contains(string(tm[0].Tool.Input), "model text") {
			t.Errorf("record = %+v", tm[0].Tool)
		}
		if sent := h.toolResultsSent(1); !strings.Contains(sent[0].Content, "the user edited the arguments") || !strings.Contains(sent[0].Content, "user text") {
			t.Errorf("model not told about the edit: %q", sent[0].Content)
		}
	})
	notDone := []struct {
		name     string
		decision approval.Decision
		opts     Options
		timeout  time.Duration
		noAppr   bool
		want     string
		dec      string
	}{
		{"deny with note", approval.Decision{Outcome: approval.Deny, Note: "not now"}, Options{}, 0, false, "the user denied write_file", DecDenied},
		{"revise", approval.Decision{Outcome: approval.Revise, Note: "use notes/"}, Options{}, 0, false, "asked you to revise", DecRevise},
		{"timeout", approval.Decision{}, Options{}, 50 * time.Millisecond, false, "nobody answered within", DecTimeout},
		{"no approver attached", approval.Decision{}, Options{}, 0, true, "nobody is attached", DecNoApprover},
		{"headless caller", approval.Decision{}, Options{NoApprover: true}, 0, false, "nobody is attached", DecNoApprover},
	}
	for _, c := range notDone {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOpts{timeout: c.timeout, noApprovers: c.noAppr}, llmtest.ToolCalls(writeCall("w", "out.txt", "hi")), llmtest.Text("ok"))
			if c.decision.Outcome != "" {
				h.decideInBackground(c.decision)
			}
			res := h.run("write it", c.opts)
			if !res.OK {
				t.Fatalf("res = %+v", res)
			}
			if h.exists("out.txt") {
				t.Fatal("file was written without approval")
			}
			sent := h.toolResultsSent(1)
			if !strings.Contains(sent[0].Content, "NOT done") || !strings.Contains(sent[0].Content, c.want) {
				t.Fatalf("model got %q, want NOT done + %q", sent[0].Content, c.want)
			}
			if c.decision.Note != "" && !strings.Contains(sent[0].Content, c.decision.Note) {
				t.Errorf("note missing from %q", sent[0].Content)
			}
			if tm := h.toolMessages(); tm[0].Tool.Decision != c.dec {
				t.Errorf("decision = %s, want %s", tm[0].Tool.Decision, c.dec)
			}
		})
	}
}

func TestDeniedByRuleAndTemporaryMode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(writeCall("w1", "notes/a.md", "A")),
		llmtest.ToolCalls(writeCall("w2", "secret/b.md", "B")),
		llmtest.Text("ok"),
	)
	ctx := context.Background()
	if _, err := h.policy.Rules().Create(ctx, policy.Rule{Tool: "write_file", PathScope: filepath.Join(h.home, "secret"), Decision: policy.Deny, Priority: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.policy.Modes().Set(h.chatID, policy.ModeAllowChat, 0); err != nil {
		t.Fatal(err)
	}
	res := h.run("write both", Options{})
	if !res.OK {
		t.Fatalf("res = %+v", res)
	}
	if h.read("notes/a.md") != "A" {
		t.Error("temporary mode did not allow the gated write")
	}
	if h.exists("secret/b.md") {
		t.Error("temporary mode overrode a deny rule")
	}
	if tm := h.toolMessages(); tm[1].Tool.Decision != DecBlocked || tm[1].Tool.PolicyRule == "" {
		t.Errorf("record = %+v", tm[1].Tool)
	}
}

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	turn := llmtest.Text("a", "b", "c", "d", "e", "f", "g", "h")
	turn.ChunkDelay = 100 * time.Millisecond
	h := newHarness(t, harnessOpts{}, turn)
	sub := h.bus.Subscribe(events.SubscribeOptions{ChatID: h.chatID})
	defer sub.Close()
	tr, err := h.agent.Submit(context.Background(), h.chatID, "talk", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range sub.C() {
		if ev.Type == "message.delta" {
			break
		}
	}
	if !h.agent.Cancel(h.chatID) {
		t.Fatal("cancel found nothing running")
	}
	res := tr.Wait(context.Background())
	if res.OK || !res.Aborted || res.Error == nil || res.Error.Code != CodeCancelled {
		t.Fatalf("res = %+v", res)
	}
	ms, _ := h.chats.Messages(context.Background(), h.chatID, 0)
	if len(ms) != 2 || !strings.Contains(ms[1].Content, "[interrupted]") {
		t.Errorf("partial reply not kept: %+v", ms)
	}
}

func TestNewMessageInterruptsAndSkippedCallsGetResults(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(call("p1", "probe", `{"tag":"slow"}`), writeCall("w", "x.txt", "x")),
		llmtest.Text("second answer"),
	)
	h.probe.delay = 5 * time.Second
	first, err := h.agent.Submit(context.Background(), h.chatID, "first", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for len(h.probe.tags()) == 0 {
		time.Sleep(2 * time.Millisecond)
	}
	second, err := h.agent.Submit(context.Background(), h.chatID, "second", Options{})
	if err != nil {
		t.Fatal(err)
	}
	r1 := first.Wait(context.Background())
	r2 := second.Wait(context.Background())
	if r1.OK || r1.Error.Code != CodeInterrupted || !r1.Aborted {
		t.Errorf("first = %+v", r1)
	}
	if !r2.OK || r2.Text != "second answer" {
		t.Errorf("second = %+v", r2)
	}
	tm := h.toolMessages()
	if len(tm) != 2 || tm[1].ToolCallID != "w" || tm[1].Tool.Decision != DecSkipped {
		t.Fatalf("skipped call has no result: %+v", tm)
	}
	if h.exists("x.txt") {
		t.Error("skipped write ran")
	}
	// The second turn's request carries both results, pairing intact.
	if sent := h.toolResultsSent(1); len(sent) != 2 {
		t.Errorf("second request has %d tool results, want 2", len(sent))
	}
}

func TestQueueBound(t *testing.T) {
	t.Parallel()
	slow := llmtest.Text("slow")
	slow.FirstByteDelay = 2 * time.Second
	h := newHarness(t, harnessOpts{cfg: Config{QueueLimit: 2}}, slow, llmtest.Text("a"), llmtest.Text("b"))
	ctx := context.Background()
	var turns []*Turn
	for i := 0; i < 3; i++ {
		tr, err := h.agent.Submit(ctx, h.chatID, "msg", Options{NoInterrupt: true})
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		turns = append(turns, tr)
	}
	if _, err := h.agent.Submit(ctx, h.chatID, "one too many", Options{NoInterrupt: true}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("4th submit err = %v, want ErrQueueFull", err)
	}
	for i, tr := range turns {
		if r := tr.Wait(ctx); !r.OK {
			t.Errorf("turn %d = %+v", i, r)
		}
	}
	if turns[1].Position != 1 || turns[2].Position != 2 {
		t.Errorf("positions = %d, %d", turns[1].Position, turns[2].Position)
	}
}

func TestStepLimitWrapUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{StepLimit: 2}},
		llmtest.ToolCalls(call("1", "probe", `{"tag":"a"}`)),
		llmtest.ToolCalls(call("2", "probe", `{"tag":"b"}`)),
		llmtest.Text("summary of work"),
	)
	res := h.run("loop", Options{})
	if !res.OK || !res.StepLimitHit || res.Text != "summary of work" || res.Steps != 3 {
		t.Fatalf("res = %+v", res)
	}
	reqs := h.srv.Requests()
	if len(reqs[2].Tools) != 0 {
		t.Errorf("wrap-up request offered tools %v", reqs[2].Tools)
	}
	if len(reqs[0].Tools) == 0 {
		t.Error("first request offered no tools")
	}
}

func TestContextOverflowRecovery(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("long old result ", 2000) // ~32k chars
	h := newHarness(t, harnessOpts{cfg: Config{ContextTokens: 1_000_000}},
		llmtest.Fail(400, `{"error":{"message":"This model's maximum context length is 8192 tokens"}}`),
		llmtest.Text("fits now"),
	)
	ctx := context.Background()
	// Seed a long history with a huge tool result.
	err := h.chats.Append(ctx, h.chatID,
		&chat.Message{Role: chat.RoleUser, Content: "earlier"},
		&chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "old", Name: "probe", Arguments: json.RawMessage(`{"tag":"x"}`)}}},
		&chat.Message{Role: chat.RoleTool, ToolCallID: "old", ToolName: "probe", Content: big},
		&chat.Message{Role: chat.RoleAssistant, Content: "earlier answer"},
	)
	if err != nil {
		t.Fatal(err)
	}
	res := h.run("now", Options{})
	if !res.OK || res.Text != "fits now" {
		t.Fatalf("res = %+v", res)
	}
	reqs := h.srv.Requests()
	if len(reqs) != 2 || len(reqs[1].Body) >= len(reqs[0].Body)/2 {
		t.Fatalf("retry was not reduced: %d requests, sizes %d → %d", len(reqs), len(reqs[0].Body), len(reqs[len(reqs)-1].Body))
	}
}

func TestPreflightBudgetReduces(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{ContextTokens: 3000}}, llmtest.Text("ok"))
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if err := h.chats.Append(ctx, h.chatID, &chat.Message{Role: chat.RoleUser, Content: strings.Repeat("q", 2000)}, &chat.Message{Role: chat.RoleAssistant, Content: strings.Repeat("a", 2000)}); err != nil {
			t.Fatal(err)
		}
	}
	if res := h.run("latest question", Options{}); !res.OK {
		t.Fatalf("res = %+v", res)
	}
	req := h.srv.Requests()[0]
	if len(req.Body) > 3000*4 {
		t.Errorf("request body %d bytes exceeds the budget", len(req.Body))
	}
	last := req.Messages[len(req.Messages)-1]
	if userText(last.Content) != "latest question" {
		t.Errorf("current message lost: %q", last.Content)
	}
}

func TestModelErrorIsStructured(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{}, llmtest.Fail(401, `{"error":{"message":"bad key"}}`), llmtest.Fail(500, `{"error":{"message":"boom"}}`))
	res := h.run("hi", Options{})
	if res.OK || res.Aborted || res.Error == nil || res.Error.Code != CodeModelUnavailable || res.Error.Retryable {
		t.Fatalf("res = %+v", res)
	}
	if res := h.run("again", Options{}); res.OK || res.Error == nil || !res.Error.Retryable {
		t.Fatalf("server error: %+v", res.Error)
	}
}

func TestAskUser(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{}, llmtest.ToolCalls(call("q", "ask_user", `{"question":"Which account?","choices":["work","home"]}`)), llmtest.Text("ok"))
	go func() {
		req := h.waitPending()
		if req.Kind != approval.KindQuestion || req.Question != "Which account?" {
			return
		}
		_, _ = h.broker.Decide(req.ID, approval.Decision{Outcome: approval.Answer, Answer: "work"})
	}()
	h.run("ask", Options{})
	if sent := h.toolResultsSent(1); !strings.Contains(sent[0].Content, "The user answered: work") {
		t.Fatalf("model got %+v", sent)
	}
}

func TestSensitivePathsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(
			call("1", "read_file", `{"path":"~/.ssh/id_rsa"}`),
			call("2", "read_file", `{"path":"link-to-key"}`),
			call("3", "read_file", `{"path":"notes/../.env"}`),
			call("4", "read_file", `{"path":"linkdir/auth-token"}`),
			call("5", "list_dir", `{"path":"~/.ssh"}`),
			call("6", "read_file", `{"path":"/etc/passwd"}`),
		),
		llmtest.Text("ok"),
	)
	if err := os.Symlink(filepath.Join(h.home, ".ssh", "id_rsa"), filepath.Join(h.home, "link-to-key")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h.data, filepath.Join(h.home, "linkdir")); err != nil {
		t.Fatal(err)
	}
	h.run("read secrets", Options{})
	for _, m := range h.toolResultsSent(1) {
		if strings.Contains(m.Content, "PRIVATE KEY") || strings.Contains(m.Content, "supersecret") || strings.Contains(m.Content, "sk-live") || strings.Contains(m.Content, "root:") {
			t.Errorf("call %s leaked: %q", m.ToolCallID, m.Content)
		}
		if !strings.Contains(m.Content, "refused") {
			t.Errorf("call %s not refused: %q", m.ToolCallID, m.Content)
		}
	}
}

func TestAuditTrail(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{}, llmtest.ToolCalls(writeCall("w", "k.txt", "api_key=sk-abcdefghijklmnop")), llmtest.Text("done"))
	h.decideInBackground(approval.Decision{Outcome: approval.Approve})
	h.run("store my key sk-abcdefghijklmnop", Options{})
	evs, err := h.audit.List(context.Background(), auditFilter(h.chatID))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, e := range evs {
		types[e.Type]++
		if strings.Contains(string(e.Data), "sk-abcdefghijklmnop") || strings.Contains(e.Summary, "sk-abcdefghijklmnop") {
			t.Errorf("secret stored unredacted in %s: %s", e.Type, e.Data)
		}
	}
	for _, want := range []string{"message.user", "policy.decision", "approval.requested", "approval.resolved", "tool.run", "message.assistant"} {
		if types[want] == 0 {
			t.Errorf("no %s audit event (have %v)", want, types)
		}
	}
	if v, err := h.audit.Verify(context.Background()); err != nil || !v.OK {
		t.Errorf("verify = %+v, %v", v, err)
	}
}

func TestWaitingClientDisconnectCancelsTurn(t *testing.T) {
	t.Parallel()
	slow := llmtest.Text("never seen")
	slow.FirstByteDelay = 5 * time.Second
	h := newHarness(t, harnessOpts{}, slow)
	tr, err := h.agent.Submit(context.Background(), h.chatID, "hi", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := tr.Wait(ctx)
	if res.OK || !res.Aborted || res.Error.Code != CodeDisconnected || time.Since(start) > 3*time.Second {
		t.Fatalf("res = %+v after %s", res, time.Since(start))
	}
	if h.agent.Running(h.chatID) {
		t.Error("chat still busy after the turn ended")
	}
}

func TestToLLMKeepsPairsAtTheWindowEdge(t *testing.T) {
	t.Parallel()
	ms := []chat.Message{
		{Role: chat.RoleTool, ToolCallID: "cut", ToolName: "probe", Content: "orphan"},
		{Role: chat.RoleUser, Content: "q"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "a", Name: "probe"}, {ID: "b", Name: "probe"}}},
		{Role: chat.RoleTool, ToolCallID: "a", ToolName: "probe", Content: "ra"},
	}
	out := toLLM(ms)
	if len(out) != 4 || out[0].Role != "user" || out[2].ToolCallID != "a" || out[3].ToolCallID != "b" || !strings.Contains(out[3].Content, "NOT done") {
		t.Fatalf("%+v", out)
	}
	if string(out[1].ToolCalls[0].Arguments) != "{}" {
		t.Errorf("empty arguments not sent as {}: %q", out[1].ToolCalls[0].Arguments)
	}
}

func TestTruncatedArgumentsSaySo(t *testing.T) {
	t.Parallel()
	cut := llmtest.ToolCalls(call("w", "probe", `{"tag":"abc`))
	cut.Finish = "length"
	h := newHarness(t, harnessOpts{}, cut, llmtest.Text("ok"))
	h.run("go", Options{})
	if sent := h.toolResultsSent(1); !strings.Contains(sent[0].Content, "output token limit") || !strings.Contains(sent[0].Content, "not valid JSON") {
		t.Fatalf("model got %q", sent[0].Content)
	}
}
