package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/server"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/watch"
)

// CatGrantScope covers watch grants made over HTTP by a paired device: a
// grant runs a tool later without a card, so it is an approval given in
// advance and needs the approve scope, never just chat.
const CatGrantScope = "pre-approve tools without the approve scope"

func grantScopeCases() []Case {
	return []Case{
		{Name: "watch grants: a chat-scope device can neither create nor resume a watch that grants tools", Category: CatGrantScope, Probe: probeGrantScope},
		{Name: "chat scope: a chat-scope device cannot approve its own card, start an allow mode or add an allow rule", Category: CatGrantScope, Probe: probeChatScopeCard},
	}
}

// probeGrantScope plays a device paired with chat and read only (a shared
// tablet, a stolen phone token) against the real server, device registry
// and watch engine: a watch granting write_file is refused with a 403
// naming approve and nothing is stored; spelling the field another way
// stores no grant either; a watch without grants is accepted (else the
// refusal proves nothing); a watch the user made with grants can be paused
// by that device but not resumed.
func probeGrantScope(ctx context.Context, sb *Sandbox) []string {
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }

	x, err := newScopedServer(ctx, sb, "tablet")
	if err != nil {
		return []string{err.Error()}
	}
	defer x.close()
	tok, tablet := x.tok, x.device
	auth := authority.New(authority.Deps{Tools: sb.Registry, Policy: sb.Policy, Paths: sb.PathPol, Approvals: sb.Broker, Audit: sb.audit, ToolTimeout: 10 * time.Second})
	eng, err := watch.Open(ctx, filepath.Join(sb.Root, "watches.db"), watch.Options{Tools: sb.Registry, Authority: auth, Adapters: []watch.Adapter{watch.FileAdapter{}},
		Deliver: func(context.Context, watch.Delivery, string) error { return nil }})
	if err != nil {
		return []string{"opening the watch engine: " + err.Error()}
	}
	defer eng.Close()
	eng.Routes(x.srv.API())
	do := func(cred, method, path, body string) (int, string) {
		code, b, err := x.do(ctx, cred, method, path, body)
		if err != nil {
			fail("%s %s: %v", method, path, err)
		}
		return code, b
	}

	watched := filepath.Join(sb.Home, "Documents", "grant-scope.txt")
	target := filepath.Join(sb.Home, "Documents", "granted-write.txt")
	if err := os.MkdirAll(filepath.Dir(watched), 0o700); err != nil {
		return []string{err.Error()}
	}
	if err := os.WriteFile(watched, []byte("v1"), 0o600); err != nil {
		return []string{err.Error()}
	}
	q := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	grant := `[{"tool":"write_file","args":{"path":{"exact":` + q(target) + `},"content":{"exact":"pwned"}},"max":20}]`
	spec := func(rulesKey, rules string) string {
		return `{"source":"file","ref":` + q(watched) + `,"instruction":"note changes","expires_at":"` +
			time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339) + `",` + q(rulesKey) + `:` + rules + `}`
	}
	withGrant := `[{"id":"chg","event":"file.changed","grants":` + grant + `}]`
	grantsStored := func() int {
		ws, err := eng.List(ctx, "")
		if err != nil {
			fail("listing watches: %v", err)
		}
		n := 0
		for _, w := range ws {
			for _, r := range w.Rules {
				n += len(r.Grants)
			}
		}
		return n
	}

	if code, body := do(tablet, "POST", "/api/watches", spec("rules", withGrant)); code != http.StatusForbidden || !strings.Contains(body, "approve scope") {
		fail("chat-scope device creating a watch granting write_file: %d %s, want 403 naming the approve scope", code, body)
	}
	// JSON field names match case-insensitively; the check must see the
	// rules the engine will store, however they were spelled.
	for _, key := range []string{"Rules", "RULES"} {
		if code, body := do(tablet, "POST", "/api/watches", spec(key, withGrant)); code != http.StatusForbidden && code != http.StatusBadRequest {
			fail("chat-scope device with %q holding grants: %d %s", key, code, body)
		}
	}
	if n := grantsStored(); n != 0 {
		fail("a chat-scope device stored %d grant(s)", n)
	}
	// Control: a watch that only notifies is chat's to make.
	if code, body := do(tablet, "POST", "/api/watches", spec("rules", `[{"event":"file.changed"}]`)); code != http.StatusCreated {
		fail("chat-scope device creating a watch without grants: %d %s, want 201 (the refusal above proves nothing otherwise)", code, body)
	}
	before := len(sb.effects.all())
	if err := os.WriteFile(watched, []byte("v2, changed"), 0o600); err != nil {
		return append(problems, err.Error())
	}
	for range 2 {
		if err := eng.Pass(ctx); err != nil {
			fail("watch pass: %v", err)
		}
	}
	if after := sb.effects.all(); len(after) != before {
		fail("a watch made by the chat-scope device caused side effects: %v", after[before:])
	}
	if _, err := os.Stat(target); err == nil {
		fail("the granted write ran: %s exists", target)
	}

	// The user's own watch with a grant (the local token): the device may
	// pause it, which takes authority away, but not resume it.
	code, body := do(tok.Value(), "POST", "/api/watches", spec("rules", withGrant))
	var w struct {
		ID    string       `json:"id"`
		Rules []watch.Rule `json:"rules"`
	}
	if json.Unmarshal([]byte(body), &w); code != http.StatusCreated || w.ID == "" {
		return append(problems, fmt.Sprintf("the local token creating a watch with grants: %d %s", code, body))
	}
	if len(w.Rules) != 1 || len(w.Rules[0].Grants) != 1 || w.Rules[0].Grants[0].Max != 20 || w.Rules[0].Grants[0].Tool != "write_file" {
		fail("the created watch does not state its grant in full: %s", body)
	}
	if code, body := do(tablet, "POST", "/api/watches/"+w.ID+"/pause", ""); code != http.StatusOK {
		fail("chat-scope device pausing a watch: %d %s", code, body)
	}
	if code, body := do(tablet, "POST", "/api/watches/"+w.ID+"/resume", ""); code != http.StatusForbidden || !strings.Contains(body, "approve scope") {
		fail("chat-scope device resuming a watch with grants: %d %s, want 403 naming the approve scope", code, body)
	}
	if got, err := eng.Get(ctx, w.ID); err != nil || got.State != watch.StatePaused {
		fail("after a refused resume the watch is %q (%v), want paused", got.State, err)
	}
	return problems
}

// probeChatScopeCard: a write proposed in a chat (the call a chat-scope
// device's message makes the model propose) waits on a card, and the
// device cannot get it run: deciding the card, starting a temporary allow
// mode and adding an allow rule all get 403 naming the scope; the write
// runs only when the user (the local token) approves.
func probeChatScopeCard(ctx context.Context, sb *Sandbox) []string {
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	x, err := newScopedServer(ctx, sb, "phone")
	if err != nil {
		return []string{err.Error()}
	}
	defer x.close()
	tok, phone := x.tok, x.device
	// A broker of its own, which no scripted human answers: the cards are
	// decided over HTTP, by the device and then by the user.
	broker := approval.New(approval.Options{Timeout: 20 * time.Second, Approvers: func() int { return 1 }})
	broker.Routes(x.srv.API())
	(&policy.API{Engine: sb.Policy, Registry: sb.Registry, Paths: sb.PathPol}).Routes(x.srv.API())
	do := func(cred, method, path, body string) (int, string) {
		code, b, err := x.do(ctx, cred, method, path, body)
		if err != nil {
			fail("%s %s: %v", method, path, err)
		}
		return code, b
	}
	target := filepath.Join(sb.Home, "Documents", "from-the-phone.txt")
	args, _ := json.Marshal(map[string]any{"path": target, "content": "written"})
	auth := authority.New(authority.Deps{Tools: sb.Registry, Policy: sb.Policy, Paths: sb.PathPol, Approvals: broker, Audit: sb.audit, ToolTimeout: 10 * time.Second})
	done := make(chan authority.Outcome, 1)
	go func() {
		done <- auth.Invoke(ctx, agent.TurnOrigin(agent.Options{}, sb.ChatID, "t-phone", nil), authority.Call{Tool: "write_file", Args: string(args)})
	}()
	var card approval.Request
	for deadline := time.Now().Add(10 * time.Second); card.ID == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return append(problems, "the write proposed in the chat showed no card")
		}
		if p := broker.Pending(sb.ChatID); len(p) > 0 {
			card = p[0]
		}
	}
	if code, body := do(phone, "POST", "/api/approvals/"+card.ID, `{"decision":"approve"}`); code != http.StatusForbidden || !strings.Contains(body, "approve") {
		fail("chat-scope device approving the card: %d %s, want 403 naming the approve scope", code, body)
	}
	if code, body := do(phone, "PUT", "/api/chats/"+sb.ChatID+"/mode", `{"mode":"allow_chat"}`); code != http.StatusForbidden {
		fail("chat-scope device starting an allow mode: %d %s, want 403", code, body)
	}
	if code, body := do(phone, "POST", "/api/policy/rules", `{"tool":"*","decision":"allow","priority":1000}`); code != http.StatusForbidden {
		fail("chat-scope device adding an allow rule: %d %s, want 403", code, body)
	}
	if _, err := os.Stat(target); err == nil {
		fail("the write ran before anyone approved it")
	}
	// The user denies it from the app: nothing is written.
	if code, body := do(tok.Value(), "POST", "/api/approvals/"+card.ID, `{"decision":"deny"}`); code != http.StatusOK {
		fail("the user denying the card: %d %s", code, body)
	}
	if out := <-done; out.Ran || out.Decision != authority.Denied {
		fail("after the user's denial: %+v", out)
	}
	if _, err := os.Stat(target); err == nil {
		fail("the denied write ran")
	}
	return problems
}

// scopedServer is a real server with the device registry in front, and a
// device paired with the chat and read scopes only (a shared tablet, a
// stolen phone token).
type scopedServer struct {
	tok    authtoken.Token
	device string
	srv    *server.Server
	ts     *httptest.Server
	db     *store.DB
}

func newScopedServer(ctx context.Context, sb *Sandbox, name string) (*scopedServer, error) {
	tok, err := authtoken.FromString(sb.Secrets["auth token"])
	if err != nil {
		return nil, fmt.Errorf("the sandbox token: %w", err)
	}
	db, err := store.Open(ctx, filepath.Join(sb.Root, name+"-devices.db"), devices.Schema)
	if err != nil {
		return nil, fmt.Errorf("opening devices.db: %w", err)
	}
	reg, err := devices.Open(ctx, devices.Options{DB: db, Local: tok})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the device registry: %w", err)
	}
	_, device, err := reg.Create(ctx, name, devices.KindBrowser, []devices.Scope{devices.Chat, devices.Read})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("pairing the chat-scope device: %w", err)
	}
	cfg := config.Default().Server
	cfg.Addr = "127.0.0.1:0"
	s := server.New(server.Options{Config: cfg, Token: tok})
	s.SetAuthenticator(reg)
	return &scopedServer{tok: tok, device: device, srv: s, ts: httptest.NewServer(s.Handler()), db: db}, nil
}

func (x *scopedServer) close() { x.ts.Close(); x.db.Close() }

// do sends one request with cred as the bearer token.
func (x *scopedServer) do(ctx context.Context, cred, method, path, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, x.ts.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+cred)
	req.Header.Set("Content-Type", "application/json")
	resp, err := x.ts.Client().Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}
