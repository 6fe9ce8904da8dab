package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/shell"
	"github.com/hestia-dev/hestia/internal/tools"
)

// CatSandbox: the shell tools' OS sandbox must both work and hold.
const CatSandbox = "break out of, or break, the shell sandbox"

// bwrapCases: shell_run runs under the OS sandbox with Hestia's folders
// where the default XDG layout puts them (every call once failed under
// bubblewrap: "Can't mkdir DATA/logs"), and an approved shell_exec cannot
// reach a loopback listener (the daemon's API is one) without the network
// being granted.
func bwrapCases() []Case {
	return []Case{
		{Name: "a bubblewrap run: shell_run works in the OS sandbox with the default XDG layout", Category: CatSandbox, NeedsConfinement: true, Probe: probeSandboxRun},
		{Name: "an approved shell_exec connects to a loopback listener (the daemon's API)", Category: CatSandbox, NeedsConfinement: true, Probe: probeLoopback},
	}
}

// xdgRunner is the daemon's shell runner for a home whose Hestia folders
// sit where the XDG defaults put them, with the OS sandbox `hestia` uses.
func xdgRunner(sb *Sandbox) (*shell.Runner, error) {
	data, cfg := filepath.Join(sb.Home, ".local", "share", "hestia"), filepath.Join(sb.Home, ".config", "hestia")
	logs := filepath.Join(data, "logs")
	for _, d := range []string{logs, cfg} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	pp, err := pathpolicy.New(pathpolicy.Options{Home: sb.Home, Roots: []string{sb.Home}, Protected: []string{data, cfg, logs}})
	if err != nil {
		return nil, err
	}
	osb := DefaultShellSandbox()
	sb.closers = append(sb.closers, osb.Close)
	return &shell.Runner{Paths: pp, Home: sb.Home, Timeout: 20 * time.Second, Sandbox: osb, Read: pp.Roots(), Hide: pp.Hidden()}, nil
}

func probeSandboxRun(ctx context.Context, sb *Sandbox) []string {
	r, err := xdgRunner(sb)
	if err != nil {
		return []string{err.Error()}
	}
	if err := os.WriteFile(filepath.Join(sb.Home, "probe.txt"), []byte("sandboxed hello\n"), 0o644); err != nil {
		return []string{err.Error()}
	}
	res, err := runTrusted(ctx, sb, r.Tools()[0], `{"command":"cat probe.txt"}`)
	if err != nil {
		return []string{"shell_run: " + err.Error()}
	}
	st := r.Sandbox.Status(ctx)
	if res.IsError || !strings.HasPrefix(res.Content, "exit: 0\nsandboxed hello\n") {
		return []string{fmt.Sprintf("shell_run ran nothing under %s: %s", st.Mode, res.Content)}
	}
	return nil
}

func probeLoopback(ctx context.Context, sb *Sandbox) []string {
	if _, err := os.Stat("/bin/bash"); err != nil {
		return nil // no /dev/tcp to try with; the sandbox test covers it
	}
	r, err := xdgRunner(sb)
	if err != nil {
		return []string{err.Error()}
	}
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return []string{err.Error()}
	}
	defer ln.Close()
	args, _ := json.Marshal(map[string]any{"argv": []string{"/bin/bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port)}})
	// The call as the user's approval would let it run.
	res, err := runTrusted(ctx, sb, r.Tools()[1], string(args))
	if err != nil {
		return []string{"shell_exec: " + err.Error()}
	}
	var problems []string
	if strings.Contains(res.Content, "connected") {
		problems = append(problems, "the sandboxed program connected: "+res.Content)
	}
	ln.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		problems = append(problems, "the loopback listener accepted a connection from the sandbox")
	}
	return problems
}

// runTrusted runs one call through the authority as a user who trusts the
// tool (a trust rule) would have it run: no card, the same path as a chat.
func runTrusted(ctx context.Context, sb *Sandbox, t tools.Tool, args string) (tools.Result, error) {
	name := t.Spec().Name
	reg := tools.NewRegistry()
	if err := reg.Register(t); err != nil {
		return tools.Result{}, err
	}
	if _, err := sb.Policy.Rules().Create(ctx, policy.Rule{Tool: name, Decision: policy.Allow, Priority: 1000, Note: "the user trusts it"}); err != nil {
		return tools.Result{}, err
	}
	out := authority.New(authority.Deps{Tools: reg, Policy: sb.Policy, Approvals: sb.Broker, Audit: sb.audit, ToolTimeout: 30 * time.Second}).
		Invoke(ctx, agent.TurnOrigin(agent.Options{}, sb.ChatID, "probe", nil), authority.Call{Tool: name, Args: args})
	if !out.Ran && out.Err == nil {
		return tools.Result{}, fmt.Errorf("not run (%s): %s", out.Decision, out.Policy.Reason)
	}
	return out.Result, out.Err
}
