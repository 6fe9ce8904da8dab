package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/files"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/tools/builtin"
)

// harness is a complete agent over real stores in a temp dir, a real file
// tree as the user's home, and a scripted model server.
type harness struct {
	t       *testing.T
	home    string // the fake user home; file tools are confined to it
	data    string // Hestia's data dir (protected)
	srv     *llmtest.Server
	agent   *Agent
	chats   *chat.Store
	audit   *audit.Log
	broker  *approval.Broker
	bus     *events.Bus
	policy  *policy.Engine
	reg     *tools.Registry
	chatID  string
	probe   *probeTool
	approve atomic.Int32 // attached approvers reported to the broker
}

type harnessOpts struct {
	cfg         Config
	timeout     time.Duration
	noApprovers bool
	profile     func() (string, string)
	onCompact   func(string)
	clock       func() time.Time
	// lazyTools registers tools_load: on-demand tool loading (offer.go).
	lazyTools    bool
	denyPrefixes []string
}

func newHarness(t *testing.T, o harnessOpts, turns ...llmtest.Turn) *harness {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	h := &harness{t: t, home: filepath.Join(root, "home"), data: filepath.Join(root, "data")}
	for _, d := range []string{h.home, h.data, filepath.Join(h.home, ".ssh"), filepath.Join(h.home, "notes")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(h.home, "notes", "hello.txt"), "hello from the notes\nsecond line\n")
	writeFile(t, filepath.Join(h.home, ".ssh", "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n")
	writeFile(t, filepath.Join(h.data, "auth-token"), "supersecrettoken")
	writeFile(t, filepath.Join(h.home, ".env"), "API_KEY=sk-live-123456789")

	h.srv = llmtest.New(t, turns...)
	client := llm.NewOpenAI(llm.Target{Provider: "llmtest", BaseURL: h.srv.URL, APIKey: "k", Model: "llmtest-model"}, nil)

	open := func(s store.Schema) *store.DB {
		db, err := store.Open(ctx, filepath.Join(root, "db", s.Name+".db"), s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	h.chats = chat.New(open(chat.Schema), nil)
	h.audit = audit.New(open(audit.Schema), nil, nil)
	rules, err := policy.NewRuleStore(ctx, open(policy.Schema), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.policy, err = policy.New(policy.Config{AutoApprove: policy.ThresholdLow, DenyPrefixes: o.denyPrefixes}, rules, policy.NewModes(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := pathpolicy.New(pathpolicy.Options{Home: h.home, Roots: []string{h.home}, Protected: []string{h.data}})
	if err != nil {
		t.Fatal(err)
	}
	h.reg = tools.NewRegistry()
	if err := files.Register(h.reg, pp); err != nil {
		t.Fatal(err)
	}
	h.probe = &probeTool{}
	h.reg.MustRegister(builtin.Now(time.Now, time.UTC), builtin.AskUser(), h.probe)
	if o.lazyTools {
		h.reg.MustRegister(builtin.ToolsLoad(h.reg))
	}
	h.bus = events.NewBus(nil, 0, 0)
	if !o.noApprovers {
		h.approve.Store(1)
	}
	h.broker = approval.New(approval.Options{Timeout: o.timeout, Approvers: func() int { return int(h.approve.Load()) }, Notify: Notifier{Events: h.bus, Audit: h.audit}})
	h.agent, err = New(o.cfg, Deps{LLM: client, Tools: h.reg, Policy: h.policy, Paths: pp, Approvals: h.broker, Chats: h.chats, Audit: h.audit, Events: h.bus,
		Profile: o.profile, OnCompact: o.onCompact, Clock: o.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.agent.Close() })
	c, err := h.chats.Create(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	h.chatID = c.ID
	return h
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) run(text string, opts Options) Result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := h.agent.Run(ctx, h.chatID, text, opts)
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	return res
}

// decideNext waits for the next pending approval and applies d.
func (h *harness) decideNext(d approval.Decision) approval.Request {
	h.t.Helper()
	req, err := h.decide(d)
	if err != nil {
		h.t.Fatal(err)
	}
	return req
}

// decideInBackground applies d to the next pending approval from another
// goroutine, while the test's own goroutine runs the turn that asks for
// it; a failure is reported with Error (Fatal must not be called off the
// test's goroutine) and the test waits for it before it ends.
func (h *harness) decideInBackground(d approval.Decision) {
	done := make(chan struct{})
	h.t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		if _, err := h.decide(d); err != nil {
			h.t.Error(err)
		}
	}()
}

func (h *harness) decide(d approval.Decision) (approval.Request, error) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p := h.broker.Pending(h.chatID); len(p) > 0 {
			if _, err := h.broker.Decide(p[0].ID, d); err != nil {
				return approval.Request{}, fmt.Errorf("decide %s: %w", p[0].ID, err)
			}
			return p[0], nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return approval.Request{}, errors.New("no approval request appeared")
}

func (h *harness) waitPending() approval.Request {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p := h.broker.Pending(h.chatID); len(p) > 0 {
			return p[0]
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatal("no approval request appeared")
	return approval.Request{}
}

func (h *harness) toolMessages() []chat.Message {
	h.t.Helper()
	ms, err := h.chats.Messages(context.Background(), h.chatID, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []chat.Message
	for _, m := range ms {
		if m.Role == chat.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// lastToolResults returns the tool messages the model received in request i.
func (h *harness) toolResultsSent(i int) []llmtest.Message {
	h.t.Helper()
	reqs := h.srv.Requests()
	if i >= len(reqs) {
		h.t.Fatalf("only %d model requests, want index %d", len(reqs), i)
	}
	var out []llmtest.Message
	for _, m := range reqs[i].Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(h.home, rel))
	return err == nil
}

func (h *harness) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(h.home, rel))
	if err != nil {
		return ""
	}
	return string(b)
}

// probeTool is a parallel-safe low-risk tool that records calls and
// concurrency and can be slowed down.
type probeTool struct {
	mu      sync.Mutex
	calls   []string
	active  atomic.Int32
	maxSeen atomic.Int32
	delay   time.Duration
}

func (p *probeTool) Spec() tools.Spec {
	return tools.Spec{Name: "probe", Description: "test probe", Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true,
		Schema: json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string"},"n":{"type":"integer"}},"required":["tag"],"additionalProperties":false}`), MaxResult: 50}
}
func (p *probeTool) Available(context.Context) error { return nil }
func (p *probeTool) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	n := p.active.Add(1)
	defer p.active.Add(-1)
	for {
		m := p.maxSeen.Load()
		if n <= m || p.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	var a struct {
		Tag string `json:"tag"`
	}
	_ = json.Unmarshal(c.Args, &a)
	p.mu.Lock()
	p.calls = append(p.calls, a.Tag)
	p.mu.Unlock()
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	}
	return tools.Result{Content: "probe " + a.Tag + " " + strings.Repeat("x", 100)}, nil
}

func (p *probeTool) tags() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}
