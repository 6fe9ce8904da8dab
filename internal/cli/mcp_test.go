package cli

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// `hestia mcp serve` speaks MCP on stdin/stdout and relays to the daemon:
// an SDK client on the other end of the pipes lists Hestia's tools and
// calls one; `hestia mcp list` reports no servers.
func TestMCPServeOverStdio(t *testing.T) {
	home, env, _ := daemonEnv(t)
	for _, bad := range [][]string{{"mcp"}, {"mcp", "frob"}, {"mcp", "list", "extra"}} {
		if r := run(t, home, env, bad...); r.code != 2 {
			t.Errorf("%v: exit %d, stderr %q", bad, r.code, r.stderr)
		}
	}
	if r := run(t, home, env, "mcp", "list"); r.code != 0 || !strings.Contains(r.stdout, "No MCP servers configured") {
		t.Fatalf("list: %+v", r)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		e := &Env{Stdin: inR, Stdout: outW, Stderr: &errb, Version: "test", Getenv: func(k string) string {
			if k == "HESTIA_HOME" {
				return home
			}
			return env[k]
		}}
		done <- Main(ctx, []string{"mcp", "serve"}, e)
		outW.Close()
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "claude-desktop", Version: "1"}, nil).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %q)", err, errb.String())
	}
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "list_dir") || !slices.Contains(names, "write_file") {
		t.Fatalf("tools over stdio: %v", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "now", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("now: %v %+v", err, res)
	}
	cs.Close()
	inW.Close()
	if code := <-done; code != 0 {
		t.Fatalf("mcp serve exited %d: %s", code, errb.String())
	}
}
