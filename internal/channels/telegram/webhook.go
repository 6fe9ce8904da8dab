package telegram

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/httpjson"
)

// WebhookPath is where the daemon receives Telegram's webhook deliveries.
// A reverse proxy (or tunnel) maps the public WebhookURL onto it.
const WebhookPath = "/telegram/webhook"

// SecretHeader carries the secret token given to setWebhook.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxDelivery bounds one webhook body; an update is a few kilobytes.
const maxDelivery = 1 << 20

// hookState is what the webhook handler needs while Receive is
// receiving by webhook: the context and handler of that Receive, and the
// secret of this run.
type hookState struct {
	ctx     context.Context
	handler channels.Handler
	secret  string
}

// runWebhook registers the webhook with a fresh secret and serves
// deliveries through WebhookHandler until ctx ends. The webhook stays set
// when the daemon stops, so updates queue at Telegram for the next start.
func (a *Adapter) runWebhook(ctx context.Context, h channels.Handler) error {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return err
	}
	// 64 hex characters: within the 1-256 [A-Za-z0-9_-] Telegram allows.
	secret := hex.EncodeToString(raw[:])
	a.hookMu.Lock()
	a.hook = &hookState{ctx: ctx, handler: h, secret: secret}
	a.hookMu.Unlock()
	defer func() {
		// Waits for a delivery being handled, so none starts after Receive
		// returned.
		a.hookMu.Lock()
		a.hook = nil
		a.hookMu.Unlock()
	}()
	if err := a.api.SetWebhook(ctx, a.cfg.WebhookURL, secret); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("setting the telegram webhook: %w", err)
	}
	// Recorded even when shutdown began meanwhile: the webhook is set.
	if err := a.st.SetMode(context.WithoutCancel(ctx), "webhook"); err != nil {
		return err
	}
	a.log.Info("telegram webhook set", "url", a.cfg.WebhookURL)
	<-ctx.Done()
	return nil
}

// WebhookHandler serves Telegram's deliveries. Every request must carry
// this run's secret (compared in constant time); anything else is a 401
// and nothing is read. The answer comes after the update was handled, so
// Telegram redelivers one the daemon did not finish (the relay handles an
// update id once).
func (a *Adapter) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get(SecretHeader)
		a.hookMu.Lock()
		defer a.hookMu.Unlock()
		h := a.hook
		if h == nil || h.ctx.Err() != nil {
			httpjson.Error(w, http.StatusServiceUnavailable, "not_receiving", "the Telegram channel is not receiving by webhook")
			return
		}
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(h.secret)) != 1 {
			a.log.Warn("telegram webhook request with a wrong secret refused", "remote", r.RemoteAddr)
			httpjson.Error(w, http.StatusUnauthorized, "unauthorized", "a valid secret token is required")
			return
		}
		var u Update
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxDelivery))
		if err := dec.Decode(&u); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				httpjson.Error(w, http.StatusRequestEntityTooLarge, "too_large", "the update is larger than 1 MB")
				return
			}
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "the body is not a JSON Telegram update")
			return
		}
		if u.UpdateID <= 0 {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "the update has no update_id")
			return
		}
		a.deliver(h.ctx, h.handler, u)
		httpjson.Write(w, http.StatusOK, map[string]bool{"ok": true})
	})
}
