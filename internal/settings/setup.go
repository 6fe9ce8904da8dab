package settings

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/oauth"
)

// First-run setup: the web page on first open and `hestia setup` walk the
// same steps (model, mail, calendar, contacts, files, telegram). Each step
// is tested (Tester) before anything is saved; passwords and tokens go to
// owner-only files under CONFIG/secrets and config.toml names the file.

// The setup steps, in the order the wizard shows them.
const (
	StepModel    = "model"
	StepMail     = "mail"
	StepCalendar = "calendar"
	StepContacts = "contacts"
	StepFiles    = "files"
	StepTelegram = "telegram"
)

// SetupSteps lists the steps in order.
func SetupSteps() []string {
	return []string{StepModel, StepMail, StepCalendar, StepContacts, StepFiles, StepTelegram}
}

// MailPreset is a provider's IMAP/SMTP settings and how to get a password
// that works for them.
type MailPreset struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	IMAPHost     string `json:"imap_host"`
	IMAPPort     int    `json:"imap_port"`
	IMAPSecurity string `json:"imap_security"`
	SMTPHost     string `json:"smtp_host"`
	SMTPPort     int    `json:"smtp_port"`
	SMTPSecurity string `json:"smtp_security"`
	// SaveSent is false where the server files sent mail itself.
	SaveSent bool   `json:"save_sent"`
	Password string `json:"password_help"`
	// OAuth is the [[oauth.accounts]] provider the service signs in with
	// (google, microsoft), "" where only a password works; OAuthScopes
	// are the scopes mail needs (the provider's defaults include them);
	// OAuthHelp says how to connect.
	OAuth       string   `json:"oauth_provider,omitempty"`
	OAuthScopes []string `json:"oauth_scopes,omitempty"`
	OAuthHelp   string   `json:"oauth_help,omitempty"`
}

// MailPresets are the providers the wizard knows; "other" is typed by hand.
func MailPresets() []MailPreset {
	return []MailPreset{
		{ID: "gmail", Name: "Gmail / Google Workspace", IMAPHost: "imap.gmail.com", IMAPPort: 993, IMAPSecurity: "tls",
			SMTPHost: "smtp.gmail.com", SMTPPort: 465, SMTPSecurity: "tls",
			Password: "Use an app password: turn on 2-Step Verification, then create one at https://myaccount.google.com/apppasswords (your normal password is refused).",
			OAuth:    "google", OAuthScopes: []string{oauth.GoogleMailScope},
			OAuthHelp: "Sign in with Google instead of an app password: register a Desktop app OAuth client at Google Cloud (docs/oauth.md), give its client id and secret, save, then run hestia accounts connect NAME. The same sign-in can serve Google Calendar and Contacts. SMTP also works on port 587 with STARTTLS."},
		{ID: "fastmail", Name: "Fastmail", IMAPHost: "imap.fastmail.com", IMAPPort: 993, IMAPSecurity: "tls",
			SMTPHost: "smtp.fastmail.com", SMTPPort: 465, SMTPSecurity: "tls", SaveSent: true,
			Password: "Create an app password in Settings → Privacy & Security → Manage app passwords, with IMAP and SMTP access."},
		{ID: "icloud", Name: "iCloud Mail", IMAPHost: "imap.mail.me.com", IMAPPort: 993, IMAPSecurity: "tls",
			SMTPHost: "smtp.mail.me.com", SMTPPort: 587, SMTPSecurity: "starttls", SaveSent: true,
			Password: "Create an app-specific password at https://account.apple.com → Sign-In and Security → App-Specific Passwords; the user name is your iCloud address."},
		{ID: "microsoft365", Name: "Microsoft 365 / Outlook.com", IMAPHost: "outlook.office365.com", IMAPPort: 993, IMAPSecurity: "tls",
			SMTPHost: "smtp.office365.com", SMTPPort: 587, SMTPSecurity: "starttls",
			Password: "Microsoft 365 work and school accounts no longer accept passwords over IMAP and SMTP: sign in with Microsoft instead. Some personal Outlook.com accounts with two-step verification still take an app password (https://account.microsoft.com/security → Advanced security options).",
			OAuth:    "microsoft", OAuthScopes: []string{oauth.MicrosoftIMAPScope, oauth.MicrosoftSMTPScope, oauth.OfflineAccess},
			OAuthHelp: "Sign in with Microsoft: register an app at Entra ID (docs/oauth.md; no secret needed), give its application (client) id, save, then run hestia accounts connect NAME (--device on a machine without a browser). IMAP and SMTP AUTH must be on for the mailbox."},
		{ID: "proton", Name: "Proton Mail (Bridge)", IMAPHost: "127.0.0.1", IMAPPort: 1143, IMAPSecurity: "none",
			SMTPHost: "127.0.0.1", SMTPPort: 1025, SMTPSecurity: "none", SaveSent: false,
			Password: "Start Proton Mail Bridge and copy the password it shows for the account (not your Proton password); it listens on this computer only, so the connection stays on loopback."},
	}
}

// DAVPreset is a provider's CalDAV and CardDAV address.
type DAVPreset struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	CalDAVURL  string `json:"caldav_url"`
	CardDAVURL string `json:"carddav_url"` // EMAIL stands for the account's address
	Password   string `json:"password_help"`
	// OAuth is the [[oauth.accounts]] provider these endpoints take a
	// bearer token from; OAuthHelp says how to connect.
	OAuth     string `json:"oauth_provider,omitempty"`
	OAuthHelp string `json:"oauth_help,omitempty"`
}

// DAVPresets are the calendar/contacts servers the wizard knows.
func DAVPresets() []DAVPreset {
	return []DAVPreset{
		{ID: "fastmail", Name: "Fastmail", CalDAVURL: "https://caldav.fastmail.com/dav/", CardDAVURL: "https://carddav.fastmail.com/dav/",
			Password: "An app password with CalDAV/CardDAV access (Settings → Privacy & Security)."},
		{ID: "icloud", Name: "iCloud", CalDAVURL: "https://caldav.icloud.com/", CardDAVURL: "https://contacts.icloud.com/",
			Password: "An app-specific password from https://account.apple.com."},
		{ID: "google", Name: "Google", CalDAVURL: config.GoogleCalDAVURL, CardDAVURL: config.GoogleCardDAVURL,
			Password:  "Google's CalDAV/CardDAV needs OAuth for most accounts; an app password works only where Google still allows it.",
			OAuth:     "google",
			OAuthHelp: "Sign in with Google: use the OAuth account you made for Gmail (or register a Desktop app client, docs/oauth.md), give your Google address as the user name, save, then run hestia accounts connect NAME if it is not connected yet."},
		{ID: "nextcloud", Name: "Nextcloud", CalDAVURL: "https://YOUR-SERVER/remote.php/dav/", CardDAVURL: "https://YOUR-SERVER/remote.php/dav/",
			Password: "An app password from Settings → Security → Devices & sessions."},
	}
}

// Tester checks a step's connection before it is saved. The zero value
// makes real connections; tests replace fields.
type Tester struct {
	Probe Prober
}

// StepInput is what one step sends. Fields a step does not use are
// ignored.
type StepInput struct {
	// model
	Kind     string `json:"kind,omitempty"` // openai or anthropic
	Provider string `json:"provider,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	APIKey   string `json:"api_key,omitempty"`
	Model    string `json:"model,omitempty"`
	// mail, calendar, contacts
	Name         string `json:"name,omitempty"`
	Address      string `json:"address,omitempty"`
	Username     string `json:"username,omitempty"`
	Password     string `json:"password,omitempty"`
	IMAPHost     string `json:"imap_host,omitempty"`
	IMAPPort     int    `json:"imap_port,omitempty"`
	IMAPSecurity string `json:"imap_security,omitempty"`
	SMTPHost     string `json:"smtp_host,omitempty"`
	SMTPPort     int    `json:"smtp_port,omitempty"`
	SMTPSecurity string `json:"smtp_security,omitempty"`
	SaveSent     bool   `json:"save_sent,omitempty"`
	// mail, calendar, contacts: Auth is password (default) or oauth2
	// (setupoauth.go): OAuthAccount names the [[oauth.accounts]] entry,
	// created from OAuthProvider, ClientID, ClientSecret and Tenant when
	// config.toml has none by that name.
	Auth          string `json:"auth,omitempty"`
	OAuthAccount  string `json:"oauth_account,omitempty"`
	OAuthProvider string `json:"oauth_provider,omitempty"`
	ClientID      string `json:"client_id,omitempty"`
	ClientSecret  string `json:"client_secret,omitempty"`
	Tenant        string `json:"tenant,omitempty"`
	// calendar, contacts: URL (CalDAV/CardDAV) or Path (a vdir folder).
	URL  string `json:"url,omitempty"`
	Path string `json:"path,omitempty"`
	// files
	FileRoots []string `json:"file_roots,omitempty"`
	// telegram
	Token   string `json:"token,omitempty"`
	OwnerID int64  `json:"owner_id,omitempty"`
	// APIURL is the Bot API root (default https://api.telegram.org).
	APIURL string `json:"api_url,omitempty"`
}

// SetupStatus is GET /api/setup.
type SetupStatus struct {
	// Needed: no model is configured and setup was not dismissed.
	Needed      bool            `json:"needed"`
	ModelReady  bool            `json:"model_ready"`
	Dismissed   bool            `json:"dismissed"`
	Steps       []string        `json:"steps"`
	MailPresets []MailPreset    `json:"mail_presets"`
	DAVPresets  []DAVPreset     `json:"dav_presets"`
	Local       []Candidate     `json:"local_candidates"`
	SecretsDir  string          `json:"secrets_dir"`
	Configured  map[string]bool `json:"configured"`
}

// StepError is a failed connection test; Part names what failed ("IMAP
// login", "SMTP auth", "CalDAV", "model list", …).
type StepError struct {
	Part string
	Err  error
}

func (e *StepError) Error() string { return e.Part + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// SecretsDir holds the owner-only secret files setup writes.
func SecretsDir(p config.Paths) string { return filepath.Join(p.Config, "secrets") }

func dismissedFile(p config.Paths) string { return filepath.Join(p.Data, "setup-dismissed") }

// SetupStatus reports whether the first-run setup should be offered.
func (s *Service) SetupStatus(ctx context.Context) (SetupStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cfg, _, err := s.current()
	if err != nil {
		return SetupStatus{}, err
	}
	_, derr := os.Stat(dismissedFile(s.Paths))
	st := SetupStatus{ModelReady: ModelConfigured(cfg), Dismissed: derr == nil, Steps: SetupSteps(),
		MailPresets: MailPresets(), DAVPresets: DAVPresets(), Local: s.candidates(), SecretsDir: SecretsDir(s.Paths),
		Configured: map[string]bool{
			StepModel: ModelConfigured(cfg), StepMail: len(cfg.Mail.Accounts) > 0 || len(cfg.Mail.Sources) > 0,
			StepCalendar: len(cfg.Calendar.CalDAV) > 0 || len(cfg.Calendar.Sources) > 0,
			StepContacts: len(cfg.Contacts.CardDAV) > 0 || len(cfg.Contacts.Sources) > 0,
			StepFiles:    len(cfg.Agent.FileRoots) > 0, StepTelegram: cfg.Telegram.Enabled(),
		}}
	st.Needed = !st.ModelReady && !st.Dismissed
	return st, nil
}

// DismissSetup records that the user closed the wizard (it is not offered
// on open again; Settings and `hestia setup` still run it).
func (s *Service) DismissSetup(ctx context.Context) error {
	if err := os.MkdirAll(s.Paths.Data, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", s.Paths.Data, err)
	}
	return atomicfile.Write(dismissedFile(s.Paths), []byte("dismissed\n"), 0o600)
}

// ErrStepInput marks a step refused for its input, before any connection.
var ErrStepInput = errors.New("setup input")

var secretNameRE = lazyre.New(`[^A-Za-z0-9_-]+`)

// writeSecret stores value in CONFIG/secrets/NAME, owner-only, and returns
// the path config.toml refers to.
func writeSecret(p config.Paths, name, value string) (string, error) {
	dir := SecretsDir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	// MkdirAll keeps the mode of an existing folder: tighten it.
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("securing %s: %w", dir, err)
	}
	path := filepath.Join(dir, secretNameRE.ReplaceAllString(name, "_"))
	if err := atomicfile.Write(path, []byte(value+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing secret %s: %w", path, err)
	}
	return path, nil
}

func need(fields ...[2]string) error {
	var missing []string
	for _, f := range fields {
		if strings.TrimSpace(f[1]) == "" {
			missing = append(missing, f[0])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrStepInput, strings.Join(missing, ", "))
	}
	return nil
}

// normalize fills defaults and checks required fields.
func normalize(step string, in *StepInput) error {
	switch step {
	case StepModel:
		if in.Kind == "" {
			in.Kind = "openai"
		}
		if in.Kind != "openai" && in.Kind != "anthropic" {
			return fmt.Errorf("%w: kind %q is not openai or anthropic", ErrStepInput, in.Kind)
		}
		if in.Kind == "anthropic" && in.BaseURL == "" {
			in.BaseURL = "https://api.anthropic.com/v1"
		}
		if in.Provider == "" {
			in.Provider = "main"
		}
		if !nameRE.MatchString(in.Provider) || in.Provider == "default" || in.Provider == "local" {
			return fmt.Errorf("%w: provider name %q: use letters, digits, - and _ (up to 40), not default or local", ErrStepInput, in.Provider)
		}
		return need([2]string{"base_url", in.BaseURL}, [2]string{"model", in.Model})
	case StepMail:
		if in.Username == "" {
			in.Username = in.Address
		}
		if in.Name == "" {
			in.Name, _, _ = strings.Cut(in.Address, "@")
		}
		if err := normalizeAuth(in); err != nil {
			return err
		}
		pw := in.Password
		if in.Auth == config.AuthOAuth2 {
			pw = "(oauth2)" // the token replaces it
		}
		if err := need([2]string{"address", in.Address}, [2]string{"password", pw}, [2]string{"imap_host", in.IMAPHost},
			[2]string{"smtp_host", in.SMTPHost}, [2]string{"imap_security", in.IMAPSecurity}, [2]string{"smtp_security", in.SMTPSecurity}); err != nil {
			return err
		}
		if !strings.Contains(in.Address, "@") {
			return fmt.Errorf("%w: address %q is not an email address", ErrStepInput, in.Address)
		}
		for _, hs := range [][2]string{{in.IMAPHost, in.IMAPSecurity}, {in.SMTPHost, in.SMTPSecurity}} {
			if hs[1] != "tls" && hs[1] != "starttls" && hs[1] != "none" {
				return fmt.Errorf("%w: security %q for %s is not tls, starttls or none", ErrStepInput, hs[1], hs[0])
			}
			// The test would send the password in clear text otherwise.
			if hs[1] == "none" && !config.IsLoopbackHost(hs[0]) {
				return fmt.Errorf("%w: security none for %s: only a loopback host (such as Proton Bridge) may go without TLS", ErrStepInput, hs[0])
			}
		}
		if in.IMAPPort < 1 || in.IMAPPort > 65535 || in.SMTPPort < 1 || in.SMTPPort > 65535 {
			return fmt.Errorf("%w: imap_port %d / smtp_port %d: ports are 1 to 65535", ErrStepInput, in.IMAPPort, in.SMTPPort)
		}
	case StepCalendar, StepContacts:
		if (in.URL == "") == (in.Path == "") {
			return fmt.Errorf("%w: give either url (a CalDAV/CardDAV server) or path (a local vdir folder)", ErrStepInput)
		}
		if in.Name == "" {
			in.Name = step
		}
		if err := normalizeAuth(in); err != nil {
			return err
		}
		if in.Auth == config.AuthOAuth2 {
			return normalizeDAVOAuth(in)
		}
		if in.URL != "" && in.Username != "" && in.Password == "" {
			return fmt.Errorf("%w: missing password for %s", ErrStepInput, in.Username)
		}
		if in.Path != "" {
			in.Path = expandHome(in.Path)
		}
	case StepFiles:
		if len(in.FileRoots) == 0 {
			return fmt.Errorf("%w: missing file_roots (folders Hestia may read and write)", ErrStepInput)
		}
	case StepTelegram:
		if err := need([2]string{"token", in.Token}); err != nil {
			return err
		}
		if in.OwnerID <= 0 {
			return fmt.Errorf("%w: owner_id must be your numeric Telegram user id (ask @userinfobot)", ErrStepInput)
		}
	default:
		return fmt.Errorf("%w: no setup step %q (one of %s)", ErrStepInput, step, strings.Join(SetupSteps(), ", "))
	}
	return nil
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// TestStep checks a step's connection; the result lists what was found
// (models, mailboxes) and an error names the part that failed.
func (s *Service) TestStep(ctx context.Context, step string, in StepInput) (map[string]any, error) {
	if err := normalize(step, &in); err != nil {
		return nil, err
	}
	if in.Auth == config.AuthOAuth2 {
		return s.testOAuth(ctx, step, in)
	}
	t := Tester{Probe: s.Probe}
	return t.test(ctx, step, in)
}

func (t Tester) test(ctx context.Context, step string, in StepInput) (map[string]any, error) {
	switch step {
	case StepModel:
		models, err := t.Probe.Models(ctx, in.Kind, in.BaseURL, in.APIKey)
		if err != nil {
			return nil, &StepError{Part: "model list", Err: err}
		}
		if len(models) > 0 && !contains(models, in.Model) {
			return nil, &StepError{Part: "model", Err: fmt.Errorf("%s does not list %q (it has %s)", in.BaseURL, in.Model, strings.Join(first(models, 8), ", "))}
		}
		return map[string]any{"models": models}, nil
	case StepMail:
		n, err := testIMAP(ctx, in, nil)
		if err != nil {
			return nil, err
		}
		if err := testSMTP(ctx, in, nil); err != nil {
			return nil, err
		}
		return map[string]any{"mailboxes": n}, nil
	case StepCalendar, StepContacts:
		if in.Path != "" {
			return testFolder(in.Path, step)
		}
		proto := "CalDAV"
		if step == StepContacts {
			proto = "CardDAV"
		}
		if err := propfind(ctx, in.URL, in.Username, in.Password); err != nil {
			return nil, &StepError{Part: proto, Err: err}
		}
		return map[string]any{"url": in.URL}, nil
	case StepFiles:
		for _, r := range in.FileRoots {
			if _, err := testFolder(expandHome(r), "file root"); err != nil {
				return nil, err
			}
		}
		return map[string]any{"file_roots": in.FileRoots}, nil
	case StepTelegram:
		api := in.APIURL
		if api == "" {
			api = config.Default().Telegram.APIURL
		}
		name, err := telegramGetMe(ctx, t.Probe, api, in.Token)
		if err != nil {
			return nil, &StepError{Part: "Telegram bot token", Err: err}
		}
		return map[string]any{"bot": name}, nil
	}
	return nil, fmt.Errorf("%w: no setup step %q", ErrStepInput, step)
}

func first(l []string, n int) []string {
	if len(l) > n {
		return l[:n]
	}
	return l
}

func testFolder(path, what string) (map[string]any, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &StepError{Part: what + " folder", Err: fmt.Errorf("%s does not exist", path)}
	case err != nil:
		return nil, &StepError{Part: what + " folder", Err: err}
	case !fi.IsDir():
		return nil, &StepError{Part: what + " folder", Err: fmt.Errorf("%s is not a folder", path)}
	}
	return map[string]any{"path": path}, nil
}

// SaveStep tests the step, then writes its secrets and config keys. Nothing
// is written when the test fails or the resulting config is invalid.
func (s *Service) SaveStep(ctx context.Context, step string, in StepInput) (map[string]any, error) {
	if err := normalize(step, &in); err != nil {
		return nil, err
	}
	if in.Auth == config.AuthOAuth2 {
		return s.saveOAuth(ctx, step, in)
	}
	found, err := Tester{Probe: s.Probe}.test(ctx, step, in)
	if err != nil {
		return nil, err
	}
	// Secrets first: the config refers to their files. A refused config
	// leaves a secret file nothing names, which the next save overwrites.
	var edit func(d *doc) error
	switch step {
	case StepModel:
		key := ""
		if in.APIKey != "" {
			key = in.APIKey
		}
		edit = func(d *doc) error {
			table := "llm.providers." + in.Provider
			d.dropTable(table)
			fields := []struct {
				k string
				v any
			}{{"kind", in.Kind}, {"base_url", in.BaseURL}, {"api_key", key}}
			for _, f := range fields {
				if f.v == "" {
					continue
				}
				if err := d.set(table, f.k, f.v); err != nil {
					return err
				}
			}
			for _, tier := range config.LLMTierNames() {
				if strings.HasPrefix(tier, "tier-") {
					if err := d.set("llm.tiers", tier, []any{in.Provider + "/" + in.Model}); err != nil {
						return err
					}
				}
			}
			return nil
		}
	case StepMail:
		path, err := writeSecret(s.Paths, "mail-"+in.Name, in.Password)
		if err != nil {
			return nil, err
		}
		edit = func(d *doc) error {
			d.dropEntry("mail.accounts", "name", in.Name)
			return d.appendEntry("mail.accounts", [][2]any{{"name", in.Name}, {"address", in.Address}, {"username", in.Username},
				{"password_file", path}, {"imap_host", in.IMAPHost}, {"imap_port", in.IMAPPort}, {"imap_security", in.IMAPSecurity},
				{"smtp_host", in.SMTPHost}, {"smtp_port", in.SMTPPort}, {"smtp_security", in.SMTPSecurity}, {"save_sent", in.SaveSent}})
		}
	case StepCalendar, StepContacts:
		section, dav := "calendar", "caldav"
		if step == StepContacts {
			section, dav = "contacts", "carddav"
		}
		if in.Path != "" {
			edit = func(d *doc) error {
				d.dropEntry(section+".sources", "name", in.Name)
				return d.appendEntry(section+".sources", [][2]any{{"name", in.Name}, {"path", in.Path}})
			}
			break
		}
		fields := [][2]any{{"name", in.Name}, {"url", in.URL}}
		if in.Username != "" {
			path, err := writeSecret(s.Paths, dav+"-"+in.Name, in.Password)
			if err != nil {
				return nil, err
			}
			fields = append(fields, [2]any{"username", in.Username}, [2]any{"password_file", path})
		}
		edit = func(d *doc) error {
			d.dropEntry(section+"."+dav, "name", in.Name)
			return d.appendEntry(section+"."+dav, fields)
		}
	case StepFiles:
		roots := make([]any, len(in.FileRoots))
		for i, r := range in.FileRoots {
			roots[i] = r
		}
		edit = func(d *doc) error { return d.set("agent", "file_roots", roots) }
	case StepTelegram:
		path, err := writeSecret(s.Paths, "telegram-token", in.Token)
		if err != nil {
			return nil, err
		}
		edit = func(d *doc) error {
			d.unset("telegram", "token")
			if err := d.set("telegram", "token_file", path); err != nil {
				return err
			}
			if in.APIURL != "" {
				if err := d.set("telegram", "api_url", in.APIURL); err != nil {
					return err
				}
			}
			return d.set("telegram", "owner_id", in.OwnerID)
		}
	}
	if _, _, err := s.applyDoc(ctx, edit); err != nil {
		return nil, err
	}
	found["saved"] = step
	found["file"] = s.Paths.ConfigFile()
	return found, nil
}
