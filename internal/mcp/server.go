package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/authority"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/untrusted"
)

// ExposeDeps are what the MCP server needs to run Hestia's tools for an
// outside client exactly as the agent would: the registry, the policy, the
// approval broker and the chat store (approval cards live in a chat).
type ExposeDeps struct {
	Tools *tools.Registry
	// Authority decides, asks about and runs every call
	// (internal/authority); when nil one is built over Tools, Policy,
	// Paths and Approvals.
	Authority *authority.Authority
	Policy    *policy.Engine
	Paths     policy.PathResolver
	Approvals *approval.Broker
	Chats     *chat.Store
	// Publish sends a client protocol event (chat.created, message.created).
	Publish func(typ, chatID string, data any)
	// Audit records one event; optional.
	Audit func(ctx context.Context, typ, chatID, summary string, data any)
	Log   *slog.Logger
	Now   func() time.Time
	// Version is reported to clients.
	Version string
	// ToolTimeout bounds one run (default 2 minutes).
	ToolTimeout time.Duration
}

// Exposer serves Hestia's tools over MCP. Every call goes through the
// policy; a gated call becomes a normal approval card (in a chat named
// after the client, so the web app shows it) and the MCP call waits for the
// decision. Each client session has its own taint tracker: once a session
// has received untrusted content, its writes and sends are gated even over
// trust rules, as in a chat turn.
type Exposer struct {
	d ExposeDeps

	once   sync.Once
	server *sdk.Server

	mu       sync.Mutex // guards sessions
	sessions map[*sdk.ServerSession]*exposedSession
}

type exposedSession struct {
	taint *taint.Tracker
	// relayed: the client is `hestia mcp serve`, which passes on the name
	// of the agent it serves (MetaClient) for the approval chat's title.
	relayed bool
	mu      sync.Mutex // guards client and chatID
	client  string
	chatID  string
}

// displayName cleans a client-supplied name for titles and cards.
func displayName(n string) string {
	n, _ = untrusted.Sanitize(n)
	r := []rune(strings.Join(strings.Fields(n), " "))
	if len(r) > 60 {
		r = r[:60]
	}
	if len(r) == 0 {
		return "an MCP client"
	}
	return string(r)
}

// NewExposer builds the server side.
func NewExposer(d ExposeDeps) *Exposer {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.ToolTimeout <= 0 {
		d.ToolTimeout = 2 * time.Minute
	}
	if d.Authority == nil {
		d.Authority = authority.New(authority.Deps{Tools: d.Tools, Policy: d.Policy, Paths: d.Paths, Approvals: d.Approvals, Clock: d.Now, Log: d.Log, ToolTimeout: d.ToolTimeout})
	}
	return &Exposer{d: d, sessions: map[*sdk.ServerSession]*exposedSession{}}
}

// exposed reports whether a registry tool is offered to outside clients:
// not other servers' tools (Hestia is not a relay) and not ask_user (the
// outside agent has its own user).
func exposed(name string) bool {
	return !strings.HasPrefix(name, "mcp_") && name != "ask_user"
}

// Server returns the SDK server, built on first use so that every
// connector has registered its tools.
func (e *Exposer) Server() *sdk.Server {
	e.once.Do(func() {
		s := sdk.NewServer(&sdk.Implementation{Name: "hestia", Version: e.d.Version}, &sdk.ServerOptions{
			Instructions: "Hestia's tools run under the user's policy. A call that needs approval waits until the user decides in the Hestia app; a refused call returns an error naming why.",
			Logger:       e.d.Log,
		})
		for _, t := range e.d.Tools.All() {
			spec := t.Spec()
			if !exposed(spec.Name) {
				continue
			}
			schema := spec.Schema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
			}
			ro, destructive := spec.ReadOnly && !spec.Egress, !spec.ReadOnly
			open := spec.Egress
			name := spec.Name
			s.AddTool(&sdk.Tool{Name: name, Description: spec.Description, InputSchema: schema,
				Annotations: &sdk.ToolAnnotations{ReadOnlyHint: ro, DestructiveHint: &destructive, OpenWorldHint: &open}},
				func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					s := e.session(req.Session)
					if v, ok := req.Params.Meta[MetaClient].(string); ok && s.relayed {
						s.mu.Lock()
						if s.chatID == "" {
							s.client = displayName(v) + " (via hestia mcp serve)"
						}
						s.mu.Unlock()
					}
					return e.call(ctx, s, name, req.Params.Arguments), nil
				})
		}
		e.server = s
	})
	return e.server
}

// Handler is the streamable HTTP endpoint. Authentication is the daemon's
// bearer token (the API mux checks it before this runs).
func (e *Exposer) Handler() http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return e.Server() }, &sdk.StreamableHTTPOptions{Logger: e.d.Log})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A gated call waits for the user; the server's write timeout must
		// not cut it.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		h.ServeHTTP(w, r)
	})
}

// session returns the per-client state, created on first use and dropped
// when the session ends.
func (e *Exposer) session(ss *sdk.ServerSession) *exposedSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.sessions[ss]; ok {
		return s
	}
	s := &exposedSession{taint: taint.NewTracker(), client: "an MCP client"}
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
			s.client = displayName(p.ClientInfo.Name)
			s.relayed = p.ClientInfo.Name == proxyName
		}
		e.sessions[ss] = s
		go func() {
			_ = ss.Wait()
			e.mu.Lock()
			delete(e.sessions, ss)
			e.mu.Unlock()
		}()
	}
	return s
}

// chat returns the session's chat, creating it for the first card.
func (e *Exposer) chat(ctx context.Context, s *exposedSession) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chatID != "" {
		return s.chatID, nil
	}
	c, err := e.d.Chats.Create(ctx, "MCP: "+s.client)
	if err != nil {
		return "", fmt.Errorf("creating the chat for %s's approvals: %w", s.client, err)
	}
	s.chatID = c.ID
	if e.d.Publish != nil {
		e.d.Publish("chat.created", c.ID, map[string]any{"chat": c})
	}
	return c.ID, nil
}

func errResult(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func (e *Exposer) audit(ctx context.Context, typ, chatID, summary string, data any) {
	if e.d.Audit != nil {
		e.d.Audit(context.WithoutCancel(ctx), typ, chatID, summary, data)
	}
}

// call decides and runs one tool call for a client session, through the
// authority: the session's taint tracker is the turn's, and a card goes to
// a chat named after the client.
func (e *Exposer) call(ctx context.Context, s *exposedSession, name string, raw json.RawMessage) *sdk.CallToolResult {
	ctx = taint.WithTracker(ctx, s.taint)
	s.mu.Lock()
	chatID, client := s.chatID, s.client
	s.mu.Unlock()
	o := SessionOrigin(client, chatID)
	pre := e.d.Authority.Check(ctx, o, name, string(raw))
	if pre.Tool != nil && pre.ArgErr == nil {
		if err := pre.Tool.Available(ctx); err != nil {
			return errResult("%s is not available now: %v; nothing ran.", name, err)
		}
		if pre.Result.Decision == policy.Gate && chatID == "" {
			id, err := e.chat(ctx, s)
			if err != nil {
				e.d.Log.Error("mcp approval chat", "err", err)
				return errResult("%s needs the user's approval, but the approval could not be created; nothing ran.", name)
			}
			o.ChatID = id
		}
	}
	out := e.d.Authority.Invoke(ctx, o, authority.Call{ID: "mcp_" + newCallID(), Tool: name, Args: string(raw), Timeout: e.d.ToolTimeout})
	switch out.Decision {
	case authority.Invalid:
		return errResult("%s", out.ArgErr.Error())
	case authority.Blocked:
		if out.Why == authority.WhyUnknown {
			return errResult("%s is not a Hestia tool; nothing ran.", name)
		}
		return errResult("DENIED: Hestia's policy refuses %s: %s. Nothing ran.", name, out.Policy.Reason)
	case authority.Denied:
		msg := fmt.Sprintf("DENIED: the user denied %s; nothing ran.", name)
		if out.Note != "" {
			msg += " The user's note: " + out.Note
		}
		return errResult("%s", msg)
	case authority.Revise:
		return errResult("NOT DONE: the user asked for a revised %s call: %s", name, out.Note)
	case authority.Timeout:
		return errResult("NOT DONE: %s needed the user's approval and nobody answered within %s; treated as denied.", name, e.d.Approvals.Timeout())
	case authority.NoApprover:
		return errResult("NOT DONE: %s needs the user's approval in the Hestia app, and no app is open that could give it.", name)
	}
	if !out.Ran {
		return errResult("NOT DONE: the request for %s was cancelled.", name)
	}
	spec := out.Tool.Spec()
	status := "ok"
	if out.Err != nil || out.Result.IsError {
		status = "error"
	}
	e.audit(ctx, "mcp.tool_run", o.ChatID, fmt.Sprintf("%s %s for %s in %dms", name, status, client, out.Duration.Milliseconds()),
		map[string]any{"client": client, "call_id": out.CallID, "status": status})
	if err := out.Err; err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errResult("%s did not finish within %s.", name, e.d.ToolTimeout)
		}
		return errResult("%s failed: %v", name, err)
	}
	content := tools.Cap(out.Result.Content, spec.MaxResultChars())
	if spec.UntrustedOutput {
		if b, berr := untrusted.NewBoundary(nil); berr == nil {
			content, _ = b.Wrap(name, content)
		}
	}
	return &sdk.CallToolResult{IsError: out.Result.IsError, Content: []sdk.Content{&sdk.TextContent{Text: content}}}
}

func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SessionOrigin is an MCP client's call as the authority sees it; the
// session's taint tracker travels in the context.
func SessionOrigin(client, chatID string) authority.Origin {
	return authority.Origin{Kind: authority.MCP, ID: client, Label: "MCP client " + client, ChatID: chatID}
}
