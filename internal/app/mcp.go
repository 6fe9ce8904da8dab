package app

import (
	"context"
	"net/http"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/mcp"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// registerMCP wires the configured MCP servers ([mcp.servers.NAME]): their
// tools join reg when first listed, each server gets a health check, and
// GET /api/mcp/servers reports their state.
func (a *App) registerMCP(ctx context.Context, reg *tools.Registry) error {
	m := mcp.New(mcp.Options{Servers: a.Config.MCP.Servers, Registry: reg, Log: a.Log.With("component", "mcp"), Now: a.Now, Version: a.Version})
	a.OnClose(m.Close)
	if err := m.Register(reg); err != nil {
		return err
	}
	for _, c := range m.Checks() {
		a.AddCheck(c)
	}
	if mux := a.Mux(); mux != nil {
		mux.HandleFunc("GET /api/mcp/servers", func(w http.ResponseWriter, r *http.Request) {
			httpjson.Write(w, http.StatusOK, map[string]any{"servers": m.Statuses()})
		})
	}
	return nil
}

// exposeMCP serves Hestia's own tools to outside MCP clients at /api/mcp
// (streamable HTTP behind the daemon's bearer token; `hestia mcp serve`
// relays stdio to it). Calls run under the policy; gated ones become
// approval cards in a chat named after the client.
func (a *App) exposeMCP(paths policy.PathResolver, auditLog *audit.Log) {
	if !a.Config.MCP.Serve || a.Server == nil {
		return
	}
	c := a.core
	exp := mcp.NewExposer(mcp.ExposeDeps{
		Tools: c.tools, Authority: c.auth, Policy: c.policy, Paths: paths, Approvals: c.approvals, Chats: c.chats,
		Publish: func(typ, chatID string, data any) { c.bus.Publish(typ, chatID, data) },
		Audit: func(ctx context.Context, typ, chatID, summary string, data any) {
			auditLog.Record(ctx, audit.Entry{Type: typ, ChatID: chatID, Summary: summary, Data: data})
		},
		Log: a.Log.With("component", "mcp-server"), Now: a.Now, Version: a.Version, ToolTimeout: a.Config.Agent.ToolTimeout.D(),
	})
	a.Server.API().Handle("/api/mcp", exp.Handler())
}
