package app

import (
	"context"
	"net/http"

	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/mcp"
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
