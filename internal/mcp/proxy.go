package mcp

import (
	"context"
	"fmt"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Proxy serves the daemon's MCP endpoint on t (stdio for `hestia mcp
// serve`): it connects to endpoint with the bearer token, offers the
// daemon's tools and forwards every call unchanged. Policy, approvals and
// taint are all applied by the daemon; the proxy only relays, so a client
// started by an outside agent holds no authority of its own.
func Proxy(ctx context.Context, endpoint, token, version string, t sdk.Transport, hc *http.Client) error {
	if hc == nil {
		hc = &http.Client{}
	}
	up := sdk.NewClient(&sdk.Implementation{Name: "hestia-mcp-proxy", Version: version}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client := *hc
	client.Transport = headerRT{hdr: map[string]string{"Authorization": "Bearer " + token}, next: base}
	cs, err := up.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &client, MaxRetries: 2}, nil)
	if err != nil {
		return fmt.Errorf("connecting to the daemon's MCP endpoint %s: %w", endpoint, err)
	}
	defer cs.Close()
	srv := sdk.NewServer(&sdk.Implementation{Name: "hestia", Version: version}, nil)
	n := 0
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing the daemon's tools: %w", err)
		}
		name := tool.Name
		srv.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: req.Params.Arguments})
		})
		n++
	}
	if n == 0 {
		return fmt.Errorf("the daemon offers no tools over MCP")
	}
	return srv.Run(ctx, t)
}
