package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hestia-dev/hestia/internal/mcp"
)

// runMCP serves Hestia's tools to an outside agent over stdio (serve) or
// shows the configured MCP servers' state (list). Both go through the
// running daemon: it owns the policy, the approvals and the servers.
func runMCP(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("missing subcommand: serve or list")
	}
	switch args[0] {
	case "serve":
		return mcpServe(ctx, env, args[1:])
	case "list":
		return mcpList(ctx, env, args[1:])
	default:
		return usagef("unknown subcommand %q: serve or list", args[0])
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpServe relays MCP on stdin/stdout to the daemon's /api/mcp endpoint,
// for agents that start their servers as programs (Claude Desktop, goose,
// IDEs). Nothing but protocol goes to stdout.
func mcpServe(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("mcp serve")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	t := &sdk.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
	err = mcp.Proxy(ctx, c.BaseURL+"/api/mcp", c.Token.Value(), env.Version, t, c.HTTP)
	if err != nil && (ctx.Err() != nil || strings.Contains(err.Error(), "EOF")) {
		return nil // the client went away
	}
	return err
}

func mcpList(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("mcp list")
	asJSON := fs.Bool("json", false, "print the servers as JSON (the body of GET /api/mcp/servers)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	var out struct {
		Servers []mcp.Status `json:"servers"`
	}
	if err := c.Do(ctx, "GET", "/api/mcp/servers", nil, &out); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(env.Stdout, out)
	}
	if len(out.Servers) == 0 {
		fmt.Fprintln(env.Stdout, "No MCP servers configured (add [mcp.servers.NAME] to config.toml; see README).")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tSTATE\tTOOLS\tDETAIL")
	for _, s := range out.Servers {
		detail := s.Error
		if !s.RetryAt.IsZero() {
			detail += fmt.Sprintf(" (retry after %s)", s.RetryAt.Local().Format(time.TimeOnly))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.Transport, s.State, len(s.Tools), detail)
	}
	return tw.Flush()
}
