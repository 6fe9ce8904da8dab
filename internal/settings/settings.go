// Package settings is the Settings page's backend: it shows the parts of
// the configuration a user sets up in the first hour (model providers and
// tiers, file roots, the auto-approve threshold, budgets, mail accounts),
// edits config.toml in place keeping comments and layout, validates every
// change with the same code and messages as startup, tests a provider's
// connection and finds local model servers on their default ports.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// the Settings page API (`/api/settings`): config.toml edited line by line so comments and layout
// survive, every change validated by `config.Parse` (the startup code and messages), written
// atomically 0600; provider connection test (`GET {base}/models`) and detection of
// Ollama/llama.cpp/LM Studio on their default loopback ports. Model endpoints and chat tiers
// (`llm.Router.SetChatTiers`; local-embed stays), the auto-approve threshold and budgets are
// applied to the running daemon (`app.applyLive`); other components read config once, so their
// saved keys are reported as waiting for a restart; mail accounts edited in place (only the sent
// fields change). Calendars, contacts (vdir and CalDAV/CardDAV), Telegram, MCP servers
// and the mail folders the daemon rescans are listed read-only (sources.go): setup or
// config.toml edits them, `hestia mail sources remove` unregisters a folder, and no
// password, token, URL credential or MCP argument is ever in the view.
package settings

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Service reads and writes one home's config.toml.
type Service struct {
	Paths config.Paths
	Env   config.Env
	// Running is the configuration the daemon runs with (at start, then
	// updated with what Live applied); a saved change that differs from it
	// needs a restart.
	Running config.Config
	// Live applies a validated configuration to the running daemon where
	// it can and returns the groups it applied (LiveModels, LiveThreshold,
	// LiveBudgets); may be nil.
	Live func(ctx context.Context, cfg config.Config) []string
	// Probe is the HTTP used for connection tests and local detection.
	Probe Prober
	// MailSources lists the folders the daemon rescans for mail (the mail
	// store's registrations); nil leaves the list empty.
	MailSources func(ctx context.Context) ([]MailSource, error)
	// LocalTTS: the daemon speaks with espeak-ng when no tts tier is mapped.
	LocalTTS bool
	// Accounts lists the OAuth sign-ins and their state (nil: none wired).
	Accounts func(ctx context.Context) ([]Account, error)
	// OAuthTokens gives the running daemon's OAuth token sources, so a
	// setup step with auth = "oauth2" can be tested (nil: saved untested).
	OAuthTokens OAuthTokenFunc

	mu sync.Mutex // one writer of config.toml at a time
}

// The groups of settings a running daemon can take without a restart.
const (
	// LiveModels: llm.base_url/model/api_key, the providers and the chat
	// tiers tier-1 … tier-6 (not local-embed, stt or tts).
	LiveModels = "models"
	// LiveThreshold: policy.auto_approve.
	LiveThreshold = "auto-approve threshold"
	// LiveBudgets: every budget.* key.
	LiveBudgets = "budgets"
)

// adopt copies the groups applied live from saved into running, so the
// page stops listing them as waiting for a restart.
func adopt(running, saved config.Config, groups []string) config.Config {
	for _, g := range groups {
		switch g {
		case LiveThreshold:
			running.Policy.AutoApprove = saved.Policy.AutoApprove
		case LiveBudgets:
			running.Budget = saved.Budget
		case LiveModels:
			tiers := map[string][]string{}
			for k, v := range running.LLM.Tiers {
				tiers[k] = v
			}
			for _, k := range config.LLMTierNames() {
				if !strings.HasPrefix(k, "tier-") {
					continue
				}
				if v, ok := saved.LLM.Tiers[k]; ok {
					tiers[k] = v
				} else {
					delete(tiers, k)
				}
			}
			running.LLM.BaseURL, running.LLM.Model, running.LLM.APIKey = saved.LLM.BaseURL, saved.LLM.Model, saved.LLM.APIKey
			running.LLM.Providers = saved.LLM.Providers
			running.LLM.Tiers = tiers
		}
	}
	return running
}

// changedGroups names the live groups whose values differ.
func changedGroups(running, saved config.Config) map[string]bool {
	out := map[string]bool{}
	enc := func(c config.Config) config.Config { return c.Masked() }
	r, sv := enc(running), enc(saved)
	if r.Policy.AutoApprove != sv.Policy.AutoApprove {
		out[LiveThreshold] = true
	}
	if r.Budget != sv.Budget {
		out[LiveBudgets] = true
	}
	// Secrets count too: a new key with the same URL is a change.
	if adoptEq := adopt(running, saved, []string{LiveModels}); !sameLLM(adoptEq, running) {
		out[LiveModels] = true
	}
	return out
}

func sameLLM(a, b config.Config) bool {
	ta, _ := config.Config{LLM: a.LLM}.TOML()
	tb, _ := config.Config{LLM: b.LLM}.TOML()
	return ta == tb
}

// Provider is one model endpoint as the page shows it (key masked).
type Provider struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	BaseURL   string `json:"base_url"`
	APIKeySet bool   `json:"api_key_set"`
	MaxTokens int    `json:"max_tokens,omitempty"`
}

// MailAccount is an account as the page shows it (no secret is stored in
// the file; password_env/password_file name where it is).
type MailAccount struct {
	Name         string `json:"name"`
	Address      string `json:"address"`
	Username     string `json:"username,omitempty"`
	PasswordEnv  string `json:"password_env,omitempty"`
	PasswordFile string `json:"password_file,omitempty"`
	// Auth is "oauth2" for an account signing in with OAuthAccount's
	// token, else empty (a password).
	Auth         string `json:"auth,omitempty"`
	OAuthAccount string `json:"oauth_account,omitempty"`
	IMAPHost     string `json:"imap_host,omitempty"`
	IMAPPort     int    `json:"imap_port,omitempty"`
	IMAPSecurity string `json:"imap_security,omitempty"`
	SMTPHost     string `json:"smtp_host,omitempty"`
	SMTPPort     int    `json:"smtp_port,omitempty"`
	SMTPSecurity string `json:"smtp_security,omitempty"`
}

// View is GET /api/settings.
type View struct {
	File       string `json:"file"`
	FileExists bool   `json:"file_exists"`
	ModelReady bool   `json:"model_ready"`
	// Speech says which speech tiers the running daemon has, so the web UI
	// shows the microphone and Read aloud only where they can work.
	Speech struct {
		STT bool `json:"stt"`
		TTS bool `json:"tts"`
	} `json:"speech"`
	DefaultLLM struct {
		BaseURL   string `json:"base_url"`
		Model     string `json:"model"`
		APIKeySet bool   `json:"api_key_set"`
	} `json:"llm"`
	Providers        []Provider          `json:"providers"`
	Tiers            map[string][]string `json:"tiers"`
	TierNames        []string            `json:"tier_names"`
	AgentTier        string              `json:"agent_tier"`
	FileRoots        []string            `json:"file_roots"`
	FileRootsDefault string              `json:"file_roots_default"`
	AutoApprove      string              `json:"auto_approve"`
	Budget           config.BudgetConfig `json:"budget"`
	Mail             []MailAccount       `json:"mail_accounts"`
	// EnvOverrides maps keys set by the environment (which wins over the
	// file) to the variable.
	EnvOverrides map[string]string `json:"env_overrides"`
	// Pending lists keys saved in the file that the running daemon has not
	// applied yet (restart needed).
	Pending []string `json:"pending_restart"`
	// Sources are the read-only sections: calendars, contacts, Telegram,
	// MCP servers and mail folders (no secrets).
	Sources Sources `json:"sources"`
}

// ModelConfigured reports whether cfg gives chat turns a model: the flat
// base_url or a mapped chat tier.
func ModelConfigured(cfg config.Config) bool {
	if cfg.LLM.BaseURL != "" {
		return true
	}
	for tier, targets := range cfg.LLM.Tiers {
		if tier != "local-embed" && len(targets) > 0 {
			return true
		}
	}
	return false
}

func (s *Service) read() ([]byte, bool, error) {
	data, err := os.ReadFile(s.Paths.ConfigFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", s.Paths.ConfigFile(), err)
	}
	return data, true, nil
}

// Get describes the configuration as the file and environment set it now.
func (s *Service) Get(ctx context.Context) (View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cfg, exists, err := s.current()
	if err != nil {
		return View{}, err
	}
	return s.view(ctx, cfg, exists), nil
}

// current is the configuration as the file and environment set it now
// (s.mu held); exists says whether the file is there.
func (s *Service) current() (config.Config, bool, error) {
	data, exists, err := s.read()
	if err != nil {
		return config.Config{}, false, err
	}
	cfg, err := config.Parse(data, s.Env)
	if err != nil {
		return config.Config{}, exists, fmt.Errorf("%s: %w", s.Paths.ConfigFile(), err)
	}
	return cfg, exists, nil
}

func (s *Service) view(ctx context.Context, cfg config.Config, exists bool) View {
	v := View{File: s.Paths.ConfigFile(), FileExists: exists, ModelReady: ModelConfigured(s.Running), Tiers: map[string][]string{},
		TierNames: config.LLMTierNames(), AgentTier: cfg.Agent.Tier, FileRoots: cfg.Agent.FileRoots, AutoApprove: cfg.Policy.AutoApprove,
		Budget: cfg.Budget, EnvOverrides: config.EnvOverrides(s.Env), Mail: []MailAccount{}, Providers: []Provider{}}
	v.Speech.STT, v.Speech.TTS = len(s.Running.LLM.Tiers["stt"]) > 0, len(s.Running.LLM.Tiers["tts"]) > 0 || s.LocalTTS
	v.FileRootsDefault = "~ (your home folder)"
	if v.FileRoots == nil {
		v.FileRoots = []string{}
	}
	v.DefaultLLM.BaseURL, v.DefaultLLM.Model, v.DefaultLLM.APIKeySet = cfg.LLM.BaseURL, cfg.LLM.Model, cfg.LLM.APIKey != ""
	for name, p := range cfg.LLM.Providers {
		kind := p.Kind
		if kind == "" {
			kind = "openai"
		}
		v.Providers = append(v.Providers, Provider{Name: name, Kind: kind, BaseURL: p.BaseURL, APIKeySet: p.APIKey != "", MaxTokens: p.MaxTokens})
	}
	sort.Slice(v.Providers, func(i, j int) bool { return v.Providers[i].Name < v.Providers[j].Name })
	for t, targets := range cfg.LLM.Tiers {
		v.Tiers[t] = targets
	}
	for _, a := range cfg.Mail.Accounts {
		v.Mail = append(v.Mail, MailAccount{Name: a.Name, Address: a.Address, Username: a.Username, PasswordEnv: a.PasswordEnv, PasswordFile: a.PasswordFile,
			Auth: a.Auth, OAuthAccount: a.OAuthAccount, IMAPHost: a.IMAPHost, IMAPPort: a.IMAPPort, IMAPSecurity: a.IMAPSecurity, SMTPHost: a.SMTPHost, SMTPPort: a.SMTPPort, SMTPSecurity: a.SMTPSecurity})
	}
	v.Pending = pending(s.Running, cfg)
	v.Sources = s.sourcesView(ctx, cfg)
	return v
}

// pending names the sections whose saved values differ from the running ones.
func pending(running, saved config.Config) []string {
	out := []string{}
	a, _ := running.Masked().TOML()
	b, _ := saved.Masked().TOML()
	if a == b {
		return out
	}
	ra, sa := sections(a), sections(b)
	for k, v := range sa {
		if ra[k] != v {
			out = append(out, k)
		}
	}
	for k := range ra {
		if _, ok := sa[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// sections splits encoded TOML into "key → value line" for comparison.
func sections(t string) map[string]string {
	out := map[string]string{}
	table, array := "", false
	for _, l := range strings.Split(t, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if n, arr, ok := header(l); ok {
			table, array = n, arr
			continue
		}
		if array { // an entry of [[table]] is reported as the table
			out[table] += l + ";"
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		key := strings.Trim(strings.TrimSpace(k), `"`)
		if table != "" {
			key = table + "." + key
		}
		out[key] += strings.TrimSpace(v)
	}
	return out
}

// Change is one edit. Value is a JSON value (string, number, bool, list of
// strings, or for a provider an object); Delete removes the key, provider
// or mail account instead.
type Change struct {
	Key    string `json:"key"`
	Value  any    `json:"value,omitempty"`
	Delete bool   `json:"delete,omitempty"`
	// Edit names the mail account changed in place (key mail.accounts):
	// only the fields in Value change ("" removes one); every other key of
	// the entry, and its comments, stay.
	Edit string `json:"edit,omitempty"`
}

// ErrInvalid marks changes refused before anything was written.
var ErrInvalid = errors.New("invalid settings change")

var (
	nameRE     = lazyre.New(`^[A-Za-z0-9_-]{1,40}$`)
	scalarKeys = map[string]bool{
		"llm.base_url": true, "llm.api_key": true, "llm.model": true,
		"agent.file_roots": true, "agent.tier": true, "policy.auto_approve": true,
		"budget.daily_cost_usd": true, "budget.monthly_cost_usd": true, "budget.daily_tokens": true,
		"budget.monthly_tokens": true, "budget.warn_percent": true,
	}
	providerFields = map[string]bool{"kind": true, "base_url": true, "api_key": true, "max_tokens": true}
	mailFields     = []string{"name", "address", "username", "password_env", "password_file", "auth", "oauth_account", "imap_host", "imap_port", "imap_security", "smtp_host", "smtp_port", "smtp_security"}
)

// masked is what Get shows for a set secret; sending it back keeps the secret.
const masked = "********"

func apply(d *doc, c Change) error {
	parts := strings.Split(c.Key, ".")
	switch {
	case scalarKeys[c.Key]:
		table, key := parts[0], parts[1]
		if c.Delete || c.Value == nil {
			d.unset(table, key)
			return nil
		}
		if s, ok := c.Value.(string); ok && s == masked && key == "api_key" {
			return nil
		}
		return d.set(table, key, c.Value)
	case len(parts) == 3 && parts[0] == "llm" && parts[1] == "tiers":
		if !contains(config.LLMTierNames(), parts[2]) {
			return fmt.Errorf("%w: %s: no tier %q (one of %s)", ErrInvalid, c.Key, parts[2], strings.Join(config.LLMTierNames(), ", "))
		}
		if c.Delete || c.Value == nil {
			d.unset("llm.tiers", parts[2])
			return nil
		}
		if l, ok := c.Value.([]any); ok && len(l) == 0 {
			d.unset("llm.tiers", parts[2])
			return nil
		}
		return d.set("llm.tiers", parts[2], c.Value)
	case len(parts) == 3 && parts[0] == "llm" && parts[1] == "providers":
		name := parts[2]
		if !nameRE.MatchString(name) {
			return fmt.Errorf("%w: provider name %q: use letters, digits, - and _ (up to 40)", ErrInvalid, name)
		}
		table := "llm.providers." + name
		if c.Delete {
			d.dropTable(table)
			return nil
		}
		obj, ok := c.Value.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: %s needs an object with kind, base_url, api_key, max_tokens", ErrInvalid, c.Key)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			if !providerFields[k] {
				return fmt.Errorf("%w: %s: unknown field %q", ErrInvalid, c.Key, k)
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := obj[k]
			if s, ok := v.(string); ok && (s == "" || (k == "api_key" && s == masked)) {
				if s == "" {
					d.unset(table, k)
				}
				continue
			}
			if err := d.set(table, k, v); err != nil {
				return err
			}
		}
		return nil
	case c.Key == "mail.accounts":
		obj, ok := c.Value.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: mail.accounts needs an object with at least name", ErrInvalid)
		}
		name, _ := obj["name"].(string)
		if c.Edit != "" {
			return editAccount(d, c.Edit, obj)
		}
		if c.Delete {
			if !d.dropEntry("mail.accounts", "name", name) {
				return fmt.Errorf("%w: no mail account %q in %s", ErrInvalid, name, "config.toml")
			}
			return nil
		}
		for k := range obj {
			if !contains(mailFields, k) {
				return fmt.Errorf("%w: mail.accounts: unknown field %q", ErrInvalid, k)
			}
		}
		var fields [][2]any
		for _, k := range mailFields {
			if v, ok := obj[k]; ok && v != nil && v != "" && v != float64(0) {
				fields = append(fields, [2]any{k, v})
			}
		}
		return d.appendEntry("mail.accounts", fields)
	}
	return fmt.Errorf("%w: %q cannot be changed here (edit config.toml)", ErrInvalid, c.Key)
}

// editAccount changes the given fields of the [[mail.accounts]] entry named
// name in place.
func editAccount(d *doc, name string, obj map[string]any) error {
	s, ok := d.findEntry("mail.accounts", "name", name)
	if !ok {
		return fmt.Errorf("%w: no mail account %q in config.toml", ErrInvalid, name)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if !contains(mailFields, k) {
			return fmt.Errorf("%w: mail.accounts: unknown field %q", ErrInvalid, k)
		}
		keys = append(keys, k)
	}
	// In the page's field order, so new keys land in a familiar order.
	sort.Slice(keys, func(i, j int) bool { return index(mailFields, keys[i]) < index(mailFields, keys[j]) })
	for _, k := range keys {
		v := obj[k]
		if v == nil || v == "" {
			if k == "name" {
				return fmt.Errorf("%w: mail.accounts: name cannot be empty", ErrInvalid)
			}
			d.unsetIn(s, k)
		} else if err := d.setIn(s, k, v); err != nil {
			return fmt.Errorf("%w: mail.accounts %q: %s: %v", ErrInvalid, name, k, err)
		}
		// Lines moved: find the entry again by its (possibly new) name.
		if k == "name" {
			name, _ = v.(string)
		}
		if s, ok = d.findEntry("mail.accounts", "name", name); !ok {
			return fmt.Errorf("%w: mail account %q disappeared while editing", ErrInvalid, name)
		}
	}
	return nil
}

func index(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return len(l)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Apply edits config.toml with changes, validates the result as startup
// would and writes it (atomically, owner-only) only when it is valid. The
// returned view lists what still needs a restart.
func (s *Service) Apply(ctx context.Context, changes []Change) (View, []string, error) {
	if len(changes) == 0 {
		return View{}, nil, fmt.Errorf("%w: no changes", ErrInvalid)
	}
	return s.applyDoc(ctx, func(d *doc) error {
		for _, c := range changes {
			if err := apply(d, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// applyDoc runs edit on config.toml's lines, validates the result as
// startup would and writes it only when it is valid.
func (s *Service) applyDoc(ctx context.Context, edit func(d *doc) error) (View, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, _, err := s.read()
	if err != nil {
		return View{}, nil, err
	}
	if _, err := config.Parse(data, s.Env); err != nil {
		return View{}, nil, fmt.Errorf("%w: %s is already invalid, fix it first: %v", ErrInvalid, s.Paths.ConfigFile(), err)
	}
	d := parseDoc(data)
	if err := edit(d); err != nil {
		return View{}, nil, err
	}
	out := d.bytes()
	cfg, err := config.Parse(out, s.Env)
	if err != nil {
		return View{}, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := writeAtomic(s.Paths.ConfigFile(), out); err != nil {
		return View{}, nil, err
	}
	live := []string{}
	if s.Live != nil {
		changed := changedGroups(s.Running, cfg)
		applied := s.Live(ctx, cfg)
		s.Running = adopt(s.Running, cfg, applied)
		for _, g := range applied {
			if changed[g] {
				live = append(live, g)
			}
		}
	}
	return s.view(ctx, cfg, true), live, nil
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.Write(path, data, 0o600)
}
