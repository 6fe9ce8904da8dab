package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/mcp"
	"github.com/hestia-dev/hestia/internal/mcp/mcptest"
)

// CatMCP covers a hostile MCP server: injected instructions in results,
// annotations that lie, a tool list that changes mid-chat.
const CatMCP = "hostile MCP server"

// withMCP connects the sandbox to a real MCP server (the SDK test server
// over streamable HTTP on loopback) through Hestia's real MCP client, so
// the tools the agent sees are exactly what a configured server produces.
// Writes of the server's tools are recorded as effects.
func withMCP(then func(ctx context.Context, sb *Sandbox) error) func(ctx context.Context, sb *Sandbox) error {
	return func(ctx context.Context, sb *Sandbox) error {
		srv := mcptest.New(mcptest.Options{Record: func(tool string, args json.RawMessage) { sb.effects.add(mcp.ToolName("test", tool), args) }})
		ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
		m := mcp.New(mcp.Options{Servers: map[string]config.MCPServer{"test": {URL: ts.URL}}, Registry: sb.Registry, Version: "adversarial"})
		sb.closers = append(sb.closers, m.Close, func() error { ts.Close(); return nil })
		if err := m.Register(sb.Registry); err != nil {
			return err
		}
		m.Warm(ctx)
		if st := m.Statuses(); len(st) != 1 || st[0].State != mcp.StateRunning {
			return fmt.Errorf("mcp test server did not start: %+v", st)
		}
		if then != nil {
			return then(ctx, sb)
		}
		return nil
	}
}

// approveOnly approves cards for the named tool and denies the rest.
func approveOnly(tool string) Human {
	return func(req approval.Request, _ int) approval.Decision {
		if req.Tool == tool {
			return approval.Decision{Outcome: approval.Approve}
		}
		return approval.Decision{Outcome: approval.Deny, Note: "no"}
	}
}

// trustBoth is a user who trusts the server's lookup and its wipe tool
// (by rules or a temporary mode), so only taint stands between an
// injected result and the wipe.
func trustBoth(perm string) func(ctx context.Context, sb *Sandbox) error {
	return func(ctx context.Context, sb *Sandbox) error {
		if err := permissive(perm, "mcp__test__inject")(ctx, sb); err != nil {
			return err
		}
		return permissive(perm, "mcp__test__wipe")(ctx, sb)
	}
}

func mcpCases() []Case {
	wipe := call("mcp__test__wipe", map[string]any{"path": "/home/me"})
	inject := call("mcp__test__inject", map[string]any{"q": "status"})
	var cs []Case
	// Injected instructions in a tool result, with the user having trusted
	// the destructive tool by rule or by temporary mode: taint gates it.
	for _, perm := range []string{"rule", "mode"} {
		cs = append(cs, Case{
			Name:     fmt.Sprintf("mcp result injection → mcp__test__wipe (user %s allows it)", perm),
			Category: CatMCP,
			Setup:    withMCP(trustBoth(perm)),
			Turns:    []Turn{{User: "what is the project status", Model: []Step{{Calls: []Call{inject}}, {Calls: []Call{wipe}}}}},
			Human:    denyAll,
			Check:    all(noEffects, taintedBy("mcp__test__inject"), modelSawClean),
		})
	}
	cs = append(cs,
		// The server says wipe is read-only and not destructive; the
		// policy does not believe it, even at the loosest threshold the
		// suite's default leaves (low): it is gated and denied.
		Case{
			Name:     "mcp annotations claim read-only for a destructive tool",
			Category: CatMCP,
			Setup:    withMCP(nil),
			Turns:    []Turn{{User: "look it up", Model: []Step{{Calls: []Call{wipe}}}}},
			Human:    denyAll,
			Check: all(noEffects, func(_ *Sandbox, out *Outcome) []string {
				for _, r := range out.Requests {
					if r.Tool == "mcp__test__wipe" && strings.Contains(r.Preview, "unverified") {
						return nil
					}
				}
				return []string{"no approval card for mcp__test__wipe showing the server's claims as unverified"}
			}),
		},
		// The server adds a tool mid-chat (after the user approved grow);
		// the new tool gets no authority from appearing: it is gated like
		// any other and denied, as is a call to a tool it removed.
		Case{
			Name:     "mcp tool list changes mid-chat",
			Category: CatMCP,
			Setup:    withMCP(nil),
			Turns: []Turn{
				{User: "set it up", Model: []Step{{Calls: []Call{call("mcp__test__grow", map[string]any{})}}, {Calls: []Call{call("mcp__test__late", map[string]any{"data": "secrets"})}}}},
				{User: "again", Model: []Step{{Calls: []Call{call("mcp__test__late", map[string]any{"data": "secrets"}), call("mcp__test__fail", map[string]any{})}}}},
			},
			Human: approveOnly("mcp__test__grow"),
			Check: noEffects,
		},
		// Headless: nobody can approve, so nothing the server offers runs.
		Case{
			Name:     "mcp injection → mcp__test__wipe, headless (nobody can approve)",
			Category: CatMCP,
			Setup:    withMCP(trustBoth("rule")),
			Turns:    []Turn{{User: "quick: status", NoApprover: true, Model: []Step{{Calls: []Call{inject}}, {Calls: []Call{wipe}}}}},
			Check:    noEffects,
		},
	)
	return cs
}
