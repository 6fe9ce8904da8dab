package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/imapsync"
	"github.com/hestia-dev/hestia/internal/mail/journal"
	"github.com/hestia-dev/hestia/internal/mail/journal/smtpsend"
	"github.com/hestia-dev/hestia/internal/mail/mailtools"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Mail is the wired mail connector.
type Mail struct {
	Store   *mail.Store
	Journal *journal.Journal
	Sender  journal.Sender
	Deps    mailtools.Deps
	cfg     config.MailConfig
	// tokens gives the OAuth token source of accounts with auth = "oauth2"
	// (accountauth.go).
	tokens tokenSource
}

// embedAdapter lets the mail store use an llm.Embedder.
type embedAdapter struct{ e llm.Embedder }

func (a embedAdapter) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := a.e.Embed(ctx, llm.EmbedRequest{Tier: llm.LocalEmbed, Inputs: texts, Service: "mail", Action: "embed"})
	if err != nil {
		return nil, err
	}
	for _, e := range res.Errors {
		if e != nil {
			return nil, e
		}
	}
	return res.Vectors, nil
}

func (a embedAdapter) Dimension() int { return 0 }

var _ search.Embedder = embedAdapter{}

// OpenMail opens the mail mirror and the write journal (closed with the
// App). CLI commands use it directly; the daemon wires it in initMail.
func (a *App) OpenMail(ctx context.Context) (*Mail, error) {
	cfg := a.Config.Mail
	// The daemon's router (initLLM) when there is one; CLI commands build
	// the same tier mapping so both write vectors of one embedding space.
	var emb llm.Embedder = a.LLM
	if a.LLM == nil {
		r, err := llm.NewRouter(llm.RouterConfig{Tiers: llm.TiersFromConfig(a.Config.LLM), Timeout: a.Config.LLM.Timeout.D(), Logger: a.Log.With("component", "llm"), Now: a.Now})
		if err != nil {
			return nil, err
		}
		emb = r
	}
	st, err := mail.Open(ctx, mail.Options{
		DBPath: a.Paths.DB(mail.Schema.Name), BlobDir: filepath.Join(a.Paths.Data, "mail", "blobs"),
		Logger: a.Log.With("component", "mail"), Now: a.Now,
		Embedder: embedAdapter{emb}, EmbedModel: string(llm.LocalEmbed), EmbedMaxChars: cfg.EmbedMaxChars,
		Related: embedderKnowsMeaning(a.Config.LLM),
	})
	if err != nil {
		return nil, err
	}
	a.OnClose(st.Close)
	j, err := journal.Open(ctx, a.Paths.DB(journal.Schema.Name), a.Log.With("component", "mailops"), a.Now)
	if err != nil {
		return nil, err
	}
	a.OnClose(j.Close)
	m := &Mail{Store: st, Journal: j, cfg: cfg, tokens: a.accountTokens}
	senders := map[string]string{}
	for _, acc := range cfg.Accounts {
		if acc.SMTPHost != "" && acc.Address != "" {
			senders[acc.Name] = acc.Address
		}
	}
	if len(senders) > 0 {
		m.Sender = &smtpsend.Sender{Account: m.smtpAccount, AfterSend: m.appendSent}
	}
	m.Deps = mailtools.Deps{Store: st, Journal: j, Sender: m.Sender, Accounts: senders, Now: a.Now, Live: m.live}
	if len(cfg.Accounts) > 0 {
		m.Deps.DefaultAccount = cfg.Accounts[0].Name
	}
	return m, nil
}

// OpenMailStore opens only the mail mirror (closed with the App): no
// embedder, no send journal, no model router. It is what one-shot read
// commands need, and opening it does no work proportional to the mailbox.
func (a *App) OpenMailStore(ctx context.Context) (*mail.Store, error) {
	st, err := mail.Open(ctx, mail.Options{
		DBPath: a.Paths.DB(mail.Schema.Name), BlobDir: filepath.Join(a.Paths.Data, "mail", "blobs"),
		Logger: a.Log.With("component", "mail"), Now: a.Now, EmbedMaxChars: a.Config.Mail.EmbedMaxChars,
	})
	if err != nil {
		return nil, err
	}
	a.OnClose(st.Close)
	return st, nil
}

// IMAPAccounts names the configured accounts that have an IMAP server.
func (m *Mail) IMAPAccounts() []string {
	var out []string
	for _, acc := range m.cfg.Accounts {
		if acc.IMAPHost != "" {
			out = append(out, acc.Name)
		}
	}
	return out
}

func (m *Mail) account(name string) (config.MailAccount, error) {
	for _, acc := range m.cfg.Accounts {
		if acc.Name == name {
			return acc, nil
		}
	}
	return config.MailAccount{}, fmt.Errorf("no mail account %q in the configuration", name)
}

// Password reads an account's (mail, CalDAV or CardDAV) password from its
// environment variable or its owner-only file; it is never read from the
// configuration file.
func Password(acc config.MailAccount, getenv func(string) string) (string, error) {
	if acc.PasswordEnv != "" {
		if v := getenv(acc.PasswordEnv); v != "" {
			return v, nil
		}
		if acc.PasswordFile == "" {
			return "", fmt.Errorf("account %s: environment variable %s is empty", acc.Name, acc.PasswordEnv)
		}
	}
	if acc.PasswordFile == "" {
		return "", fmt.Errorf("account %s has no password_env or password_file", acc.Name)
	}
	fi, err := os.Stat(acc.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("account %s password file: %w", acc.Name, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("account %s: password file %s must not be readable by others (chmod 600)", acc.Name, acc.PasswordFile)
	}
	b, err := os.ReadFile(acc.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("account %s password file: %w", acc.Name, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func (m *Mail) smtpAccount(name string) (smtpsend.Account, error) {
	acc, err := m.account(name)
	if err != nil {
		return smtpsend.Account{}, err
	}
	user := acc.Username
	if user == "" {
		user = acc.Address
	}
	sa := smtpsend.Account{Host: acc.SMTPHost, Port: acc.SMTPPort, Security: acc.SMTPSecurity, Username: user,
		TLSConfig: &tls.Config{ServerName: acc.SMTPHost}}
	if acc.UsesOAuth() {
		src, err := m.tokens(acc.OAuthAccount, oauth.Mail)
		if err != nil {
			return smtpsend.Account{}, fmt.Errorf("mail account %s: %w", name, err)
		}
		sa.Tokens = src
		return sa, nil
	}
	if sa.Password, err = Password(acc, os.Getenv); err != nil {
		return smtpsend.Account{}, err
	}
	return sa, nil
}

// IMAPAccount resolves an account's IMAP connection settings.
func (m *Mail) IMAPAccount(name string) (imapsync.Account, error) {
	acc, err := m.account(name)
	if err != nil {
		return imapsync.Account{}, err
	}
	if acc.IMAPHost == "" {
		return imapsync.Account{}, fmt.Errorf("mail account %s has no imap_host", name)
	}
	user := acc.Username
	if user == "" {
		user = acc.Address
	}
	ia := imapsync.Account{Name: acc.Name, Host: acc.IMAPHost, Port: acc.IMAPPort, Security: acc.IMAPSecurity, Username: user,
		TLSConfig: &tls.Config{ServerName: acc.IMAPHost}}
	if acc.UsesOAuth() {
		src, err := m.tokens(acc.OAuthAccount, oauth.Mail)
		if err != nil {
			return imapsync.Account{}, fmt.Errorf("mail account %s: %w", name, err)
		}
		ia.Tokens = src
		return ia, nil
	}
	if ia.Password, err = Password(acc, os.Getenv); err != nil {
		return imapsync.Account{}, err
	}
	return ia, nil
}

// live fetches one IMAP copy for reads of partially mirrored messages.
func (m *Mail) live(ctx context.Context, path string) ([]byte, error) {
	name, _, _, _, err := imapsync.ParsePath(path)
	if err != nil {
		return nil, err
	}
	ia, err := m.IMAPAccount(name)
	if err != nil {
		return nil, err
	}
	return imapsync.FetchRaw(ctx, ia, path, 25<<20)
}

func (m *Mail) appendSent(ctx context.Context, name string, raw []byte) error {
	acc, err := m.account(name)
	if err != nil || !acc.SaveSent || acc.IMAPHost == "" {
		return err
	}
	ia, err := m.IMAPAccount(name)
	if err != nil {
		return err
	}
	return imapsync.AppendSent(ctx, ia, raw)
}

// registerMail wires the mail connector into the daemon: its tools, its
// routes and its background workers (reconcile, watch, IMAP sync,
// embedding, scheduled sends and confirmation).
func (a *App) registerMail(ctx context.Context, reg *tools.Registry, paths *pathpolicy.Policy) error {
	m, err := a.OpenMail(ctx)
	if err != nil {
		return err
	}
	a.mailStore = m.Store
	m.Deps.Paths = paths
	if err := mailtools.Register(reg, m.Deps); err != nil {
		return err
	}
	a.AddCheck(mailPageReaderCheck(m.Store))
	if a.Server != nil {
		m.Routes(a.Server.API())
	}
	cfg := a.Config.Mail
	log := a.Log.With("component", "mail")
	// Periodic mail work runs as built-in scheduler jobs (builtinjobs.go):
	// journaled, no overlap, `hestia jobs run NAME` for a run now. Only
	// the filesystem watcher stays a worker (it reacts to events).
	// Always registered: `hestia mail import` adds sources while the
	// daemon runs (mail.Store.AddSource), and they are rescanned here.
	if err := a.builtinJob(ctx, "mail.reconcile", cfg.ReconcileInterval.D(), 30*time.Minute, func(ctx context.Context) error {
		var errs []error
		for _, src := range cfg.Sources {
			if _, err := m.Store.Reconcile(ctx, src, mail.ImportOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("reconciling %s: %w", src, err))
			}
		}
		if _, err := m.Store.RescanSources(ctx); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}); err != nil {
		return err
	}
	// The vector index is loaded at start rather than by the first hybrid
	// search, which would otherwise wait for it (0.6 s at 100k messages),
	// and so are the message lengths one-word searches rank with.
	a.AddWorker("mail.vectors", func(ctx context.Context) error {
		if err := m.Store.WarmRanking(ctx); err != nil && ctx.Err() == nil {
			log.Warn("mailLengthsNotLoaded", "err", err, "effect", "one-word searches read them when first needed")
		}
		if err := m.Store.LoadVectors(ctx); err != nil && ctx.Err() == nil {
			log.Warn("mailVectorsNotLoaded", "err", err, "effect", "the first hybrid search loads them")
		}
		<-ctx.Done()
		return nil
	})
	if cfg.Watch {
		for _, src := range cfg.Sources {
			a.AddWorker("mail.watch", func(ctx context.Context) error { return m.Store.Watch(ctx, src, mail.ImportOptions{}, 0) })
		}
	}
	for _, acc := range cfg.Accounts {
		if acc.IMAPHost == "" {
			continue
		}
		interval := acc.SyncInterval.D()
		if interval == 0 {
			interval = 5 * time.Minute
		}
		if err := a.builtinJob(ctx, "mail.imap."+jobName(acc.Name), interval, 30*time.Minute, func(ctx context.Context) error {
			ia, err := m.IMAPAccount(acc.Name)
			if err != nil {
				return err
			}
			if _, err := (&imapsync.Syncer{Store: m.Store, Log: log}).Sync(ctx, ia); err != nil {
				return fmt.Errorf("syncing %s: %w", acc.Name, err)
			}
			_, err = m.Store.RefreshRankLengths(ctx)
			return err
		}); err != nil {
			return err
		}
	}
	// Embedding drains the backlog a chunk at a time for up to five
	// minutes a run; the next run (a minute later) goes on.
	if err := a.builtinJob(ctx, "mail.embed", time.Minute, 10*time.Minute, func(ctx context.Context) error {
		start := time.Now()
		// Whatever else changed the word index (an IMAP sync cut short, a
		// rebuild), common-word searches get their fast ranking back.
		if _, err := m.Store.RefreshRankLengths(ctx); err != nil {
			return err
		}
		// Vectors written before they were stored quantised shrink to a
		// quarter first (once; seconds at 100k).
		if _, err := m.Store.ShrinkVectors(ctx); err != nil {
			return err
		}
		for time.Since(start) < 5*time.Minute {
			n, err := m.Store.EmbedPending(ctx, cfg.EmbedBatch, cfg.EmbedBatch*8)
			if err != nil || n == 0 {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	// Scheduled sends and Sent-mailbox confirmation.
	ops := func(ctx context.Context) error {
		var errs []error
		if m.Sender != nil {
			if _, err := m.Journal.SendDue(ctx, m.Sender); err != nil {
				errs = append(errs, fmt.Errorf("sending due mail: %w", err))
			}
		}
		if _, _, err := m.Journal.Confirm(ctx, m.Store, journal.ConfirmOptions{MaxChecks: cfg.ConfirmChecks}); err != nil {
			errs = append(errs, fmt.Errorf("confirming sends: %w", err))
		}
		return errors.Join(errs...)
	}
	return a.builtinJob(ctx, "mail.ops", cfg.ConfirmInterval.D(), 10*time.Minute, ops)
}
