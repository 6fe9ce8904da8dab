package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/mail/mailauth"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/settings"
)

// initSettings serves the Settings page's API (daemon only). Saved changes
// are validated like startup and written to config.toml. Model endpoints
// and chat tiers, the auto-approve threshold and budgets are applied to the
// running daemon at once (applyLive); the rest is read once at start, so
// the page reports those keys as waiting for a restart.
func (a *App) initSettings(ctx context.Context) error {
	if a.Server == nil {
		return nil
	}
	s := &settings.Service{Paths: a.Paths, Env: a.env(), Running: a.Config, Live: a.applyLive}
	if svc, err := a.speechService(); err == nil && svc.Local != nil {
		s.LocalTTS = true
	}
	if st := a.mailStore; st != nil {
		s.MailSources = func(ctx context.Context) ([]settings.MailSource, error) {
			srcs, err := st.Sources(ctx)
			out := make([]settings.MailSource, 0, len(srcs))
			for _, src := range srcs {
				out = append(out, settings.MailSource{Path: src.Path, Account: src.Account})
			}
			return out, err
		}
	}
	if len(a.Config.OAuth.Accounts) > 0 {
		// A setup step signing in with OAuth is tested with the token.
		s.OAuthTokens = func(name string, p oauth.Purpose) (mailauth.Tokens, error) {
			src, err := a.accountTokens(name, p)
			if err != nil {
				return nil, err
			}
			return src, nil
		}
		s.Accounts = func(ctx context.Context) ([]settings.Account, error) {
			m, err := a.OAuth()
			if err != nil {
				return nil, err
			}
			out := []settings.Account{}
			for _, name := range m.Names() {
				st, err := m.Status(name)
				if err != nil {
					out = append(out, settings.Account{Name: name, State: "error", Detail: err.Error()})
					continue
				}
				acct := settings.Account{Name: name, Provider: st.Provider, State: st.State, Detail: st.Detail, Expiry: st.Expiry}
				if _, at, err := a.oauthAttempts(); err == nil {
					if c, ok := at.Attempt(name); ok {
						acct.Connect = &c
					}
				}
				out = append(out, acct)
			}
			return out, nil
		}
	}
	s.Routes(a.Server.API())
	return nil
}

// applyLive applies the parts of a saved configuration that components can
// take while running and returns the settings groups it applied. A part
// that fails stays waiting for a restart (and is logged).
func (a *App) applyLive(ctx context.Context, cfg config.Config) []string {
	var done []string
	if a.LLM != nil {
		if err := a.LLM.SetChatTiers(llm.TiersFromConfig(cfg.LLM)); err != nil {
			a.Log.Warn("settings: model tiers not applied live", "err", err)
		} else {
			done = append(done, settings.LiveModels)
		}
	}
	if a.core.policy != nil {
		t, err := policy.ParseThreshold(cfg.Policy.AutoApprove)
		if err == nil {
			err = a.core.policy.SetAutoApprove(t)
		}
		if err != nil {
			a.Log.Warn("settings: auto-approve threshold not applied live", "err", err)
		} else {
			done = append(done, settings.LiveThreshold)
		}
	}
	if a.Budget != nil {
		if err := a.Budget.SetConfig(cfg.Budget); err != nil {
			a.Log.Warn("settings: budgets not applied live", "err", err)
		} else {
			done = append(done, settings.LiveBudgets)
		}
	}
	return done
}
