package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/scheduler"
)

// Background model work — wiki.promote and actions.scan send mail
// threads, the memory proposer sends idle chats — runs only with the
// user's consent. Local models (llm.IsLocal) are allowed until the user
// says otherwise; a remote one needs an explicit yes, and the yes covers
// the hosts it named: switching to another remote provider asks again.

// ModelEndpoint is one configured model endpoint.
type ModelEndpoint struct {
	Provider string `json:"provider"`
	Host     string `json:"host"`
	Local    bool   `json:"local"`
}

// Consent is what the consent screen shows and the jobs check.
type Consent struct {
	// Allowed is the effective answer the background jobs obey.
	Allowed bool `json:"allowed"`
	// Decided is true once the user answered (allow or deny).
	Decided bool `json:"decided"`
	// Remote lists the non-local endpoints that would receive the data.
	Remote    []ModelEndpoint `json:"remote"`
	Endpoints []ModelEndpoint `json:"endpoints"`
	// Sends says what each job sends, for the prompt.
	Sends []string `json:"sends"`
	// Prompt is the sentence a consent screen shows.
	Prompt string `json:"prompt"`
}

// consentFile is the stored answer.
type consentFile struct {
	Allowed bool      `json:"allowed"`
	Hosts   []string  `json:"hosts"` // the remote hosts the answer covered
	At      time.Time `json:"at"`
}

var consentSends = []string{
	"wiki.promote: your mail threads, to extract durable facts into the wiki",
	"actions.scan: your new mail threads, to find what needs doing",
	"memory reviews: your idle chats, to propose memory entries",
}

func (a *App) consentPath() string { return filepath.Join(a.Paths.Data, "consent.json") }

// modelEndpoints lists the configured endpoints (the flat base_url is
// provider "default").
func (a *App) modelEndpoints() []ModelEndpoint {
	var out []ModelEndpoint
	add := func(name, base string) {
		if base == "" {
			return
		}
		host := base
		if u, err := url.Parse(base); err == nil && u.Host != "" {
			host = u.Host
		}
		out = append(out, ModelEndpoint{Provider: name, Host: host, Local: llm.IsLocal(base)})
	}
	add("default", a.Config.LLM.BaseURL)
	names := make([]string, 0, len(a.Config.LLM.Providers))
	for n := range a.Config.LLM.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, a.Config.LLM.Providers[n].BaseURL)
	}
	return out
}

// Consent reads the stored answer and applies it to the configured
// endpoints.
func (a *App) Consent() (Consent, error) {
	c := Consent{Endpoints: a.modelEndpoints(), Sends: consentSends, Remote: []ModelEndpoint{}}
	var hosts []string
	for _, e := range c.Endpoints {
		if !e.Local {
			c.Remote = append(c.Remote, e)
			hosts = append(hosts, e.Host)
		}
	}
	if len(c.Remote) == 0 {
		c.Prompt = "Background jobs send your mail and chats only to models on this machine or network."
	} else {
		c.Prompt = fmt.Sprintf("Background jobs would send your mail threads and idle chats to %s (remote). Allow it?", describeEndpoints(c.Remote))
	}
	b, err := os.ReadFile(a.consentPath())
	if errors.Is(err, fs.ErrNotExist) {
		c.Allowed = len(c.Remote) == 0
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading consent: %w", err)
	}
	var f consentFile
	if err := json.Unmarshal(b, &f); err != nil {
		return c, fmt.Errorf("reading consent %s: %w", a.consentPath(), err)
	}
	c.Decided = true
	c.Allowed = f.Allowed
	for _, h := range hosts {
		if f.Allowed && !slices.Contains(f.Hosts, h) {
			// A yes for one provider is not a yes for another.
			c.Allowed, c.Decided = false, false
		}
	}
	return c, nil
}

// SetConsent stores the user's answer for the endpoints configured now.
func (a *App) SetConsent(allowed bool) (Consent, error) {
	f := consentFile{Allowed: allowed, Hosts: []string{}, At: a.Now().UTC()}
	for _, e := range a.modelEndpoints() {
		if !e.Local {
			f.Hosts = append(f.Hosts, e.Host)
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return Consent{}, err
	}
	if err := atomicfile.Write(a.consentPath(), b, 0o600); err != nil {
		return Consent{}, fmt.Errorf("storing consent: %w", err)
	}
	return a.Consent()
}

func describeEndpoints(es []ModelEndpoint) string {
	s := ""
	for i, e := range es {
		if i > 0 {
			s += ", "
		}
		s += e.Provider + " (" + e.Host + ")"
	}
	return s
}

// errNoConsent is what gated work returns: the run is journaled skipped.
var errNoConsent = fmt.Errorf("%w: background model work is off until you allow it (Settings, or `hestia consent allow`)", scheduler.ErrSkipped)

// backgroundAllowed is checked before any background model call; the
// file is read each time so an answer given by the CLI applies at once.
func (a *App) backgroundAllowed() error {
	c, err := a.Consent()
	if err != nil {
		return err
	}
	if !c.Allowed {
		return errNoConsent
	}
	return nil
}

// consentClient refuses model calls without consent: the gate for
// background work that is a worker rather than a job (memory reviews).
type consentClient struct {
	inner llm.Client
	a     *App
}

func (c consentClient) Stream(ctx context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	if err := c.a.backgroundAllowed(); err != nil {
		return llm.Response{}, err
	}
	return c.inner.Stream(ctx, req, fn)
}

func (c consentClient) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := c.a.backgroundAllowed(); err != nil {
		return llm.Response{}, err
	}
	return c.inner.Complete(ctx, req)
}

// consentRoutes: GET /api/consent for the consent screen, PUT to answer.
func (a *App) consentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/consent", func(w http.ResponseWriter, r *http.Request) {
		c, err := a.Consent()
		httpjson.Respond(w, r, http.StatusOK, c, err)
	})
	mux.HandleFunc("PUT /api/consent", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Allowed *bool `json:"allowed"`
		}
		if err := httpjson.Decode(w, r, &b); err != nil {
			httpjson.BadRequest(w, err)
			return
		}
		if b.Allowed == nil {
			httpjson.BadRequest(w, errors.New("allowed (true or false) is required"))
			return
		}
		c, err := a.SetConsent(*b.Allowed)
		httpjson.Respond(w, r, http.StatusOK, c, err)
	})
}
