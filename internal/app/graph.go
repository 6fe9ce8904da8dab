package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/calendar/graphcal"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/contacts"
	"github.com/hestia-dev/hestia/internal/contacts/graphcards"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/msgraph"
	"github.com/hestia-dev/hestia/internal/oauth"
)

// Microsoft 365 through Microsoft Graph: [[calendar.graph]] calendars are
// mirrored into DATA/calendar/graph/<account>/<calendar> (package
// graphcal, whose Collection is also calwrite's backend there) and
// [[contacts.graph]] contact folders into DATA/contacts/graph/<account>/
// <folder> (graphcards); both are then indexed like any vdir. Requests
// carry the named [[oauth.accounts]] entry's token through
// oauth.Transport. Each account's last pass is kept in a status file
// beside its mirrors, which the graph.NAME doctor check reads, with or
// without a daemon.

// graphStatusFile is an account's last pass, in its mirror folder.
const graphStatusFile = ".hestia-graph-status.json"

// graphStatus is what the doctor says about an account's mirror.
type graphStatus struct {
	At        time.Time `json:"at"`
	Items     int       `json:"items"`
	Error     string    `json:"error,omitempty"`
	Reconnect bool      `json:"reconnect,omitempty"`
	Warnings  []string  `json:"warnings,omitempty"`
}

// graphMirrors is one domain's (calendar or contacts) Graph accounts.
type graphMirrors struct {
	root   string // DATA/<domain>/graph
	accts  []config.GraphAccount
	tokens tokenSource
	now    func() time.Time
	// client builds an account's Graph client; tests replace it.
	client func(acct config.GraphAccount, p oauth.Purpose) (*msgraph.Client, error)

	mu sync.Mutex // guards cals and books
	// cals and books are the collections mirrored in this process, by
	// folder: kept so that a write and a pass share one collection (and
	// its lock).
	cals  map[string]*graphcal.Collection
	books map[string]*graphcards.Collection
}

func (a *App) newGraphMirrors(domain string, accts []config.GraphAccount) *graphMirrors {
	g := &graphMirrors{root: filepath.Join(a.Paths.Data, domain, "graph"), accts: accts, tokens: a.accountTokens, now: a.Now,
		cals: map[string]*graphcal.Collection{}, books: map[string]*graphcards.Collection{}}
	log := a.Log.With("component", "graph")
	g.client = func(acct config.GraphAccount, p oauth.Purpose) (*msgraph.Client, error) {
		src, err := g.tokens(acct.OAuthAccount, p)
		if err != nil {
			return nil, err
		}
		return &msgraph.Client{BaseURL: acct.BaseURL, Log: log,
			HTTP: &http.Client{Timeout: 2 * time.Minute, Transport: &oauth.Transport{Source: src}}}, nil
	}
	return g
}

func (g *graphMirrors) dir(acct string) string { return filepath.Join(g.root, acct) }

// owns reports whether path is inside one of the mirrors (a configured
// account's or a removed one's).
func (g *graphMirrors) owns(path string) bool {
	return strings.HasPrefix(path, g.root+string(filepath.Separator))
}

// wanted filters a listing by the account's only.
func wanted(acct config.GraphAccount, name string) bool {
	return len(acct.Only) == 0 || slices.ContainsFunc(acct.Only, func(n string) bool { return strings.EqualFold(strings.TrimSpace(n), name) })
}

// pruneFolders empties the mirror folders of an account that the listing
// no longer has (a calendar deleted, renamed or left out by only): the
// next index pass then drops their events. The empty folder stays, since
// the index has no way to forget a collection.
func pruneFolders(dir string, keep map[string]bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || keep[e.Name()] {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(dir, e.Name()))
		for _, f := range files {
			if !f.IsDir() {
				os.Remove(filepath.Join(dir, e.Name(), f.Name()))
			}
		}
	}
}

func (g *graphMirrors) saveStatus(acct string, st graphStatus) {
	if err := os.MkdirAll(g.dir(acct), 0o700); err != nil {
		return
	}
	b, _ := json.Marshal(st)
	atomicfile.Write(filepath.Join(g.dir(acct), graphStatusFile), b, 0o600)
}

// explain turns Graph's 401 into what the user can act on: when the
// account's grant is dead (the transport's refresh after the 401 found
// it so), the reconnect error naming the command to run.
func (g *graphMirrors) explain(ctx context.Context, acct config.GraphAccount, p oauth.Purpose, err error) error {
	var gerr *msgraph.Error
	if !errors.As(err, &gerr) || gerr.Status != http.StatusUnauthorized {
		return err
	}
	src, serr := g.tokens(acct.OAuthAccount, p)
	if serr != nil {
		return err
	}
	if _, terr := src.Token(ctx); terr != nil && !oauth.Retryable(terr) {
		return fmt.Errorf("%w (Graph answered: %v)", terr, err)
	}
	return err
}

func failed(st graphStatus, at time.Time, err error) graphStatus {
	st.At, st.Error, st.Reconnect = at, err.Error(), errors.Is(err, oauth.ErrReconnect) || errors.Is(err, oauth.ErrNotConnected)
	return st
}

// mirrorAccounts runs pass over every account with a Graph client for
// purpose, keeping each account's status file: when it passed, or its
// error in words the user can act on.
func (g *graphMirrors) mirrorAccounts(ctx context.Context, p oauth.Purpose, pass func(acct config.GraphAccount, client *msgraph.Client, st *graphStatus) error) error {
	var errs []error
	for _, acct := range g.accts {
		st := graphStatus{}
		client, err := g.client(acct, p)
		if err == nil {
			err = pass(acct, client, &st)
			err = g.explain(ctx, acct, p, err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("graph %s: %w", acct.Name, err))
			g.saveStatus(acct.Name, failed(st, g.now(), err))
			continue
		}
		st.At = g.now()
		g.saveStatus(acct.Name, st)
	}
	return errors.Join(errs...)
}

// mirrorFolders calls fn with each account's mirror folders, by source
// name (account/folder) and path.
func (g *graphMirrors) mirrorFolders(fn func(acct config.GraphAccount, name, path string)) error {
	var errs []error
	for _, acct := range g.accts {
		ents, err := os.ReadDir(g.dir(acct.Name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		for _, e := range ents {
			if e.IsDir() {
				fn(acct, acct.Name+"/"+e.Name(), filepath.Join(g.dir(acct.Name), e.Name()))
			}
		}
	}
	return errors.Join(errs...)
}

// mirrorCalendars runs a pass over every [[calendar.graph]] account,
// returning each mirrored folder's pass for SyncAll to report.
func (g *graphMirrors) mirrorCalendars(ctx context.Context, floating *time.Location) (map[string]calendar.RemoteStats, error) {
	passes := map[string]calendar.RemoteStats{}
	err := g.mirrorAccounts(ctx, oauth.Calendar, func(acct config.GraphAccount, client *msgraph.Client, st *graphStatus) error {
		return g.mirrorCalendarAccount(ctx, acct, client, floating, passes, st)
	})
	return passes, err
}

func (g *graphMirrors) mirrorCalendarAccount(ctx context.Context, acct config.GraphAccount, client *msgraph.Client, floating *time.Location,
	passes map[string]calendar.RemoteStats, st *graphStatus) error {
	cals, err := graphcal.Calendars(ctx, client)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	var errs []error
	for _, cal := range cals {
		if !wanted(acct, cal.Name) {
			continue
		}
		name := graphcal.FolderName(cal, cals)
		keep[name] = true
		dir := filepath.Join(g.dir(acct.Name), name)
		g.mu.Lock()
		// A collection is kept while the calendar is the same, never
		// changed in place: a write may be using it.
		col, ok := g.cals[dir]
		if !ok || col.Calendar != cal {
			col = &graphcal.Collection{Client: client, Dir: dir, Calendar: cal, Floating: floating, Now: g.now, Log: client.Log}
			g.cals[dir] = col
		}
		g.mu.Unlock()
		ps, err := col.Sync(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st.Items += ps.Files
		st.Warnings = append(st.Warnings, ps.Warnings...)
		passes[filepath.Clean(dir)] = calendar.RemoteStats{Mode: ps.Mode, Fetched: ps.Changed, Removed: ps.Removed, Unchanged: ps.Files - ps.Written}
	}
	if len(errs) == 0 {
		pruneFolders(g.dir(acct.Name), keep)
	}
	return errors.Join(errs...)
}

// calendarSources lists the Graph mirror folders as calendar sources,
// named account/folder.
func (g *graphMirrors) calendarSources(seen map[string]bool) ([]calendar.Source, error) {
	var out []calendar.Source
	err := g.mirrorFolders(func(acct config.GraphAccount, name, path string) {
		src := calendar.Source{Name: name, Path: path, ReadOnly: acct.ReadOnly}
		g.mu.Lock()
		if col, ok := g.cals[path]; ok {
			src.ReadOnly = src.ReadOnly || !col.Calendar.CanEdit
			src.Color = col.Calendar.Color
		}
		g.mu.Unlock()
		seen[src.Name] = true
		out = append(out, src)
	})
	return out, err
}

// calendarTarget is the write target of a Graph mirror folder: writes go
// to Graph through the folder's collection, then the folder is mirrored
// and indexed again. ok is false outside the mirrors or for a folder not
// mirrored in this process yet (no collection to write through).
func (g *graphMirrors) calendarTarget(s calendar.Source, index *calendar.Store) (calwrite.Target, bool) {
	if !g.owns(s.Path) {
		return calwrite.Target{}, false
	}
	g.mu.Lock()
	col, ok := g.cals[s.Path]
	g.mu.Unlock()
	if !ok {
		return calwrite.Target{}, false
	}
	return calwrite.Target{Name: s.Name, ReadOnly: s.ReadOnly, Backend: col, Resync: func(ctx context.Context) error {
		if _, err := col.Sync(ctx); err != nil {
			return err
		}
		_, err := index.Sync(ctx, s)
		return err
	}}, true
}

// mirrorContacts runs a pass over every [[contacts.graph]] account,
// returning each mirrored book's pass in words, by source name.
func (g *graphMirrors) mirrorContacts(ctx context.Context) (map[string]string, error) {
	passes := map[string]string{}
	err := g.mirrorAccounts(ctx, oauth.Contacts, func(acct config.GraphAccount, client *msgraph.Client, st *graphStatus) error {
		return g.mirrorContactAccount(ctx, acct, client, passes, st)
	})
	return passes, err
}

func (g *graphMirrors) mirrorContactAccount(ctx context.Context, acct config.GraphAccount, client *msgraph.Client, passes map[string]string, st *graphStatus) error {
	folders, err := graphcards.Folders(ctx, client)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	var errs []error
	for _, f := range folders {
		if !wanted(acct, f.Name) {
			continue
		}
		name := graphcards.FolderName(f, folders)
		keep[name] = true
		dir := filepath.Join(g.dir(acct.Name), name)
		g.mu.Lock()
		col, ok := g.books[dir]
		if !ok || col.Folder != f {
			col = &graphcards.Collection{Client: client, Dir: dir, Folder: f, Log: client.Log}
			g.books[dir] = col
		}
		g.mu.Unlock()
		ps, err := col.Sync(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st.Items += ps.Files
		st.Warnings = append(st.Warnings, ps.Warnings...)
		passes[acct.Name+"/"+name] = fmt.Sprintf("%s: %d changed, %d removed", ps.Mode, ps.Changed, ps.Removed)
	}
	if len(errs) == 0 {
		pruneFolders(g.dir(acct.Name), keep)
	}
	return errors.Join(errs...)
}

// contactSources lists the Graph mirror folders as address books
// (read-only: no tool writes contacts).
func (g *graphMirrors) contactSources(seen map[string]bool) ([]contacts.Source, error) {
	var out []contacts.Source
	err := g.mirrorFolders(func(_ config.GraphAccount, name, path string) {
		seen[name] = true
		out = append(out, contacts.Source{Name: name, Path: path, ReadOnly: true})
	})
	return out, err
}

// graphChecks is one doctor check per Graph account (an account named in
// both sections is one check): when it last synced, how many items its
// mirrors hold, and the last error; a dead or missing sign-in fails and
// names the command that fixes it.
func (a *App) graphChecks() []doctor.Check {
	type part struct {
		label string
		dir   string
		acct  config.GraphAccount
	}
	byName := map[string][]part{}
	var names []string
	add := func(label, domain string, accts []config.GraphAccount) {
		for _, acct := range accts {
			if _, ok := byName[acct.Name]; !ok {
				names = append(names, acct.Name)
			}
			byName[acct.Name] = append(byName[acct.Name], part{label, filepath.Join(a.Paths.Data, domain, "graph", acct.Name), acct})
		}
	}
	add("calendar", "calendar", a.Config.Calendar.Graph)
	add("contacts", "contacts", a.Config.Contacts.Graph)
	sort.Strings(names)
	var checks []doctor.Check
	for _, name := range names {
		parts := byName[name]
		checks = append(checks, doctor.Check{Name: "graph." + name, Run: func(ctx context.Context) (doctor.Status, string) {
			oauthName := parts[0].acct.OAuthAccount
			connect := "run hestia accounts connect " + oauthName
			if m, err := a.OAuth(); err == nil {
				if st, err := m.Status(oauthName); err == nil {
					switch st.State {
					case oauth.StateNotConnected:
						return doctor.Warn, "Microsoft 365 account " + oauthName + " is not connected yet: " + connect
					case oauth.StateReconnect:
						return doctor.Fail, "Microsoft 365 account " + oauthName + " must be reconnected: " + connect
					}
				}
			}
			status, msgs := doctor.OK, []string{}
			for _, p := range parts {
				var st graphStatus
				b, err := os.ReadFile(filepath.Join(p.dir, graphStatusFile))
				if err != nil || json.Unmarshal(b, &st) != nil {
					msgs = append(msgs, p.label+": first sync pending")
					continue
				}
				switch {
				case st.Reconnect:
					status = doctor.Fail
					msgs = append(msgs, fmt.Sprintf("%s: sign-in refused at %s (%s): %s", p.label, st.At.Local().Format("2006-01-02 15:04"), st.Error, connect))
				case st.Error != "":
					if status == doctor.OK {
						status = doctor.Warn
					}
					msgs = append(msgs, fmt.Sprintf("%s: last sync failed at %s: %s", p.label, st.At.Local().Format("2006-01-02 15:04"), st.Error))
				default:
					m := fmt.Sprintf("%s: %d items, synced at %s", p.label, st.Items, st.At.Local().Format("2006-01-02 15:04"))
					if len(st.Warnings) > 0 {
						if status == doctor.OK {
							status = doctor.Warn
						}
						m += fmt.Sprintf("; %d entries skipped or approximated: %s", len(st.Warnings), strings.Join(st.Warnings[:min(3, len(st.Warnings))], "; "))
					}
					msgs = append(msgs, m)
				}
			}
			return status, strings.Join(msgs, "; ")
		}})
	}
	return checks
}
