package app

import (
	"context"
	"time"

	"github.com/hestia-dev/hestia/internal/authority"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/files"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/tools/builtin"
)

// initAgent wires the agent core: chats, audit, policy, approvals, the event
// bus, the generic tools and the turn loop, and serves their routes.
func (a *App) initAgent(ctx context.Context) error {
	cfg := a.Config
	chatDB, err := a.OpenStore(ctx, chat.Schema)
	if err != nil {
		return err
	}
	auditDB, err := a.OpenStore(ctx, audit.Schema)
	if err != nil {
		return err
	}
	policyDB, err := a.OpenStore(ctx, policy.Schema)
	if err != nil {
		return err
	}
	if a.Server == nil {
		return nil // store-only commands (backup, doctor) need nothing more
	}
	log := a.Log.With("component", "agent")
	chats := chat.New(chatDB, a.Now)
	auditLog := audit.New(auditDB, a.Now, log)
	rules, err := policy.NewRuleStore(ctx, policyDB, a.Now, log)
	if err != nil {
		return err
	}
	threshold, err := policy.ParseThreshold(cfg.Policy.AutoApprove)
	if err != nil {
		return err
	}
	engine, err := policy.New(policy.Config{AutoApprove: threshold, DenyPrefixes: cfg.Policy.DenyPrefixes, NoTaint: !cfg.Safety.Taint}, rules, policy.NewModes(a.Now), log)
	if err != nil {
		return err
	}
	bus := events.NewBus(a.Now, 0, 0)
	a.Budget.SetEvents(bus)
	engine.SetOnChange(func() { bus.Publish("policy.changed", "", nil) })

	paths, _, err := a.pathPolicy()
	if err != nil {
		return err
	}
	reg := tools.NewRegistry()
	broker := approval.New(approval.Options{Clock: a.Now, Timeout: cfg.Agent.ApprovalTimeout.D(), Approvers: bus.Approvers, ApproversFor: bus.ApproversFor,
		Notify: agent.Notifier{Events: bus, Audit: auditLog}})
	// The one path every tool call takes, whatever started it (chat,
	// channels, jobs, watches, Action Center, held calls, sub-agents, MCP
	// sessions); see internal/authority.
	auth := authority.New(authority.Deps{Tools: reg, Policy: engine, Paths: paths, Approvals: broker, Audit: auditLog,
		Clock: a.Now, ToolTimeout: cfg.Agent.ToolTimeout.D(), Log: log.With("component", "authority"),
		Publish: func(typ, chatID string, data map[string]any) { bus.Publish(typ, chatID, data) }})
	held, err := a.openHeldCalls(ctx, auth, chats, bus) // heldcalls.go
	if err != nil {
		return err
	}
	auth.SetHeld(heldAdapter{held})
	// A call the daemon died during gets its result row (unknown) before
	// anything else runs.
	if n, err := auth.CloseUnfinished(ctx); err != nil {
		log.Error("closing tool calls left running by a stopped daemon", "err", err)
	} else if n > 0 {
		log.Warn("toolCallsUnknown", "count", n)
	}
	if err := files.Register(reg, paths); err != nil {
		return err
	}
	if err := a.registerMail(ctx, reg, paths); err != nil {
		return err
	}
	if err := a.registerLocalTools(ctx, reg, paths); err != nil {
		return err
	}
	if err := a.registerMCP(ctx, reg); err != nil {
		return err
	}
	skillNotes, err := a.registerSkills(ctx, reg)
	if err != nil {
		return err
	}
	if err := a.registerSubagents(reg, auth); err != nil {
		return err
	}
	if err := a.registerCalendar(ctx, reg); err != nil {
		return err
	}
	if _, err := a.registerWiki(ctx, reg); err != nil {
		return err
	}
	if err := a.registerContacts(ctx, reg); err != nil {
		return err
	}
	mem, err := a.registerMemory(ctx, reg, chats)
	if err != nil {
		return err
	}
	if err := reg.Register(builtin.Now(a.Now, time.Local)); err != nil {
		return err
	}
	if err := reg.Register(builtin.AskUser()); err != nil {
		return err
	}
	// With tools_load registered the agent sends the core tools and a
	// catalogue, and the rest of a group's definitions on demand (issue 31).
	if err := reg.Register(builtin.ToolsLoad(reg)); err != nil {
		return err
	}

	ag, err := agent.New(agent.Config{
		Tier: llm.Tier(cfg.Agent.Tier), StepLimit: cfg.Agent.StepLimit, QueueLimit: cfg.Agent.QueueLimit,
		ContextTokens: cfg.Agent.ContextTokens, ToolTimeout: cfg.Agent.ToolTimeout.D(),
	}, agent.Deps{LLM: a.Chat, Budget: a.Budget, Usage: a.Usage, Tools: reg, Policy: engine, Paths: paths, Approvals: broker, Chats: chats, Audit: auditLog, Events: bus, Log: log, Clock: a.Now,
		Profile: mem.prompt, OnCompact: mem.onCompact, SystemNotes: skillNotes, Authority: auth, Window: a.LLM.WindowTokens})
	if err != nil {
		return err
	}
	a.addWindowCheck(ag)

	// Requests a killed daemon left waiting are closed before anything
	// else runs, so the audit trail and the transcripts say they expired.
	// A failure here must not keep the daemon down (nothing ran either
	// way); it is logged and retried at the next start.
	if _, err := ag.CloseOrphanedApprovals(ctx); err != nil {
		log.Error("closing approvals left by a stopped daemon", "err", err)
	}

	a.core = agentCore{agent: ag, chats: chats, bus: bus, tools: reg, approvals: broker, policy: engine, audit: auditLog, paths: paths, held: held, auth: auth}
	a.exposeMCP(paths, auditLog)

	mux := a.Server.API()
	(&chat.API{Store: chats, Hooks: chat.Hooks{
		Created:  func(c chat.Chat) { bus.Publish("chat.created", c.ID, map[string]any{"chat": c}) },
		Updated:  func(c chat.Chat) { bus.Publish("chat.updated", c.ID, map[string]any{"chat": c}) },
		Deleting: func(id string) { ag.Cancel(id) },
		Deleted: func(id string) {
			engine.Modes().Clear(id)
			bus.Publish("chat.deleted", id, map[string]any{"id": id})
		},
	}}).Routes(mux)
	ag.Routes(mux)
	broker.Routes(mux)
	auditLog.Routes(mux)
	bus.Routes(mux)
	(&policy.API{Engine: engine, Registry: reg, Paths: paths, Audit: func(typ, chatID, summary string, data any) {
		auditLog.Record(context.Background(), audit.Entry{Type: typ, ChatID: chatID, Summary: summary, Data: data})
	}}).Routes(mux)

	// Streams and turns must end when the daemon stops, or graceful HTTP
	// shutdown would wait on every open event stream.
	a.AddWorker("agent", func(ctx context.Context) error {
		<-ctx.Done()
		bus.Close()
		return ag.Close()
	})
	a.OnClose(ag.Close)
	return nil
}
