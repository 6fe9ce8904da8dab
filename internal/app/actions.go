package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/authority"

	"github.com/hestia-dev/hestia/internal/actions"
	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/scheduler"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/untrusted"
)

// initActions runs the Action Center in the daemon: it scans new mail
// (through a read-only view of the mail mirror), plans with the model,
// serves its API and tools, and executes items' steps through the policy
// with approvals that do not expire.
func (a *App) initActions(ctx context.Context) error {
	if a.Server == nil || a.core.agent == nil {
		return nil
	}
	m, err := a.OpenMail(ctx)
	if err != nil {
		return err
	}
	c, err := actions.Open(ctx, a.Paths.DB(actions.Schema.Name), actions.Options{
		Log: a.Log.With("component", "actions"), Now: a.Now,
		Source: mailSource{m.Store}, Planner: a.planActions, CheckStep: a.checkActionStep, CheckFlowTool: a.checkFlowTool, RunStep: a.runActionStep,
		Embedder: flowEmbedder{a.LLM},
		ScanElsewhere: func() {
			if a.Jobs != nil {
				if _, err := a.Jobs.RunNow(context.Background(), "actions.scan"); err != nil && !errors.Is(err, scheduler.ErrRunning) {
					a.Log.Warn("actionScanKick", "err", err)
				}
			}
		},
		OnNew: func(it actions.Item) {
			a.core.bus.Publish("action.created", "", map[string]any{"action": it})
			if a.Notify != nil {
				if _, err := a.Notify.Notify(context.Background(), notify.Notification{Kind: notify.KindAction, Key: fmt.Sprintf("action:%d:%d", it.ID, it.LastMessage),
					Title: "Action: " + strings.ReplaceAll(it.Kind, "_", " "), Body: it.Summary, URL: fmt.Sprintf("/actions?item=%d", it.ID)}); err != nil {
					a.Log.Warn("actionNotify", "err", err)
				}
			}
		},
	})
	if err != nil {
		return err
	}
	a.OnClose(c.Close)
	a.Actions = c
	for _, t := range actions.Tools(c) {
		if err := a.core.tools.Register(t); err != nil {
			return err
		}
	}
	c.Routes(a.Server.API())
	a.AddWorker("actions", c.Run)
	// Scans are the built-in job actions.scan (every 5 minutes, journaled,
	// `hestia jobs run actions.scan`); enabling the center runs one now.
	return a.builtinJob(ctx, "actions.scan", 5*time.Minute, 30*time.Minute, func(ctx context.Context) error {
		if err := a.backgroundAllowed(); err != nil {
			return err // consent.go: no mail leaves for the model unasked
		}
		r, err := c.Scan(ctx)
		if err == nil && r.Created+r.Updated > 0 {
			a.Log.Info("actionScan", "messages", r.Messages, "threads", r.Threads, "created", r.Created, "updated", r.Updated)
		}
		return err
	})
}

// mailSource reads the mail mirror for the Action Center.
type mailSource struct{ s *mail.Store }

func (m mailSource) MaxID(ctx context.Context) (int64, error) { return m.s.MaxID(ctx) }

func (m mailSource) Since(ctx context.Context, after int64, limit int) ([]actions.Message, error) {
	ids, err := m.s.NewMessages(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	var out []actions.Message
	for _, x := range ids {
		msg, err := m.s.Read(ctx, x.ID, 0, 4000)
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, actions.Message{ID: msg.ID, ThreadID: msg.ThreadID, From: msg.From, To: msg.To, Subject: msg.Subject, Mailbox: msg.Mailbox, Role: x.Role, Date: msg.Date, Body: msg.Body})
	}
	return out, nil
}

func (m mailSource) Thread(ctx context.Context, id int64, limit int) ([]actions.Message, error) {
	tp, err := m.s.Thread(ctx, id, 0, limit, 2000)
	if err != nil {
		return nil, err
	}
	var out []actions.Message
	for _, s := range slices.Backward(tp.Messages) {
		out = append(out, actions.Message{ID: s.ID, ThreadID: s.ThreadID, From: s.From, Subject: s.Subject, Mailbox: s.Mailbox, Date: s.Date, Body: s.Snippet})
	}
	return out, nil
}

const plannerSystem = `You triage the user's new mail for their Action Center. You get one mail thread, oldest message first; the newest messages are the fresh ones.
Decide whether the thread needs the user to do something. Answer with ONE JSON object and nothing else:
{"needed": true|false, "kind": "reply_needed"|"scheduling"|"follow_up"|"review", "priority": "high"|"normal"|"low", "deadline": "RFC 3339 or empty", "summary": "one sentence in the user's language", "steps": [{"title": "...", "tool": "mail_reply", "args": {"id": <message id>, "body": "..."}} or {"title": "...", "manual": true}], "confidence": 0.0-1.0}
Use only tools you are told exist, with concrete arguments; otherwise make the step manual. Newsletters, notifications and FYI messages are not needed.
`

var jsonObjRE = lazyre.New(`(?s)\{.*\}`)

// planActions makes the one planner call for a thread.
func (a *App) planActions(ctx context.Context, in actions.PlanInput) (actions.Plan, error) {
	if a.Chat == nil {
		return actions.Plan{}, errors.New("no model configured")
	}
	b, err := untrusted.NewBoundary(nil)
	if err != nil {
		return actions.Plan{}, err
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "User's language: %s\nNow: %s\nTools that exist: mail_reply (id, body, reply_all), mail_send (to, subject, body)", in.Language, a.Now().Format(time.RFC3339))
	for _, f := range in.Flows {
		fmt.Fprintf(&sb, "\nThe user's procedure %q applies when %s: %s", f.Name, f.Trigger, f.Procedure)
		for _, name := range f.Tools {
			if t, err := a.core.tools.Get(name); err == nil {
				fmt.Fprintf(&sb, "\nTool that exists for this procedure: %s, arguments %s", name, t.Spec().Schema)
			}
		}
	}
	sb.WriteString("\n\nThread:\n")
	for _, m := range in.Thread {
		fresh := ""
		if slices.Contains(in.Fresh, m.ID) {
			fresh = " (new)"
		}
		w, _ := b.Wrap("mail", fmt.Sprintf("id %d%s, %s, from %s, subject %s\n%s", m.ID, fresh, m.Date.Format(time.RFC3339), m.From, m.Subject, m.Body))
		sb.WriteString(w + "\n")
	}
	res, err := a.Chat.Complete(ctx, llm.Request{Tier: llm.Tier(a.Config.Agent.Tier), MaxTokens: 1200, Service: "actions", Action: "plan",
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: plannerSystem + untrusted.SystemNote}, {Role: llm.RoleUser, Content: sb.String()}}})
	if err != nil {
		return actions.Plan{}, err
	}
	var p actions.Plan
	if err := json.Unmarshal([]byte(jsonObjRE.FindString(res.Text)), &p); err != nil {
		return actions.Plan{}, fmt.Errorf("the planner's answer is not the JSON object asked for: %w", err)
	}
	return p, nil
}

// checkActionStep accepts a proposed tool step for a registered tool with
// valid arguments; the Action Center has already refused any tool outside
// the plan's step tools (actions.StepTools).
func (a *App) checkActionStep(name string, args json.RawMessage) (json.RawMessage, error) {
	if err := a.checkFlowTool(name); err != nil && !slices.Contains(actions.DefaultStepTools, name) {
		return nil, err
	}
	t, err := a.core.tools.Get(name)
	if err != nil {
		return nil, err
	}
	_, canon, err := tools.DecodeArgs(name, string(args), t.Spec().Schema)
	return canon, err
}

// checkFlowTool says whether a flow may declare a tool: a registered one
// that is not part of the background plane (watches, the Action Center
// itself) or a question to the user nobody is there to answer.
func (a *App) checkFlowTool(name string) error {
	if strings.HasPrefix(name, "watch_") || strings.HasPrefix(name, "action") || name == "flow_create" || name == "ask_user" {
		return fmt.Errorf("%s cannot be an Action Center step", name)
	}
	_, err := a.core.tools.Get(name)
	return err
}

// runActionStep runs one step through the authority. A gated step is an
// approval that waits without expiry; the user's decision is final.
func (a *App) runActionStep(ctx context.Context, it actions.Item, idx int, s actions.Step, awaiting func()) (string, string) {
	c := a.core
	o := actions.StepOrigin(it, a.Now())
	if chk := c.auth.Check(ctx, o, s.Tool, string(s.Args)); chk.ArgErr == nil && chk.Result.Decision == policy.Gate {
		awaiting()
	}
	out := c.auth.Invoke(ctx, o, authority.Call{ID: fmt.Sprintf("action-%d-step-%d", it.ID, idx), Tool: s.Tool, Args: string(s.Args)})
	switch out.Decision {
	case authority.Invalid:
		return actions.StepFailed, out.ArgErr.Error()
	case authority.Blocked:
		return actions.StepDenied, "refused by policy: " + out.Policy.Reason
	case authority.Cancelled:
		return actions.StepAwaiting, "asked again at the next start"
	case authority.Allowed, authority.Granted, authority.Approved, authority.Edited:
	default:
		msg := "not approved (" + out.Decision + ")"
		if out.Note != "" {
			msg += ": " + out.Note
		}
		return actions.StepDenied, msg
	}
	if out.Err != nil {
		return actions.StepFailed, out.Err.Error()
	}
	if out.Result.IsError {
		return actions.StepFailed, out.Result.Content
	}
	return actions.StepDone, out.Result.Content
}

// flowEmbedder embeds mail and flow triggers for the Action Center's
// hybrid flow retrieval through the local-embed tier.
type flowEmbedder struct{ r *llm.Router }

func (f flowEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if f.r == nil {
		return nil, errors.New("no embedder")
	}
	res, err := f.r.Embed(ctx, llm.EmbedRequest{Tier: llm.LocalEmbed, Inputs: texts, Service: "actions", Action: "flow-retrieval"})
	if err != nil {
		return nil, err
	}
	for _, e := range res.Errors {
		if e != nil {
			return nil, e
		}
	}
	return res.Vectors, nil
}

func (flowEmbedder) Dimension() int { return 0 }
