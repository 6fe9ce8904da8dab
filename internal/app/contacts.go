package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/hestia-dev/hestia/internal/contacts"
	"github.com/hestia-dev/hestia/internal/contacts/contacttools"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Contacts is the wired contacts connector.
type Contacts struct {
	Store *contacts.Store
	Deps  contacttools.Deps
	srcs  []contacts.Source
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
	c := &Contacts{Store: st, Deps: contacttools.Deps{Store: st, Now: a.Now}}
	for _, s := range a.Config.Contacts.Sources {
		c.srcs = append(c.srcs, contacts.Source{Name: s.Name, Path: s.Path, ReadOnly: s.ReadOnly})
	}
	c.Deps.Mail = func(ctx context.Context, q string, limit int) ([]contacts.Correspondent, error) {
		cs, err := mailStore.Correspondents(ctx, q, limit)
		out := make([]contacts.Correspondent, len(cs))
		for i, m := range cs {
			out[i] = contacts.Correspondent{Address: m.Address, Name: m.Name, Sent: m.Sent, Received: m.Received, Last: m.Last}
		}
		return out, err
	}
	return c, nil
}

// SyncAll reconciles the configured address books and those imported by
// hand before.
func (c *Contacts) SyncAll(ctx context.Context) ([]contacts.SyncStats, error) {
	srcs := append([]contacts.Source(nil), c.srcs...)
	seen := map[string]bool{}
	for _, s := range srcs {
		seen[s.Name] = true
	}
	books, err := c.Store.Books(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range books {
		if !seen[b.Name] {
			srcs = append(srcs, b)
		}
	}
	var out []contacts.SyncStats
	var errs []error
	for _, s := range srcs {
		st, err := c.Store.Sync(ctx, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("address book %s: %w", s.Name, err))
			continue
		}
		out = append(out, st)
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
		mux.HandleFunc("GET /api/contacts/search", func(w http.ResponseWriter, r *http.Request) {
			res, err := c.Deps.Search(r.Context(), contacttools.SearchArgs{Query: r.URL.Query().Get("q")})
			writeContactsResult(w, res, err)
		})
		mux.HandleFunc("GET /api/contacts/resolve", func(w http.ResponseWriter, r *http.Request) {
			res, err := c.Deps.Resolve(r.Context(), contacttools.ResolveArgs{Name: r.URL.Query().Get("name")})
			writeContactsResult(w, res, err)
		})
	}
	log := a.Log.With("component", "contacts")
	a.AddWorker("contacts.reconcile", func(ctx context.Context) error {
		for {
			if _, err := c.SyncAll(ctx); err != nil && ctx.Err() == nil {
				log.Warn("contactsSync", "err", err)
			}
			t := time.NewTimer(a.Config.Calendar.ReconcileInterval.D())
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	})
	return nil
}

func writeContactsResult(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, contacts.ErrBadQuery):
		httpjson.Error(w, http.StatusBadRequest, "bad_query", err.Error())
	case err != nil:
		httpjson.Error(w, http.StatusInternalServerError, "internal", err.Error())
	default:
		httpjson.Write(w, http.StatusOK, v)
	}
}
