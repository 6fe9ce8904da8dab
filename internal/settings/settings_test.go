package settings

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

const sample = `# Hestia configuration
[server]
addr = "127.0.0.1:4317" # where the daemon listens

[policy]
# the highest risk that runs without asking
auto_approve = "low"   # none, low, medium, high

[agent]
file_roots = [
  "~/notes",   # my notes
  "~/Documents",
]
tier = "tier-5"

[llm.providers.ollama]
# local box
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"

[llm.tiers]
tier-5 = ["ollama/qwen3:4b"]
`

func newService(t *testing.T, file string) *Service {
	t.Helper()
	home := t.TempDir()
	paths := config.Paths{Config: filepath.Join(home, "config"), Data: filepath.Join(home, "data")}
	if file != "" {
		os.MkdirAll(paths.Config, 0o700)
		if err := os.WriteFile(paths.ConfigFile(), []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := func(k string) string {
		if k == "HESTIA_LLM_MODEL" {
			return "from-env"
		}
		return ""
	}
	running, err := config.Parse([]byte(file), env)
	if err != nil {
		t.Fatal(err)
	}
	return &Service{Paths: paths, Env: env, Running: running}
}

func read(t *testing.T, s *Service) string {
	b, err := os.ReadFile(s.Paths.ConfigFile())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestApplyKeepsCommentsAndLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t, sample)
	v, _, err := s.Apply(ctx, []Change{
		{Key: "policy.auto_approve", Value: "medium"},
		{Key: "agent.file_roots", Value: []any{"~/notes", "/srv/shared"}},
		{Key: "budget.daily_cost_usd", Value: 2.5},
		{Key: "budget.monthly_tokens", Value: float64(5000000)},
		{Key: "llm.providers.lmstudio", Value: map[string]any{"base_url": "http://127.0.0.1:1234/v1", "kind": "openai"}},
		{Key: "llm.tiers.tier-2", Value: []any{"lmstudio/phi-4"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := read(t, s)
	for _, want := range []string{
		"# Hestia configuration\n[server]\naddr = \"127.0.0.1:4317\" # where the daemon listens\n",
		"# the highest risk that runs without asking\nauto_approve = \"medium\"  # none, low, medium, high\n",
		"file_roots = [\"~/notes\", \"/srv/shared\"]\ntier = \"tier-5\"\n",
		"[llm.providers.ollama]\n# local box\n",
		"tier-5 = [\"ollama/qwen3:4b\"]\ntier-2 = [\"lmstudio/phi-4\"]\n",
		"[budget]\ndaily_cost_usd = 2.5\nmonthly_tokens = 5000000\n",
		"[llm.providers.lmstudio]\nbase_url = \"http://127.0.0.1:1234/v1\"\nkind = \"openai\"\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if v.AutoApprove != "medium" || v.Budget.MonthlyTokens != 5000000 || len(v.FileRoots) != 2 {
		t.Errorf("view after save: %+v", v)
	}
	if !contains(v.Pending, "policy.auto_approve") || !contains(v.Pending, "budget.daily_cost_usd") {
		t.Errorf("pending restart = %v", v.Pending)
	}
	if fi, _ := os.Stat(s.Paths.ConfigFile()); fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600 (it may hold API keys)", fi.Mode().Perm())
	}

	// Removing a provider and its tier leaves the rest alone.
	if _, _, err := s.Apply(ctx, []Change{{Key: "llm.tiers.tier-2", Delete: true}, {Key: "llm.providers.lmstudio", Delete: true}}); err != nil {
		t.Fatal(err)
	}
	got = read(t, s)
	if strings.Contains(got, "lmstudio") || !strings.Contains(got, "[llm.providers.ollama]\n# local box\n") {
		t.Errorf("after delete:\n%s", got)
	}
}

func TestApplyRefusesWithTheCLIError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t, sample)
	cases := []struct {
		changes []Change
		want    string
	}{
		{[]Change{{Key: "policy.auto_approve", Value: "sometimes"}}, `invalid value "sometimes" for policy.auto_approve: one of none, low, medium, high`},
		{[]Change{{Key: "agent.file_roots", Value: []any{"notes"}}}, `invalid value "notes" for agent.file_roots: absolute paths or paths starting with ~/`},
		{[]Change{{Key: "budget.daily_cost_usd", Value: -1.0}}, `invalid value "-1" for budget.daily_cost_usd`},
		{[]Change{{Key: "llm.tiers.tier-1", Value: []any{"nobody/model"}}}, `llm.tiers.tier-1[0]: provider/model naming a provider`},
		{[]Change{{Key: "llm.providers.x", Value: map[string]any{"base_url": "ftp://x"}}}, `invalid value "ftp://x" for llm.providers.x.base_url`},
		{[]Change{{Key: "llm.providers.bad name", Value: map[string]any{}}}, `provider name "bad name"`},
		{[]Change{{Key: "server.addr", Value: "0.0.0.0:1"}}, `"server.addr" cannot be changed here`},
		{[]Change{{Key: "llm.tiers.tier-9", Value: []any{}}}, `no tier "tier-9"`},
		{[]Change{{Key: "mail.accounts", Value: map[string]any{"name": "work", "imap_host": "imap.example.org", "imap_port": 993.0, "imap_security": "tls"}}}, `mail.accounts[0].password_env`},
		{nil, "no changes"},
	}
	before := read(t, s)
	for _, c := range cases {
		_, _, err := s.Apply(ctx, c.changes)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.changes, err, c.want)
		}
	}
	if read(t, s) != before {
		t.Error("a refused change modified config.toml")
	}
	// The same file content fails config.Load with the same words.
	os.WriteFile(s.Paths.ConfigFile(), []byte("[policy]\nauto_approve = \"sometimes\"\n"), 0o600)
	_, err := config.Load(s.Paths, s.Env)
	if err == nil || !strings.Contains(err.Error(), `invalid value "sometimes" for policy.auto_approve: one of none, low, medium, high`) {
		t.Errorf("CLI load error: %v", err)
	}
}

func TestMailAccountsAndSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t, "")
	acc := map[string]any{"name": "work", "address": "me@example.org", "imap_host": "imap.example.org", "imap_port": 993.0, "imap_security": "tls", "password_env": "WORK_PW"}
	if _, _, err := s.Apply(ctx, []Change{{Key: "mail.accounts", Value: acc}, {Key: "llm.base_url", Value: "http://127.0.0.1:9/v1"}, {Key: "llm.api_key", Value: "sk-secret-1"}}); err != nil {
		t.Fatal(err)
	}
	v, err := s.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Mail) != 1 || v.Mail[0].IMAPPort != 993 || !v.DefaultLLM.APIKeySet || v.ModelReady || !contains(v.Pending, "llm.base_url") || !contains(v.Pending, "mail.accounts") {
		t.Fatalf("view: %+v", v)
	}
	if b, _ := json.Marshal(v); strings.Contains(string(b), "sk-secret-1") {
		t.Error("the API key leaked into the settings view")
	}
	if v.EnvOverrides["llm.model"] != "HESTIA_LLM_MODEL" {
		t.Errorf("env overrides: %v", v.EnvOverrides)
	}
	// Sending the mask back keeps the key.
	if _, _, err := s.Apply(ctx, []Change{{Key: "llm.api_key", Value: masked}}); err != nil || !strings.Contains(read(t, s), `api_key = "sk-secret-1"`) {
		t.Errorf("masked key round trip: %v\n%s", err, read(t, s))
	}
	if _, _, err := s.Apply(ctx, []Change{{Key: "mail.accounts", Value: map[string]any{"name": "home"}, Delete: true}}); err == nil {
		t.Error("removing a missing account succeeded")
	}
	if _, _, err := s.Apply(ctx, []Change{{Key: "mail.accounts", Value: map[string]any{"name": "work"}, Delete: true}}); err != nil || strings.Contains(read(t, s), "mail.accounts") {
		t.Errorf("remove account: %v\n%s", err, read(t, s))
	}
}

func TestProviderTestAndDetection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := llmtest.New(t)
	srv.Models = []string{"qwen3:4b", "bge-m3"}
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/v1"
	closed.Close()
	p := Prober{Candidates: []Candidate{{Name: "ollama", Product: "Ollama", BaseURL: srv.URL}, {Name: "lmstudio", Product: "LM Studio", BaseURL: closedURL}}}
	models, err := p.Models(ctx, "openai", srv.URL, "k")
	if err != nil || strings.Join(models, ",") != "bge-m3,qwen3:4b" {
		t.Fatalf("models: %v %v", models, err)
	}
	if _, err := p.Models(ctx, "openai", closedURL, ""); err == nil || !strings.Contains(err.Error(), "cannot connect to "+closedURL) {
		t.Errorf("closed port: %v", err)
	}
	if _, err := p.Models(ctx, "openai", "127.0.0.1:11434", ""); err == nil || !strings.Contains(err.Error(), "not an http://") {
		t.Errorf("bad url: %v", err)
	}
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer deny.Close()
	if _, err := p.Models(ctx, "openai", deny.URL+"/v1", "wrong"); err == nil || !strings.Contains(err.Error(), "refused the API key") {
		t.Errorf("401: %v", err)
	}
	found := p.Detect(ctx)
	if len(found) != 1 || found[0].Name != "ollama" || len(found[0].Models) != 2 {
		t.Errorf("detect: %+v", found)
	}

	// Over HTTP, a named provider is tested with its stored key.
	s := newService(t, "[llm.providers.box]\nbase_url = \""+srv.URL+"\"\napi_key = \"stored\"\n")
	s.Probe = p
	mux := http.NewServeMux()
	s.Routes(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/api/settings/test-provider", strings.NewReader(`{"provider":"box"}`)))
	if !strings.Contains(rec.Body.String(), `"ok":true`) || !strings.Contains(rec.Body.String(), "qwen3:4b") {
		t.Errorf("test-provider: %s", rec.Body.String())
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the model server")
	}
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("PATCH", "/api/settings", strings.NewReader(`{"changes":[{"key":"policy.auto_approve","value":"often"}]}`)))
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), `invalid value \"often\" for policy.auto_approve`) {
		t.Errorf("patch error: %d %s", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("PATCH", "/api/settings", strings.NewReader(`{"changes":[{"key":"policy.auto_approve","value":"none"}],"extra":1}`)))
	if rec.Code != 400 {
		t.Errorf("unknown field: %d %s", rec.Code, rec.Body.String())
	}
}

// FuzzSet: editing any file that is valid TOML yields valid TOML holding
// the new value, and never loses the other keys.
func FuzzSet(f *testing.F) {
	f.Add(sample, "policy", "auto_approve", "high")
	f.Add("", "budget", "warn_percent", "x")
	f.Add("[a]\nb = [\n 1, # c ]\n 2]\n", "a", "b", "v")
	f.Add("a = 1\n[t]\nk = 'x#y' # z\n", "t", "k", "q\"uote")
	f.Fuzz(func(t *testing.T, file, table, key, value string) {
		var before map[string]any
		if _, err := toml.Decode(file, &before); err != nil {
			return
		}
		if !bareKey.MatchString(table) || !bareKey.MatchString(key) {
			return
		}
		if _, isTable := before[table].(map[string]any); !isTable && before[table] != nil {
			return
		}
		d := parseDoc([]byte(file))
		if err := d.set(table, key, value); err != nil {
			if !utf8.ValidString(value) {
				return
			}
			t.Fatal(err)
		}
		var after map[string]any
		if _, err := toml.Decode(string(d.bytes()), &after); err != nil {
			// A table defined only implicitly (by [table.sub]) or a key
			// defined as a dotted key cannot always take a new header.
			if strings.Contains(err.Error(), "already been defined") || strings.Contains(err.Error(), "has already been") {
				return
			}
			t.Fatalf("edit broke the file: %v\n--- before\n%s\n--- after\n%s", err, file, d.bytes())
		}
		tab, _ := after[table].(map[string]any)
		if tab == nil || tab[key] != value {
			t.Fatalf("value not set: %v\n%s", after, d.bytes())
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				t.Fatalf("lost key %q\n%s", k, d.bytes())
			}
		}
	})
}

// The view says which speech tiers the daemon runs with, so the web UI
// offers the microphone and Read aloud only where they work.
func TestViewSpeechTiers(t *testing.T) {
	for _, c := range []struct {
		file     string
		stt, tts bool
	}{
		{"", false, false},
		{"[llm.providers.w]\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[llm.tiers]\nstt = [\"w/whisper-1\"]\n", true, false},
		{"[llm.providers.w]\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[llm.tiers]\nstt = [\"w/whisper-1\"]\ntts = [\"w/tts-1\"]\n", true, true},
	} {
		s := newService(t, c.file)
		v, err := s.Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if v.Speech.STT != c.stt || v.Speech.TTS != c.tts {
			t.Errorf("%q: speech %+v, want stt=%v tts=%v", c.file, v.Speech, c.stt, c.tts)
		}
	}
}
