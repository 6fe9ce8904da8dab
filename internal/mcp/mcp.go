// Package mcp connects Hestia to Model Context Protocol servers (the
// client side, this file and tools.go) and exposes Hestia's own tools to
// outside MCP clients (server.go), both through the official Go SDK.
//
// A configured server's tools join the registry as mcp__NAME__TOOL. What
// they may do is decided by the same policy as every other tool, and
// nothing a server says can widen it: the tools declare no risk (so they
// are gated unless the user writes a trust rule), are never read-only and
// always egress (so a turn that read untrusted content gates them even
// over a rule), and their output is untrusted content. The server's
// annotations (readOnlyHint, destructiveHint) are only shown on approval
// cards. A changed tool list takes effect at the next model step; a tool
// the model was not offered is refused by the agent.
//
// Servers start lazily: the first time the agent lists tools (a registry
// warmer), not when the daemon starts. A server that fails or exits is
// restarted on the next use after a growing backoff.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `mcp/mcptest` too:
//
// MCP client: `[mcp.servers.NAME]` (stdio or streamable HTTP via the official SDK) started lazily
// by a registry warmer, restarted with backoff, tools as `mcp__NAME__TOOL` (no risk declared,
// never read-only, egress, untrusted output: annotations only reach the card), `list_changed`
// re-sync, resource/prompt read tools, one doctor check per server. MCP server: `/api/mcp` (behind
// the bearer token) exposes the registry's tools through policy, approvals (cards in a per-client
// chat) and a per-session taint tracker; `Proxy` relays stdio for `hestia mcp serve`.
// `mcp/mcptest`: the SDK test server used by tests and the adversarial suite.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/tailbuf"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Backoff bounds: after the n-th consecutive failure a server is not
// retried for min(backoffBase·2ⁿ⁻¹, backoffMax).
const (
	backoffBase = 2 * time.Second
	backoffMax  = 5 * time.Minute
	// connectTimeout bounds starting a server and listing its tools.
	connectTimeout = 20 * time.Second
	// defaultCallTimeout bounds one tool call when the server sets none.
	defaultCallTimeout = 60 * time.Second
	// maxTools bounds how many tools one server may register.
	maxTools = 128
)

// State of a server.
type State string

// States.
const (
	StateIdle    State = "not_started" // starts on first use
	StateRunning State = "running"
	StateFailed  State = "failed" // waiting for the backoff to pass
)

// passEnv is passed to every stdio server besides its allow-list: programs
// need a PATH and a HOME to start at all.
var passEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// Options configure a Manager.
type Options struct {
	Servers  map[string]config.MCPServer
	Registry *tools.Registry
	Log      *slog.Logger
	Now      func() time.Time
	// Getenv reads Hestia's environment (stdio allow-list, header
	// secrets); default os.Getenv.
	Getenv func(string) string
	// Version is reported to servers as the client version.
	Version string
}

// Manager owns the configured servers.
type Manager struct {
	reg     *tools.Registry
	log     *slog.Logger
	now     func() time.Time
	getenv  func(string) string
	version string
	// ctx outlives single calls: sessions and list refreshes run under it
	// and end with Close.
	ctx     context.Context
	cancel  context.CancelFunc
	servers []*server // sorted by name
}

// server is one configured server and its current session.
type server struct {
	m    *Manager
	name string
	cfg  config.MCPServer

	connectMu sync.Mutex // serialises connection attempts

	mu       sync.Mutex // guards the fields below
	session  *sdk.ClientSession
	state    State
	lastErr  string
	failures int
	retryAt  time.Time
	started  time.Time
	tools    map[string]*remoteTool // by Hestia name
	stderr   *tailbuf.Buffer
}

// New builds a manager; nothing starts until tools are first listed.
func New(o Options) *Manager {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{reg: o.Registry, log: o.Log, now: o.Now, getenv: o.Getenv, version: o.Version, ctx: ctx, cancel: cancel}
	names := make([]string, 0, len(o.Servers))
	for n, s := range o.Servers {
		if !s.Disabled {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		m.servers = append(m.servers, &server{m: m, name: n, cfg: o.Servers[n], state: StateIdle, tools: map[string]*remoteTool{}})
	}
	return m
}

// Warm starts every server that is not running and not waiting out a
// backoff, in parallel, and registers their tools. It is the registry
// warmer: cheap when everything is running.
func (m *Manager) Warm(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range m.servers {
		if !s.wantsStart() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.ensure(ctx); err != nil {
				m.log.Warn("mcp server did not start", "server", s.name, "err", err)
			}
		}()
	}
	wg.Wait()
}

func (s *server) wantsStart() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session == nil && !s.m.now().Before(s.retryAt)
}

// ErrBackoff is wrapped when a failed server is not retried yet.
var ErrBackoff = errors.New("mcp server failed recently")

// ensure returns a live session, connecting when there is none and the
// backoff allows it.
func (s *server) ensure(ctx context.Context) (*sdk.ClientSession, error) {
	if cs := s.current(); cs != nil {
		return cs, nil
	}
	s.connectMu.Lock()
	defer s.connectMu.Unlock()
	if cs := s.current(); cs != nil {
		return cs, nil // connected while we waited
	}
	s.mu.Lock()
	if wait := s.retryAt.Sub(s.m.now()); wait > 0 {
		err := fmt.Errorf("%w: %s (retrying in %s)", ErrBackoff, s.lastErr, wait.Round(time.Second))
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Unlock()
	cs, err := s.connect(ctx)
	if err != nil {
		s.fail(err)
		return nil, err
	}
	return cs, nil
}

func (s *server) current() *sdk.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// fail records a failure and schedules the next attempt.
func (s *server) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures++
	s.state = StateFailed
	s.lastErr = err.Error()
	d := backoffBase << min(s.failures-1, 10)
	s.retryAt = s.m.now().Add(min(d, backoffMax))
}

func (s *server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	t, stderr, err := s.transport()
	if err != nil {
		return nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "hestia", Version: s.m.version}, &sdk.ClientOptions{
		Logger:       s.m.log.With("mcp_server", s.name),
		Capabilities: &sdk.ClientCapabilities{}, // no roots, sampling or elicitation: the server gets nothing it did not ask the user for
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			// Not inline: the handler runs on the session's reader.
			go s.refresh(s.m.ctx)
		},
	})
	// The session must outlive this call: connect under the manager's
	// context and stop waiting on ctx alone.
	type res struct {
		cs  *sdk.ClientSession
		err error
	}
	ch := make(chan res, 1)
	go func() {
		cs, err := client.Connect(s.m.ctx, t, nil)
		ch <- res{cs, err}
	}()
	var r res
	select {
	case r = <-ch:
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.cs != nil {
				r.cs.Close()
			}
		}()
		return nil, fmt.Errorf("starting mcp server %s: %w%s", s.name, ctx.Err(), stderrNote(stderr))
	}
	if r.err != nil {
		return nil, fmt.Errorf("starting mcp server %s: %w%s", s.name, r.err, stderrNote(stderr))
	}
	cs := r.cs
	list, err := listTools(ctx, cs)
	if err != nil {
		cs.Close()
		return nil, fmt.Errorf("listing tools of mcp server %s: %w%s", s.name, err, stderrNote(stderr))
	}
	s.mu.Lock()
	s.session, s.state, s.lastErr, s.failures, s.retryAt, s.started, s.stderr = cs, StateRunning, "", 0, time.Time{}, s.m.now(), stderr
	s.mu.Unlock()
	s.sync(list)
	go s.watch(cs)
	s.m.log.Info("mcp server started", "server", s.name, "transport", s.cfg.String(), "tools", len(list))
	return cs, nil
}

// watch marks the server failed when its session ends on its own (the
// process exited, the HTTP session was dropped). Its tools stay
// registered; the next call or listing reconnects after the backoff.
func (s *server) watch(cs *sdk.ClientSession) {
	err := cs.Wait()
	s.mu.Lock()
	if s.session != cs {
		s.mu.Unlock()
		return
	}
	s.session = nil
	tail := stderrNote(s.stderr)
	s.mu.Unlock()
	if s.m.ctx.Err() != nil {
		return // shutting down
	}
	if err == nil {
		err = errors.New("the session ended")
	}
	err = fmt.Errorf("mcp server %s stopped: %w%s", s.name, err, tail)
	s.m.log.Warn("mcp server stopped", "server", s.name, "err", err)
	s.fail(err)
}

func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		if len(out) > maxTools*2 {
			break // the rest is dropped with a warning in sync
		}
	}
	return out, nil
}

// refresh re-lists the tools after notifications/tools/list_changed.
func (s *server) refresh(ctx context.Context) {
	cs := s.current()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	list, err := listTools(ctx, cs)
	if err != nil {
		s.m.log.Warn("refreshing mcp tools", "server", s.name, "err", err)
		return
	}
	s.sync(list)
}

// sync makes the registry hold exactly the server's valid tools. A tool
// whose definition changed is re-registered with the new one; a tool that
// cannot be registered (bad schema, clashing name) is skipped with a
// warning rather than failing the server.
func (s *server) sync(list []*sdk.Tool) {
	want := map[string]*remoteTool{}
	for _, t := range list {
		if len(want) >= maxTools {
			s.m.log.Warn("mcp server offers too many tools; ignoring the rest", "server", s.name, "max", maxTools)
			break
		}
		rt, err := newRemoteTool(s, t)
		if err != nil {
			s.m.log.Warn("skipping mcp tool", "server", s.name, "tool", t.Name, "err", err)
			continue
		}
		if _, dup := want[rt.spec.Name]; dup {
			s.m.log.Warn("skipping mcp tool whose name clashes after normalising", "server", s.name, "tool", t.Name, "as", rt.spec.Name)
			continue
		}
		want[rt.spec.Name] = rt
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, old := range s.tools {
		if nt, ok := want[name]; !ok || !old.same(nt) {
			s.m.reg.Unregister(name)
			delete(s.tools, name)
		}
	}
	for name, rt := range want {
		if _, ok := s.tools[name]; ok {
			continue
		}
		if err := s.m.reg.Register(rt); err != nil {
			s.m.log.Warn("registering mcp tool", "server", s.name, "tool", name, "err", err)
			continue
		}
		s.tools[name] = rt
	}
}

// transport builds the stdio or HTTP transport from the configuration.
func (s *server) transport() (sdk.Transport, *tailbuf.Buffer, error) {
	stderr := tailbuf.New(2048)
	if s.cfg.URL != "" {
		hdr, err := s.headers()
		if err != nil {
			return nil, nil, err
		}
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: httpClient(hdr), MaxRetries: 2}, stderr, nil
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = []string{}
	for _, k := range append(append([]string(nil), passEnv...), s.cfg.Env...) {
		if v := s.m.getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stderr = stderr
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, stderr, nil
}

// headers reads the configured header values from the environment and
// files. Values are never logged.
func (s *server) headers() (map[string]string, error) {
	out := map[string]string{}
	for h, env := range s.cfg.HeadersEnv {
		v := s.m.getenv(env)
		if v == "" {
			return nil, fmt.Errorf("mcp server %s: header %s: environment variable %s is not set", s.name, h, env)
		}
		out[h] = v
	}
	for h, path := range s.cfg.HeadersFile {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: header %s: %w", s.name, h, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" || strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("mcp server %s: header %s: %s must hold one non-empty line", s.name, h, path)
		}
		out[h] = v
	}
	return out, nil
}

// Status is one server's state for doctor, the system page and the CLI.
type Status struct {
	Name      string    `json:"name"`
	Transport string    `json:"transport"`
	State     State     `json:"state"`
	Tools     []string  `json:"tools"`
	Error     string    `json:"error,omitempty"`
	RetryAt   time.Time `json:"retry_at,omitzero"`
	Since     time.Time `json:"since,omitzero"`
}

// Statuses reports every server.
func (m *Manager) Statuses() []Status {
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.status())
	}
	return out
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.name, Transport: s.cfg.String(), State: s.state, Error: s.lastErr, Tools: []string{}}
	if s.state == StateFailed {
		st.RetryAt = s.retryAt
	}
	if s.session != nil {
		st.Since = s.started
	}
	for n := range s.tools {
		st.Tools = append(st.Tools, n)
	}
	sort.Strings(st.Tools)
	return st
}

// Checks returns one health check per server. A check starts a server
// that has not started yet, so doctor reports whether it works, not only
// whether it was used.
func (m *Manager) Checks() []doctor.Check {
	var out []doctor.Check
	for _, s := range m.servers {
		out = append(out, doctor.Check{Name: "mcp." + s.name, Run: func(ctx context.Context) (doctor.Status, string) {
			if _, err := s.ensure(ctx); err != nil {
				return doctor.Fail, err.Error()
			}
			st := s.status()
			return doctor.OK, fmt.Sprintf("%s, %d tools", st.Transport, len(st.Tools))
		}})
	}
	return out
}

// Close ends every session (stdio servers get stdin closed, then SIGTERM).
func (m *Manager) Close() error {
	m.cancel()
	var errs []error
	for _, s := range m.servers {
		s.mu.Lock()
		cs := s.session
		s.session = nil
		s.mu.Unlock()
		if cs != nil {
			if err := cs.Close(); err != nil && !isClosedErr(err) {
				errs = append(errs, fmt.Errorf("closing mcp server %s: %w", s.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func isClosedErr(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) || strings.Contains(err.Error(), "closed")
}

// server looks a server up by name.
func (m *Manager) server(name string) (*server, error) {
	for _, s := range m.servers {
		if s.name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no MCP server named %q is configured", name)
}

// Names lists the configured (enabled) servers.
func (m *Manager) Names() []string {
	out := make([]string, len(m.servers))
	for i, s := range m.servers {
		out[i] = s.name
	}
	return out
}

// stderrNote is the stderr tail as a suffix for an error ("; stderr: …").
func stderrNote(t *tailbuf.Buffer) string {
	if t == nil {
		return ""
	}
	if s := t.Last(400, ""); s != "" {
		return "; stderr: " + s
	}
	return ""
}
