// Package whatsapp adapts Meta's WhatsApp Cloud API to channels.Platform.
//
// Supported:
//   - receiving by webhook only (the Cloud API has no polling): the
//     subscription handshake (GET, hub.verify_token compared in constant
//     time, hub.challenge echoed) and deliveries (POST) whose
//     X-Hub-Signature-256 HMAC of the raw body, keyed by the app secret, is
//     checked in constant time before anything is parsed; unsigned or
//     forged deliveries get 401 and never reach the relay;
//   - text messages, voice notes and audio, and images, videos and
//     documents as attachments with their caption as the text (all
//     fetched lazily: GET /{media-id} and then the short-lived URL, both
//     with the bearer token and only to Meta's hosts, size-capped and
//     checked against Meta's SHA-256), approval buttons pressed
//     (interactive button_reply, payload "a:<approval id>:<verb>") and 👍/👎
//     reactions to a prompt sent since start (a 👍 elsewhere is only a
//     thank-you), all as one-to-one conversations: the Cloud API
//     delivers no group messages, so Conv and Sender are both the wa_id;
//   - sending text (Markdown rendered as *bold*, _italic_, ~strike~,
//     ```mono```; at most 4,096 characters), approval prompts as
//     interactive messages with up to three reply buttons (the text goes
//     first when it is over the 1,024 characters a button message's body
//     may hold), and voice replies (uploaded audio);
//   - the 24-hour customer service window: free-form messages only within
//     24 hours of the person's last message, tracked per wa_id in memory
//     (a restart forgets it, and an unknown window is tried and left to the
//     API to refuse); outside it the configured template is sent instead,
//     or the send fails permanently saying a template is needed.
//
// Deliveries are answered 200 once the relay has taken their messages,
// or after a few seconds at the latest (Meta retries slow answers, and the
// relay deduplicates by message id); messages older than Meta's seven days
// of redelivery are dropped as replays. Templates sent outside the window
// are billed by Meta.
//
// Not supported: editing (the Cloud API cannot edit a sent message, so
// nothing streams and a decided prompt keeps its buttons; a late press is
// answered by the relay as already decided), stickers, locations and
// contacts (they arrive as a placeholder line), groups,
// and idempotent sends: the Cloud API takes no idempotency key and its
// history cannot be searched, so a send cut off between Meta's acceptance
// and the relay's record of it is sent again (a possible duplicate rather
// than a lost reply). Delivery failures Meta reports later by status
// webhook are logged, and a closed window they reveal is remembered.
package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Config is what the adapter needs, secrets already read.
type Config struct {
	// Name is the channel's configured name ("whatsapp").
	Name string
	// APIURL is the Graph API root (https://graph.facebook.com) and
	// APIVersion the version in every path (v23.0).
	APIURL     string
	APIVersion string
	// PhoneNumberID is the business number's id: messages go out from it,
	// and deliveries for other numbers are ignored.
	PhoneNumberID string
	// Token is the access token (Authorization: Bearer).
	Token string
	// AppSecret keys the webhook signatures.
	AppSecret string
	// VerifyToken answers the webhook subscription handshake.
	VerifyToken string
	// TemplateName and TemplateLanguage name the template sent outside
	// the 24-hour window; TemplateBodyParam fills its {{1}} with the text.
	TemplateName      string
	TemplateLanguage  string
	TemplateBodyParam bool
	// MaxVoiceBytes refuses larger voice notes (default 16 MB).
	MaxVoiceBytes int64
	// WebhookPath is where the routes are served (default
	// /channels/<name>/webhook).
	WebhookPath string
	// AckWait is how long a delivery waits for the relay before it is
	// answered 200 anyway (default 5s; Meta retries slow answers).
	AckWait time.Duration
	// Now is the clock (tests); nil uses time.Now.
	Now func() time.Time
}

// Adapter is the WhatsApp channel.
type Adapter struct {
	cfg Config
	api *api
	log *slog.Logger

	// mu guards recv, the Receive call in progress: its context and
	// handler serve the webhook's deliveries. inflight counts deliveries
	// being handled, which Receive waits for before it returns.
	mu       sync.Mutex
	recv     *receiver
	draining bool // a Receive that ended is waiting for inflight
	inflight sync.WaitGroup
	// handleMu makes deliveries reach the handler one at a time, in the
	// order they arrived.
	handleMu sync.Mutex

	peers   *peers
	parts   parts
	prompts prompts
}

type receiver struct {
	ctx context.Context
	h   channels.Handler
}

var (
	_ channels.Platform    = (*Adapter)(nil)
	_ channels.Router      = (*Adapter)(nil)
	_ channels.VoiceSender = (*Adapter)(nil)
	_ channels.Checker     = (*Adapter)(nil)
)

// New checks cfg and returns an adapter using client (nil: a client with
// a 30-second timeout) for the API.
func New(cfg Config, client *http.Client, log *slog.Logger) (*Adapter, error) {
	if cfg.Name == "" {
		cfg.Name = "whatsapp"
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://graph.facebook.com"
	}
	if cfg.APIVersion == "" {
		cfg.APIVersion = "v23.0"
	}
	if cfg.MaxVoiceBytes <= 0 {
		cfg.MaxVoiceBytes = 16 << 20
	}
	if cfg.WebhookPath == "" {
		cfg.WebhookPath = "/channels/" + cfg.Name + "/webhook"
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TemplateName != "" && cfg.TemplateLanguage == "" {
		cfg.TemplateLanguage = "en_US"
	}
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"phone number id", cfg.PhoneNumberID}, {"access token", cfg.Token}, {"app secret", cfg.AppSecret}, {"verify token", cfg.VerifyToken},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("whatsapp: %s not configured", strings.Join(missing, ", "))
	}
	origin, err := url.Parse(cfg.APIURL)
	if err != nil || (origin.Scheme != "https" && origin.Scheme != "http") || origin.Host == "" {
		return nil, fmt.Errorf("whatsapp: the API URL %q is not an http(s) URL", cfg.APIURL)
	}
	if !strings.HasPrefix(cfg.WebhookPath, "/") {
		return nil, fmt.Errorf("whatsapp: the webhook path %q does not start with /", cfg.WebhookPath)
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Adapter{
		cfg: cfg,
		api: &api{
			base:    strings.TrimSuffix(cfg.APIURL, "/") + "/" + cfg.APIVersion,
			origin:  &url.URL{Scheme: origin.Scheme, Host: origin.Host},
			token:   cfg.Token,
			phoneID: cfg.PhoneNumberID,
			http:    client,
		},
		log:   log.With("channel", cfg.Name),
		peers: newPeers(),
	}, nil
}

// Name is the configured channel name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Kind is "whatsapp".
func (a *Adapter) Kind() string { return "whatsapp" }

// Limits: reply buttons and reactions, no edits, no idempotency key.
func (a *Adapter) Limits() channels.Limits {
	return channels.Limits{MaxText: splitAt, Buttons: true, Reactions: true}
}

// Receive serves the webhook's deliveries to h until ctx ends; the Cloud
// API only pushes, so there is nothing to poll. It returns once the
// deliveries being handled are done.
func (a *Adapter) Receive(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("whatsapp: Receive needs a handler")
	}
	a.mu.Lock()
	if a.recv != nil || a.draining {
		a.mu.Unlock()
		return errors.New("whatsapp: already receiving")
	}
	a.recv = &receiver{ctx: ctx, h: h}
	a.mu.Unlock()
	<-ctx.Done()
	// No delivery joins inflight once recv is nil; a new Receive waits
	// until this one's deliveries are done (a WaitGroup is not reused
	// while it is being waited on).
	a.mu.Lock()
	a.recv, a.draining = nil, true
	a.mu.Unlock()
	a.inflight.Wait()
	a.mu.Lock()
	a.draining = false
	a.mu.Unlock()
	return nil
}

// Routes are the webhook's handshake and deliveries, served publicly.
func (a *Adapter) Routes() []channels.Route {
	return []channels.Route{
		{Pattern: "GET " + a.cfg.WebhookPath, Handler: http.HandlerFunc(a.serveVerify)},
		{Pattern: "POST " + a.cfg.WebhookPath, Handler: http.HandlerFunc(a.serveDelivery)},
	}
}

// Check is the connection test: GET /{phone-number-id} proves the access
// token and the phone number id together and returns the number people
// write to, without sending. The app secret and verify token are proven
// only by Meta's own webhook calls, which the check cannot make. Errors
// name the setting to fix; the token travels in a header and is never in
// one.
func (a *Adapter) Check(ctx context.Context) (string, error) {
	info, err := a.api.phoneNumber(ctx)
	if err != nil {
		return "", fmt.Errorf("%w%s", err, checkHint(err))
	}
	who := info.Display
	if info.VerifiedName != "" {
		who += " (" + info.VerifiedName + ")"
	}
	return who, nil
}

// checkHint names the setting behind a failed check.
func checkHint(err error) string {
	var ae *APIError
	if !errors.As(err, &ae) {
		var ne net.Error
		if errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return " (check channels.whatsapp.api_url and the network)"
		}
		return ""
	}
	switch {
	case ae.Code == 190 || ae.Code == 104 || ae.Status == http.StatusUnauthorized:
		return "; check channels.whatsapp.token (a system user's token does not expire; the API Setup page's temporary one lasts a day)"
	case ae.Code == 10 || (ae.Code >= 200 && ae.Code < 300):
		return "; the token lacks a permission: give its system user whatsapp_business_messaging and whatsapp_business_management for this app (channels.whatsapp.token)"
	case ae.Code == 100 || ae.Code == 803:
		return "; check channels.whatsapp.phone_number_id (the Phone number ID under WhatsApp, API Setup; not the number itself)"
	}
	return ""
}

// Edit is not possible on WhatsApp.
func (a *Adapter) Edit(ctx context.Context, conv, ref string, m channels.Outgoing) error {
	return channels.ErrUnsupported
}
