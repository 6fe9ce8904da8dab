package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/contacts"
	"github.com/hestia-dev/hestia/internal/contacts/cardsync"
	"github.com/hestia-dev/hestia/internal/contacts/contacttools"
	"github.com/hestia-dev/hestia/internal/davmirror"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Contacts is the wired contacts connector.
type Contacts struct {
	Store *contacts.Store
	Deps  contacttools.Deps
	srcs  []contacts.Source
	dav   []config.DAVAccount
	// recent lists the mail mirror's correspondents for the stored
	// "seen in mail" people.
	recent func(ctx context.Context) ([]contacts.Correspondent, error)
	// davRoot holds the CardDAV mirrors (DATA/contacts/carddav).
	davRoot string
	getenv  func(string) string
	tokens  tokenSource   // for auth = "oauth2" (accountauth.go)
	graph   *graphMirrors // [[contacts.graph]] mirrors (graph.go)
}

// OpenContacts opens the contacts index, and the mail mirror (a second,
// lexical-only handle) for the correspondents recipient resolution weighs.
func (a *App) OpenContacts(ctx context.Context) (*Contacts, error) {
	st, err := contacts.Open(ctx, a.Paths.DB(contacts.Schema.Name), a.Log.With("component", "contacts"))
	if err != nil {
		return nil, err
	}
	a.OnClose(st.Close)
	mailStore, err := mail.Open(ctx, mail.Options{DBPath: a.Paths.DB(mail.Schema.Name), BlobDir: filepath.Join(a.Paths.Data, "mail", "blobs"),
		Logger: a.Log.With("component", "mail"), Now: a.Now})
	if err != nil {
		return nil, err
	}
	a.OnClose(mailStore.Close)
	c := &Contacts{Store: st, Deps: contacttools.Deps{Store: st, Now: a.Now},
		dav: a.Config.Contacts.CardDAV, davRoot: filepath.Join(a.Paths.Data, "contacts", "carddav"), getenv: a.env(), tokens: a.accountTokens}
	for _, s := range a.Config.Contacts.Sources {
		c.srcs = append(c.srcs, contacts.Source{Name: s.Name, Path: s.Path, ReadOnly: s.ReadOnly})
	}
	c.graph = a.newGraphMirrors("contacts", a.Config.Contacts.Graph)
	c.recent = func(ctx context.Context) ([]contacts.Correspondent, error) {
		cs, err := mailStore.RecentCorrespondents(ctx, seenScan, contacts.MaxCorrespondents)
		return toContacts(cs), err
	}
	c.Deps.Mail = func(ctx context.Context, q string, limit int) ([]contacts.Correspondent, error) {
		cs, err := mailStore.Correspondents(ctx, q, limit)
		return toContacts(cs), err
	}
	return c, nil
}

// seenScan is how many of the newest messages the "seen in mail" people
// are counted from.
const seenScan = 20000

func toContacts(cs []mail.Correspondent) []contacts.Correspondent {
	out := make([]contacts.Correspondent, len(cs))
	for i, m := range cs {
		out[i] = contacts.Correspondent{Address: m.Address, Name: m.Name, Sent: m.Sent, Received: m.Received, Last: m.Last}
	}
	return out
}

// MirrorDAV brings every CardDAV address book's mirror folder
// (DATA/contacts/carddav/<account>/<book>) up to date.
func (c *Contacts) MirrorDAV(ctx context.Context) (map[string]davmirror.Stats, error) {
	done := map[string]davmirror.Stats{} // source name → pass
	var errs []error
	for _, acc := range c.dav {
		a := davmirror.Account{Name: acc.Name, URL: acc.URL, Username: acc.Username, HTTP: &http.Client{Timeout: 60 * time.Second}}
		if acc.UsesOAuth() {
			src, err := c.tokens(acc.OAuthAccount, oauth.Contacts)
			if err != nil {
				errs = append(errs, fmt.Errorf("carddav %s: %w", acc.Name, err))
				continue
			}
			a.Bearer = src
		} else if acc.Username != "" {
			pw, err := Password(config.MailAccount{Name: acc.Name, PasswordEnv: acc.PasswordEnv, PasswordFile: acc.PasswordFile}, c.getenv)
			if err != nil {
				errs = append(errs, fmt.Errorf("carddav: %w", err))
				continue
			}
			a.Password = pw
		}
		books, err := cardsync.Discover(ctx, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, b := range books {
			st, err := cardsync.Mirror(ctx, a, b, filepath.Join(c.davRoot, acc.Name, cardsync.FolderName(b)))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			done[acc.Name+"/"+cardsync.FolderName(b)] = st
		}
	}
	return done, errors.Join(errs...)
}

// mirrorSummary says in words what a mirror pass did.
func mirrorSummary(st davmirror.Stats) string {
	if st.Mode == davmirror.ModeUnchanged {
		return "unchanged"
	}
	return fmt.Sprintf("%s: %d fetched, %d removed", st.Mode, st.Fetched, st.Removed)
}

// sources lists the configured address books, the CardDAV mirrors, and
// books imported by hand before (`hestia contacts import`).
func (c *Contacts) sources(ctx context.Context) ([]contacts.Source, error) {
	srcs := append([]contacts.Source(nil), c.srcs...)
	seen := map[string]bool{}
	for _, s := range srcs {
		seen[s.Name] = true
	}
	for _, acc := range c.dav {
		ents, err := os.ReadDir(filepath.Join(c.davRoot, acc.Name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() {
				name := acc.Name + "/" + e.Name()
				seen[name] = true
				// Read-only: no tool writes contacts, and the mirror
				// would overwrite a local change.
				srcs = append(srcs, contacts.Source{Name: name, Path: filepath.Join(c.davRoot, acc.Name, e.Name()), ReadOnly: true})
			}
		}
	}
	gs, err := c.graph.contactSources(seen) // graph.go
	if err != nil {
		return nil, err
	}
	srcs = append(srcs, gs...)
	books, err := c.Store.Books(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range books {
		// A mirror of an account no longer configured is not re-read.
		if !seen[b.Name] && !strings.HasPrefix(b.Path, c.davRoot+string(filepath.Separator)) && !c.graph.owns(b.Path) {
			srcs = append(srcs, b)
		}
	}
	return srcs, nil
}

// SyncAll mirrors the CardDAV accounts, then reconciles every address
// book; a failing book or account does not stop the others.
func (c *Contacts) SyncAll(ctx context.Context) ([]contacts.SyncStats, error) {
	mirrored, merr := c.MirrorDAV(ctx)
	gmirrored, gerr := c.graph.mirrorContacts(ctx) // graph.go
	errs := []error{merr, gerr}
	srcs, err := c.sources(ctx)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	var out []contacts.SyncStats
	for _, s := range srcs {
		st, err := c.Store.Sync(ctx, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("address book %s: %w", s.Name, err))
			continue
		}
		if m, ok := mirrored[s.Name]; ok {
			st.Mirror = mirrorSummary(m)
		}
		if m, ok := gmirrored[s.Name]; ok {
			st.Mirror = m
		}
		out = append(out, st)
	}
	// People seen in mail, copied into contacts.db for contacts_search.
	if cs, err := c.recent(ctx); err != nil {
		errs = append(errs, fmt.Errorf("reading mail correspondents: %w", err))
	} else if _, err := c.Store.RefreshCorrespondents(ctx, cs); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// registerContacts wires contacts into the daemon: tools, routes and the
// reconcile worker (on the calendar's interval).
func (a *App) registerContacts(ctx context.Context, reg *tools.Registry) error {
	c, err := a.OpenContacts(ctx)
	if err != nil {
		return err
	}
	for _, t := range contacttools.Tools(c.Deps) {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	if a.Server != nil {
		mux := a.Server.API()
		mux.HandleFunc("GET /api/contacts", func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			offset, _ := strconv.Atoi(q.Get("offset"))
			people, next, err := c.Store.List(r.Context(), offset, 0)
			if people == nil {
				people = []contacts.Person{}
			}
			writeContactsResult(w, r, map[string]any{"people": people, "next": next}, err)
		})
		mux.HandleFunc("GET /api/contacts/search", func(w http.ResponseWriter, r *http.Request) {
			res, err := c.Deps.Search(r.Context(), contacttools.SearchArgs{Query: r.URL.Query().Get("q")})
			writeContactsResult(w, r, res, err)
		})
		mux.HandleFunc("GET /api/contacts/resolve", func(w http.ResponseWriter, r *http.Request) {
			res, err := c.Deps.Resolve(r.Context(), contacttools.ResolveArgs{Name: r.URL.Query().Get("name")})
			writeContactsResult(w, r, res, err)
		})
	}
	log := a.Log.With("component", "contacts")
	var last struct {
		mu    sync.Mutex // guards the fields below
		err   error
		stats []contacts.SyncStats
		at    time.Time
	}
	a.AddWorker("contacts.reconcile", func(ctx context.Context) error {
		for {
			stats, err := c.SyncAll(ctx)
			if err != nil && ctx.Err() == nil {
				log.Warn("contactsSync", "err", err)
			}
			last.mu.Lock()
			last.err, last.stats, last.at = err, stats, a.Now()
			last.mu.Unlock()
			t := time.NewTimer(a.Config.Calendar.ReconcileInterval.D())
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	})
	a.AddCheck(doctor.Check{Name: "contacts.sources", Run: func(ctx context.Context) (doctor.Status, string) {
		last.mu.Lock()
		err, stats, at := last.err, last.stats, last.at
		last.mu.Unlock()
		if at.IsZero() {
			return doctor.OK, "first sync pending"
		}
		if err != nil {
			return doctor.Warn, err.Error()
		}
		skipped, kept := 0, 0
		for _, s := range stats {
			skipped += len(s.Skipped)
			kept += s.Kept
		}
		return doctor.OK, fmt.Sprintf("%d address books synced at %s, %d files skipped (%d cards kept from earlier versions)", len(stats), at.Format(time.RFC3339), skipped, kept)
	}})
	return nil
}

func writeContactsResult(w http.ResponseWriter, r *http.Request, v any, err error) {
	if errors.Is(err, contacts.ErrBadQuery) {
		err = httpjson.Invalid(err)
	}
	httpjson.Respond(w, r, http.StatusOK, v, err)
}
