package telegram

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// WebhookPath is where the daemon receives Telegram's webhook deliveries.
// A reverse proxy (or tunnel) maps the public WebhookURL onto it.
const WebhookPath = "/telegram/webhook"

// SecretHeader carries the secret token given to setWebhook.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxDelivery bounds one webhook body; an update is a few kilobytes.
const maxDelivery = 1 << 20

// hookState is what the webhook handler needs while Run receives by
// webhook: the run's context (followers outlive the request) and the
// secret of this run.
type hookState struct {
	ctx    context.Context
	secret string
}

// runWebhook registers the webhook with a fresh secret and serves
// deliveries through WebhookHandler until ctx ends. The webhook stays set
// when the daemon stops, so updates queue at Telegram for the next start.
func (b *Bot) runWebhook(ctx context.Context) error {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return err
	}
	// 64 hex characters: within the 1-256 [A-Za-z0-9_-] Telegram allows.
	secret := hex.EncodeToString(raw[:])
	b.hookMu.Lock()
	b.hook = &hookState{ctx: ctx, secret: secret}
	b.hookMu.Unlock()
	defer func() {
		// Waits for a delivery being handled, so none starts a follower
		// after Run's final wait.
		b.hookMu.Lock()
		b.hook = nil
		b.hookMu.Unlock()
	}()
	if !b.untilDone(ctx, "setting the telegram webhook", func(ctx context.Context) error {
		return b.d.API.SetWebhook(ctx, b.cfg.WebhookURL, secret)
	}) {
		return nil
	}
	// Recorded even when shutdown began meanwhile: the webhook is set.
	if err := b.d.Store.SetMode(context.WithoutCancel(ctx), "webhook"); err != nil {
		return err
	}
	b.d.Log.Info("telegram webhook set", "url", b.cfg.WebhookURL)
	<-ctx.Done()
	return nil
}

// WebhookHandler serves Telegram's deliveries. Every request must carry
// this run's secret (compared in constant time); anything else is a 401
// and nothing is read. An update is handled once, however often it is
// delivered, and the answer comes after it was handled, so Telegram
// redelivers an update the daemon did not finish.
func (b *Bot) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get(SecretHeader)
		b.hookMu.Lock()
		defer b.hookMu.Unlock()
		h := b.hook
		if h == nil || h.ctx.Err() != nil {
			httpjson.Error(w, http.StatusServiceUnavailable, "not_receiving", "the Telegram channel is not receiving by webhook")
			return
		}
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(h.secret)) != 1 {
			b.d.Log.Warn("telegram webhook request with a wrong secret refused", "remote", r.RemoteAddr)
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
		if err := b.handleOnce(h.ctx, u); err != nil {
			b.d.Log.Error("telegram webhook update", "update", u.UpdateID, "err", err)
			httpjson.Error(w, http.StatusInternalServerError, "internal", "the update could not be recorded")
			return
		}
		httpjson.Write(w, http.StatusOK, map[string]bool{"ok": true})
	})
}
