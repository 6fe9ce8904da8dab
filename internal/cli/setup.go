package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/settings"
)

// runSetup is the terminal first-run wizard: the same steps, presets and
// connection tests as the web page (internal/settings), writing config.toml
// and owner-only secret files directly, so it works before the daemon runs.
func runSetup(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("setup")
	only := fs.String("step", "", "run one step: "+strings.Join(settings.SetupSteps(), ", "))
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	steps := settings.SetupSteps()
	if *only != "" {
		found := false
		for _, s := range steps {
			found = found || s == *only
		}
		if !found {
			return usagef("--step %q: one of %s", *only, strings.Join(steps, ", "))
		}
		steps = []string{*only}
	}
	paths, err := config.ResolvePaths(env.Getenv)
	if err != nil {
		return err
	}
	svc := &settings.Service{Paths: paths, Env: env.Getenv}
	running, err := config.Load(paths, env.Getenv)
	if err != nil {
		return fmt.Errorf("the current configuration is invalid, fix it first: %w", err)
	}
	svc.Running = running
	w := &wizard{env: env, in: bufio.NewReader(env.Stdin), svc: svc}
	fmt.Fprintf(env.Stdout, "Hestia setup — writes %s; passwords and tokens go to owner-only files in %s.\nPress Enter to accept [defaults]; type skip to leave a step out.\n", paths.ConfigFile(), settings.SecretsDir(paths))
	saved := 0
	for _, step := range steps {
		ok, err := w.step(ctx, step)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if ok {
			saved++
		}
	}
	fmt.Fprintf(env.Stdout, "\n%d step(s) saved. Start Hestia with `hestia serve` (or `hestia restart` if it runs).\n", saved)
	return nil
}

type wizard struct {
	env *Env
	in  *bufio.Reader
	svc *settings.Service
}

var errSkip = errors.New("skipped")

// ask prints a prompt and reads one line; def is used for an empty answer.
func (w *wizard) ask(prompt, def string) (string, error) {
	if def != "" {
		fmt.Fprintf(w.env.Stdout, "%s [%s]: ", prompt, def)
	} else {
		fmt.Fprintf(w.env.Stdout, "%s: ", prompt)
	}
	line, err := w.in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(w.env.Stdout)
		return "", err
	}
	line = strings.TrimSpace(line)
	if strings.EqualFold(line, "skip") {
		return "", errSkip
	}
	if line == "" {
		line = def
	}
	return line, nil
}

// secret reads without echo when stdin is a terminal.
func (w *wizard) secret(prompt string) (string, error) {
	if f, ok := w.env.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(w.env.Stdout, "%s (not shown): ", prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(w.env.Stdout)
		return strings.TrimSpace(string(b)), err
	}
	return w.ask(prompt, "")
}

// step asks for one step until its test passes or the user skips it.
func (w *wizard) step(ctx context.Context, step string) (bool, error) {
	fmt.Fprintf(w.env.Stdout, "\n== %s ==\n", stepTitle(step))
	for {
		in, err := w.collect(ctx, step)
		if errors.Is(err, errSkip) {
			fmt.Fprintln(w.env.Stdout, "skipped")
			return false, nil
		}
		if err != nil {
			return false, err
		}
		fmt.Fprintln(w.env.Stdout, "testing the connection…")
		out, err := w.svc.SaveStep(ctx, step, in)
		if err == nil {
			fmt.Fprintf(w.env.Stdout, "✓ %s saved%s\n", stepTitle(step), describe(out))
			return true, nil
		}
		var se *settings.StepError
		if !errors.As(err, &se) && !errors.Is(err, settings.ErrStepInput) && !errors.Is(err, settings.ErrInvalid) {
			return false, err
		}
		fmt.Fprintf(w.env.Stdout, "✗ %v\nNothing was saved; try again or type skip.\n", err)
	}
}

func stepTitle(step string) string {
	return map[string]string{settings.StepModel: "Model", settings.StepMail: "Mail", settings.StepCalendar: "Calendar",
		settings.StepContacts: "Contacts", settings.StepFiles: "Documents and file roots", settings.StepTelegram: "Telegram"}[step]
}

func describe(out map[string]any) string {
	switch {
	case out["bot"] != nil:
		return fmt.Sprintf(" (bot @%v)", out["bot"])
	case out["mailboxes"] != nil:
		return fmt.Sprintf(" (%v mailboxes)", out["mailboxes"])
	case out["connect"] != nil:
		return fmt.Sprintf("; %v", out["note"])
	}
	return ""
}

func (w *wizard) collect(ctx context.Context, step string) (settings.StepInput, error) {
	var in settings.StepInput
	var err error
	switch step {
	case settings.StepModel:
		found := w.svc.Probe.Detect(ctx)
		defURL, defModel := "", ""
		for _, f := range found {
			fmt.Fprintf(w.env.Stdout, "found %s at %s (%d models)\n", f.Product, f.BaseURL, len(f.Models))
		}
		if len(found) > 0 {
			defURL = found[0].BaseURL
			if len(found[0].Models) > 0 {
				defModel = found[0].Models[0]
			}
		} else {
			fmt.Fprintln(w.env.Stdout, "no local model server found (Ollama :11434, llama.cpp :8080, LM Studio :1234); give a hosted API's base URL and key, or start one and run `hestia setup --step model`")
		}
		if in.BaseURL, err = w.ask("API base URL", defURL); err != nil {
			return in, err
		}
		if strings.Contains(in.BaseURL, "anthropic.com") {
			in.Kind = "anthropic"
		}
		if in.APIKey, err = w.secret("API key (empty for a local server)"); err != nil {
			return in, err
		}
		if in.Model, err = w.ask("Model", defModel); err != nil {
			return in, err
		}
		in.Provider = "main"
		for _, f := range found {
			if f.BaseURL == in.BaseURL {
				in.Provider = f.Name
			}
		}
	case settings.StepMail:
		ids := []string{}
		for _, p := range settings.MailPresets() {
			ids = append(ids, p.ID)
		}
		id, err := w.ask("Provider ("+strings.Join(ids, ", ")+", other) or skip", "skip")
		if err != nil || id == "skip" {
			return in, errSkipOr(err)
		}
		var preset *settings.MailPreset
		for _, p := range settings.MailPresets() {
			if p.ID == id {
				preset = &p
			}
		}
		if in.Address, err = w.ask("Email address", ""); err != nil {
			return in, err
		}
		if preset != nil {
			in.IMAPHost, in.IMAPPort, in.IMAPSecurity = preset.IMAPHost, preset.IMAPPort, preset.IMAPSecurity
			in.SMTPHost, in.SMTPPort, in.SMTPSecurity, in.SaveSent = preset.SMTPHost, preset.SMTPPort, preset.SMTPSecurity, preset.SaveSent
			fmt.Fprintln(w.env.Stdout, preset.Password)
		} else {
			for _, f := range []struct {
				prompt, def string
				s           *string
				n           *int
			}{{"IMAP host", "", &in.IMAPHost, nil}, {"IMAP port", "993", nil, &in.IMAPPort}, {"IMAP security (tls, starttls, none)", "tls", &in.IMAPSecurity, nil},
				{"SMTP host", "", &in.SMTPHost, nil}, {"SMTP port", "465", nil, &in.SMTPPort}, {"SMTP security (tls, starttls, none)", "tls", &in.SMTPSecurity, nil}} {
				v, err := w.ask(f.prompt, f.def)
				if err != nil {
					return in, err
				}
				if f.s != nil {
					*f.s = v
				} else if *f.n, err = strconv.Atoi(v); err != nil {
					fmt.Fprintf(w.env.Stdout, "%q is not a port number\n", v)
				}
			}
		}
		if in.Username, err = w.ask("User name", in.Address); err != nil {
			return in, err
		}
		if preset != nil && preset.OAuth != "" {
			how, err := w.ask("Sign in with "+providerTitle(preset.OAuth)+" (oauth) or with a password (password)", "oauth")
			if err != nil {
				return in, err
			}
			if how == "oauth" {
				fmt.Fprintln(w.env.Stdout, preset.OAuthHelp)
				return in, w.askOAuth(&in, preset.OAuth)
			}
		}
		if in.Password, err = w.secret("Password (app password)"); err != nil {
			return in, err
		}
	case settings.StepCalendar, settings.StepContacts:
		proto := map[string]string{settings.StepCalendar: "CalDAV", settings.StepContacts: "CardDAV"}[step]
		for _, p := range settings.DAVPresets() {
			u := p.CalDAVURL
			if step == settings.StepContacts {
				u = p.CardDAVURL
			}
			fmt.Fprintf(w.env.Stdout, "  %s: %s\n", p.Name, u)
		}
		where, err := w.ask(proto+" URL, or a local vdir folder, or skip", "skip")
		if err != nil || where == "skip" {
			return in, errSkipOr(err)
		}
		if in.Name, err = w.ask("Name", step); err != nil {
			return in, err
		}
		if !strings.HasPrefix(where, "http://") && !strings.HasPrefix(where, "https://") {
			in.Path = where
			return in, nil
		}
		in.URL = where
		for _, p := range settings.DAVPresets() {
			if p.OAuth != "" && (where == p.CalDAVURL || where == p.CardDAVURL) {
				fmt.Fprintln(w.env.Stdout, p.OAuthHelp)
				if in.Username, err = w.ask("Your "+p.Name+" address", ""); err != nil {
					return in, err
				}
				return in, w.askOAuth(&in, p.OAuth)
			}
		}
		if in.Username, err = w.ask("User name (empty for none)", ""); err != nil {
			return in, err
		}
		if in.Username != "" {
			if in.Password, err = w.secret("Password (app password)"); err != nil {
				return in, err
			}
		}
	case settings.StepFiles:
		roots, err := w.ask("Folders Hestia may read and write, comma-separated (documents, notes), or skip", "skip")
		if err != nil || roots == "skip" {
			return in, errSkipOr(err)
		}
		for _, r := range strings.Split(roots, ",") {
			if r = strings.TrimSpace(r); r != "" {
				in.FileRoots = append(in.FileRoots, r)
			}
		}
	case settings.StepTelegram:
		if in.Token, err = w.secret("Bot token from @BotFather (empty to skip)"); err != nil || in.Token == "" {
			return in, errSkipOr(err)
		}
		id, err := w.ask("Your numeric Telegram user id (ask @userinfobot)", "")
		if err != nil {
			return in, err
		}
		in.OwnerID, _ = strconv.ParseInt(id, 10, 64)
		in.APIURL = w.env.Getenv("HESTIA_TELEGRAM_API_URL")
	}
	return in, err
}

// askOAuth fills an OAuth sign-in: the [[oauth.accounts]] name, and the
// client to create it with when config.toml has none by that name.
func (w *wizard) askOAuth(in *settings.StepInput, provider string) error {
	var err error
	in.Auth, in.OAuthProvider = config.AuthOAuth2, provider
	if in.OAuthAccount, err = w.ask("OAuth account name (lower-case; empty: from the name)", ""); err != nil {
		return err
	}
	if in.ClientID, err = w.ask("OAuth client id (empty if config.toml already has this OAuth account)", ""); err != nil {
		return err
	}
	if in.ClientID != "" && provider == "google" {
		if in.ClientSecret, err = w.secret("OAuth client secret"); err != nil {
			return err
		}
	}
	if in.ClientID != "" && provider == "microsoft" {
		in.Tenant, err = w.ask("Tenant (common, organizations, consumers, a tenant id or domain)", "common")
	}
	return err
}

func providerTitle(p string) string {
	return map[string]string{"google": "Google", "microsoft": "Microsoft"}[p]
}

// errSkipOr turns "no error" (the user chose to skip) into errSkip.
func errSkipOr(err error) error {
	if err == nil {
		return errSkip
	}
	return err
}
