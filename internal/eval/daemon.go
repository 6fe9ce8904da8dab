package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/mail"
)

// Endpoint is the model the suite runs against.
type Endpoint struct {
	BaseURL  string // e.g. http://127.0.0.1:8080/v1
	Model    string
	APIKey   string
	Provider string // "openai" (any OpenAI-compatible server, the default) or "anthropic"
	// Timeout is llm.timeout for the daemon (0: the configuration's default).
	Timeout time.Duration
}

func (e Endpoint) validate() error {
	switch {
	case e.BaseURL == "":
		return errors.New("eval: no model endpoint: set --base-url (e.g. http://127.0.0.1:11434/v1)")
	case !strings.HasPrefix(e.BaseURL, "http://") && !strings.HasPrefix(e.BaseURL, "https://"):
		return fmt.Errorf("eval: --base-url %q is not an http:// or https:// URL", e.BaseURL)
	case e.Model == "":
		return errors.New("eval: no model: set --model")
	case e.Provider != "" && e.Provider != "openai" && e.Provider != "anthropic":
		return fmt.Errorf("eval: --provider %q is not openai or anthropic", e.Provider)
	}
	return nil
}

// daemon is a running Hestia daemon over the generated home, driven
// through its HTTP API like any client.
type daemon struct {
	base  string
	token string
	http  *http.Client
	stop  func() error
}

const smtpPassword = "eval-secret"

// startDaemon builds the configuration for home and the endpoint, imports
// the Maildir into the mail mirror (as `hestia mail import` does), and
// serves the real daemon on loopback. The chat tier is the only one mapped
// to the endpoint, so background model work (memory review, mail
// promotion) never takes a task's turns.
func startDaemon(ctx context.Context, home *Home, data string, ep Endpoint, smtpPort int, log *slog.Logger) (*daemon, map[string]int64, error) {
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return data
		}
		return ""
	})
	if err != nil {
		return nil, nil, err
	}
	pw := filepath.Join(data, "smtp-password")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, nil, fmt.Errorf("eval: creating the daemon's home: %w", err)
	}
	if err := os.WriteFile(pw, []byte(smtpPassword+"\n"), 0o600); err != nil {
		return nil, nil, fmt.Errorf("eval: writing the SMTP password file: %w", err)
	}
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	kind := ep.Provider
	if kind == "" {
		kind = "openai"
	}
	cfg.LLM.Providers = map[string]config.LLMProvider{"eval": {Kind: kind, BaseURL: strings.TrimRight(ep.BaseURL, "/"), APIKey: ep.APIKey}}
	cfg.LLM.Tiers = map[string][]string{cfg.Agent.Tier: {"eval/" + ep.Model}}
	if ep.Timeout > 0 {
		cfg.LLM.Timeout = config.Duration(ep.Timeout)
	}
	cfg.Mail.Sources = []string{home.Maildir}
	cfg.Mail.Accounts = []config.MailAccount{{Name: "me", Address: meAddr, PasswordFile: pw,
		SMTPHost: "127.0.0.1", SMTPPort: smtpPort, SMTPSecurity: "none"}}
	cfg.Calendar.Sources = []config.VdirSource{{Name: "work", Path: filepath.Join(home.Calendar, "work")}, {Name: "personal", Path: filepath.Join(home.Calendar, "personal")}}
	cfg.Calendar.Timezone = home.Zone.String()
	cfg.Contacts.Sources = []config.VdirSource{{Name: "contacts", Path: home.Contacts, ReadOnly: true}}
	cfg.Wiki.Path = home.Wiki
	cfg.Wiki.Promote = false
	cfg.Agent.FileRoots = []string{home.Root}
	// A scripted user answers every card at once; a real model may take
	// minutes per step on a CPU.
	cfg.Agent.ApprovalTimeout = config.Duration(10 * time.Minute)

	// The mail import, as `hestia mail import` runs it: before the daemon,
	// so the first task finds every message.
	pre := app.New(paths, cfg, log, "eval")
	if err := paths.Ensure(); err != nil {
		return nil, nil, err
	}
	st, err := pre.OpenMailStore(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("eval: opening the mail mirror: %w", err)
	}
	if _, err := st.Import(ctx, home.Maildir, mail.ImportOptions{Account: "me"}); err != nil {
		pre.Close()
		return nil, nil, fmt.Errorf("eval: importing %s: %w", home.Maildir, err)
	}
	ids, err := messageIDs(ctx, st)
	if err != nil {
		pre.Close()
		return nil, nil, err
	}
	if err := pre.Close(); err != nil {
		return nil, nil, err
	}

	a := app.New(paths, cfg, log, "eval")
	sctx, cancel := context.WithCancel(ctx)
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- a.Serve(sctx, app.ServeOptions{Ready: func(addr net.Addr) { ready <- addr }}) }()
	d := &daemon{http: &http.Client{}, stop: func() error { cancel(); return <-done }}
	select {
	case addr := <-ready:
		d.base = "http://" + addr.String()
	case err := <-done:
		cancel()
		return nil, nil, fmt.Errorf("eval: the daemon did not start: %w", err)
	case <-time.After(60 * time.Second):
		cancel()
		return nil, nil, errors.New("eval: the daemon did not start within 60 s")
	}
	d.token = a.Token.Value()
	if err := d.waitIndexed(ctx, home); err != nil {
		_ = d.stop()
		return nil, nil, err
	}
	return d, ids, nil
}

// messageIDs maps each imported message's Message-ID (without brackets)
// to its id in the mirror, which the mail tools take.
func messageIDs(ctx context.Context, st *mail.Store) (map[string]int64, error) {
	rows, err := st.DB().QueryContext(ctx, `SELECT id, message_id FROM messages`)
	if err != nil {
		return nil, fmt.Errorf("eval: listing the imported messages: %w", err)
	}
	defer rows.Close()
	ids := map[string]int64{}
	for rows.Next() {
		var id int64
		var mid string
		if err := rows.Scan(&id, &mid); err != nil {
			return nil, fmt.Errorf("eval: listing the imported messages: %w", err)
		}
		ids[strings.Trim(mid, "<>")] = id
	}
	return ids, rows.Err()
}

// waitIndexed waits until the calendar and contacts vdirs are indexed
// (their reconcile workers run at start).
func (d *daemon) waitIndexed(ctx context.Context, home *Home) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, cal, _ := d.call(ctx, "GET", "/api/calendar/agenda?from="+home.Day(0)+"&to="+home.Day(7), nil)
		_, con, _ := d.call(ctx, "GET", "/api/contacts/search?q=Rossi", nil)
		if strings.Contains(string(cal), "dentist@eval") && strings.Contains(string(con), "Marco") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("eval: the calendar and contacts were not indexed within 60 s (agenda: %.200s; contacts: %.200s)", cal, con)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// call sends one API request with the token; body is marshalled as JSON.
func (d *daemon) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// getJSON decodes a GET's body into v.
func (d *daemon) getJSON(ctx context.Context, path string, v any) error {
	code, b, err := d.call(ctx, "GET", path, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %.300s", path, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// attach opens the event stream that makes approvals answerable (an
// attached client) and keeps it open until ctx ends.
func (d *daemon) attach(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, "GET", d.base+"/api/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := d.http.Do(req)
	if err != nil {
		return fmt.Errorf("eval: attaching to the event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("eval: attaching to the event stream: HTTP %d", resp.StatusCode)
	}
	go func() {
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return nil
}
