package mcp

import (
	"context"
	"fmt"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaClient is the _meta key the relay uses to pass on the name of the
// agent it serves; it only changes how approval chats are titled.
const MetaClient = "hestia/client"

// proxyName is how the relay introduces itself to the daemon.
const proxyName = "hestia-mcp-proxy"

// Proxy serves the daemon's MCP endpoint on t (stdio for `hestia mcp
// serve`): it connects to endpoint with the bearer token, offers the
// daemon's tools and forwards every call unchanged. Policy, approvals and
// taint are all applied by the daemon; the proxy only relays, so a client
// started by an outside agent holds no authority of its own.
func Proxy(ctx context.Context, endpoint, token, version string, t sdk.Transport, hc *http.Client) error {
	if hc == nil {
		hc = &http.Client{}
	}
	up := sdk.NewClient(&sdk.Implementation{Name: proxyName, Version: version}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
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
			p := &sdk.CallToolParams{Name: name, Arguments: req.Params.Arguments}
			// The daemon names approval chats after the client; through
			// the relay that is the agent on our stdio, not the relay.
			if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
				p.Meta = sdk.Meta{MetaClient: ip.ClientInfo.Name}
			}
			return cs.CallTool(ctx, p)
		})
		n++
	}
	if n == 0 {
		return fmt.Errorf("the daemon offers no tools over MCP")
	}
	return srv.Run(ctx, t)
}
