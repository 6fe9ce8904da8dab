package graphcal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/msgraph"
	"github.com/hestia-dev/hestia/internal/msgraph/graphmirror"
)

// StateFile is the mirror's dot-file in the collection's folder.
const StateFile = ".hestia-graph.json"

// Calendar is one calendar of the mailbox.
type Calendar struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	CanEdit bool   `json:"canEdit"`
	Color   string `json:"hexColor"`
}

// Calendars lists the mailbox's calendars (GET /me/calendars).
func Calendars(ctx context.Context, c *msgraph.Client) ([]Calendar, error) {
	var out []Calendar
	err := c.List(ctx, "/me/calendars", msgraph.Prefer(0), func(items []json.RawMessage) error {
		for _, raw := range items {
			var k Calendar
			if err := json.Unmarshal(raw, &k); err != nil || k.ID == "" {
				continue // not a calendar we can name; the others still are
			}
			out = append(out, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing calendars: %w", err)
	}
	return out, nil
}

// FolderName is the mirror folder of cal among all the mailbox's
// calendars: its name made one safe path segment, with a short hash of
// its id when another calendar has the same name.
func FolderName(cal Calendar, all []Calendar) string {
	names := make([]string, len(all))
	for i, o := range all {
		names[i] = o.Name
	}
	return graphmirror.FolderName(cal.ID, cal.Name, names)
}

// Window is the span of the calendar view the mirror keeps: the calendar
// index's horizon (docs/decisions/calendar-horizon.md), from the first of
// the month a year back to the first of the month 25 months ahead, UTC.
// It moves once a month; a delta token is bound to its window, so the
// month's first pass is a full one.
func Window(now time.Time) (from, to time.Time) {
	y, m, _ := now.UTC().Date()
	first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return first.AddDate(0, -12, 0), first.AddDate(0, 25, 0)
}

// FileName is the mirror's file of an event: the name calwrite gives the
// events Hestia creates (so a write and the mirror agree), else one made
// from the Graph id.
func FileName(uid, id string) string {
	if strings.HasSuffix(uid, "@hestia") {
		var b strings.Builder
		for _, r := range uid {
			if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '@') {
				b.WriteRune(r)
			} else {
				b.WriteRune('_')
			}
		}
		return b.String() + ".ics"
	}
	sum := sha256.Sum256([]byte(id))
	return "graph-" + hex.EncodeToString(sum[:16]) + ".ics"
}

// state is what the mirror remembers of the calendar view.
type state struct {
	CalendarID string    `json:"calendar_id"`
	DeltaLink  string    `json:"delta_link,omitempty"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	// Items are the view's entries: single events, and the occurrences
	// and exceptions of series.
	Items map[string]entry `json:"items"`
	// Series are the masters of the series in the view.
	Series map[string]series `json:"series"`
	// Files maps each local file to the event it holds.
	Files map[string]fileRef `json:"files"`
}

type entry struct {
	Type          string `json:"type"`
	Master        string `json:"master,omitempty"`
	OriginalStart string `json:"original_start,omitempty"`
	ChangeKey     string `json:"change_key,omitempty"`
	// Start is an occurrence's start when the view gave no
	// originalStart: Graph's delta lists occurrences with their id,
	// series, type, start and end only, and an occurrence starts when it
	// was meant to.
	Start *DateTimeTimeZone `json:"start,omitempty"`
	// Partial marks an exception listed without its own fields, to be
	// read whole (GET /me/events/{id}) before its series is rebuilt.
	Partial bool   `json:"partial,omitempty"`
	File    string `json:"file,omitempty"`
	// Raw keeps an exception's JSON, to rebuild its series' file when
	// another member changes.
	Raw json.RawMessage `json:"raw,omitempty"`
}

type series struct {
	File string `json:"file"`
	ETag string `json:"etag,omitempty"`
}

type fileRef struct {
	ID   string `json:"id"`
	ETag string `json:"etag,omitempty"`
	// Local marks an event a write created that no pass has seen yet
	// (outside the window, or created since): its id is kept so that
	// the write can be confirmed, with no file.
	Local   bool      `json:"local,omitempty"`
	Created time.Time `json:"created,omitempty"`
}

func newState(calID string, from, to time.Time) *state {
	return &state{CalendarID: calID, From: from, To: to, Items: map[string]entry{}, Series: map[string]series{}, Files: map[string]fileRef{}}
}

// Collection mirrors one Graph calendar into a vdir folder and writes to
// it (calwrite.Backend). Its methods are serialized.
type Collection struct {
	Client   *msgraph.Client
	Calendar Calendar
	Dir      string
	// Floating is the zone writes read floating times in (the user's).
	Floating *time.Location
	Now      func() time.Time
	Log      *slog.Logger
	// PageSize is the page size asked for (Graph's default when 0).
	PageSize int

	mu sync.Mutex // serializes passes and writes (they share the state file)
}

func (c *Collection) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

func (c *Collection) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

func (c *Collection) floating() *time.Location {
	if c.Floating == nil {
		return time.UTC
	}
	return c.Floating
}

func (c *Collection) load() *state {
	from, to := Window(c.now())
	st := newState(c.Calendar.ID, from, to)
	b, err := os.ReadFile(filepath.Join(c.Dir, StateFile))
	if err != nil {
		return st
	}
	var got state
	if json.Unmarshal(b, &got) != nil || got.CalendarID != c.Calendar.ID {
		return st // unreadable or another calendar's: start over
	}
	if got.Items == nil {
		got.Items = map[string]entry{}
	}
	if got.Series == nil {
		got.Series = map[string]series{}
	}
	if got.Files == nil {
		got.Files = map[string]fileRef{}
	}
	return &got
}

func (c *Collection) save(st *state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(c.Dir, StateFile), b, 0o600)
}

// Modes of a pass.
const (
	ModeFull        = graphmirror.ModeFull
	ModeIncremental = graphmirror.ModeIncremental
)

// Stats reports one pass.
type Stats = graphmirror.Stats

func (c *Collection) deltaStart(from, to time.Time) string {
	return "/me/calendars/" + msgraph.Quote(c.Calendar.ID) + "/calendarView/delta?startDateTime=" +
		from.UTC().Format(time.RFC3339) + "&endDateTime=" + to.UTC().Format(time.RFC3339)
}

// pass is one round's bookkeeping.
type pass struct {
	c      *Collection
	next   *state
	st     *Stats
	writes map[string][]byte // file → content decided during the round
	dirty  map[string]bool   // series whose file must be rebuilt
}

// Sync brings the folder up to date: the changes since the last round
// (Graph's calendar view delta, paged), or everything when there is no
// round to continue, the window moved or the token expired (410 Gone).
// Files are written only after a whole round was read, so a pass that
// fails leaves the folder and the state as they were and the next pass
// replays the same changes. A malformed entry is skipped and named; the
// rest is kept.
func (c *Collection) Sync(ctx context.Context) (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return Stats{}, err
	}
	prev := c.load()
	from, to := Window(c.now())
	var (
		st Stats
		p  *pass
	)
	err := graphmirror.Round(&st, prev.DeltaLink == "" || !prev.From.Equal(from) || !prev.To.Equal(to), func(full bool) (err error) {
		p, err = c.round(ctx, prev, full, from, to, &st)
		return err
	})
	if st.Resynced {
		c.log().Info("graphDeltaExpired", "calendar", c.Calendar.Name)
	}
	if err != nil {
		return st, fmt.Errorf("graph calendar %s: %w", c.Calendar.Name, err)
	}
	if err := p.materialize(ctx, prev, st.Mode == ModeFull); err != nil {
		return st, fmt.Errorf("graph calendar %s: %w", c.Calendar.Name, err)
	}
	return st, nil
}

func (c *Collection) round(ctx context.Context, prev *state, full bool, from, to time.Time, st *Stats) (*pass, error) {
	next := newState(c.Calendar.ID, from, to)
	start := c.deltaStart(from, to)
	if !full {
		next = cloneState(prev)
		start = prev.DeltaLink
	}
	p := &pass{c: c, next: next, st: st, writes: map[string][]byte{}, dirty: map[string]bool{}}
	link, err := c.Client.Delta(ctx, start, msgraph.Prefer(c.PageSize), p.apply)
	if err != nil {
		return nil, err
	}
	next.DeltaLink = link
	return p, nil
}

func cloneState(s *state) *state {
	n := newState(s.CalendarID, s.From, s.To)
	n.DeltaLink = s.DeltaLink
	for k, v := range s.Items {
		n.Items[k] = v
	}
	for k, v := range s.Series {
		n.Series[k] = v
	}
	for k, v := range s.Files {
		n.Files[k] = v
	}
	return n
}

// apply takes one page of the round into the next state.
func (p *pass) apply(items []msgraph.Item) error {
	for _, it := range items {
		if it.ID == "" {
			p.st.Skipped++
			p.st.Warn("an entry without an id was skipped")
			continue
		}
		if it.Removed {
			e, ok := p.next.Items[it.ID]
			if !ok {
				continue
			}
			delete(p.next.Items, it.ID)
			if e.Master != "" {
				p.dirty[e.Master] = true
			}
			p.st.Removed++
			continue
		}
		var ev Event
		if err := json.Unmarshal(it.Raw, &ev); err != nil {
			// The entry is left as it was (absent, or its last good
			// version); the rest of the round is taken.
			p.st.Skipped++
			p.st.Warn("event %s skipped: malformed JSON: %v", shortID(it.ID), err)
			continue
		}
		old, had := p.next.Items[it.ID]
		switch ev.Type {
		case "occurrence", "exception":
			if ev.SeriesMasterID == "" {
				p.st.Skipped++
				p.st.Warn("%s %s skipped: no seriesMasterId", ev.Type, shortID(it.ID))
				continue
			}
			e := entry{Type: ev.Type, Master: ev.SeriesMasterID, OriginalStart: ev.OriginalStart, ChangeKey: ev.ChangeKey}
			if e.OriginalStart == "" && ev.Type == "occurrence" {
				e.Start = ev.Start
			}
			if _, ok := memberKey(e, false, time.UTC); !ok && ev.Type == "occurrence" {
				p.st.Skipped++
				p.st.Warn("%s %s skipped: neither originalStart nor start can be read", ev.Type, shortID(it.ID))
				continue
			}
			if ev.Type == "exception" {
				var probe struct {
					Subject *string `json:"subject"`
				}
				json.Unmarshal(it.Raw, &probe)
				e.Raw, e.Partial = it.Raw, probe.Subject == nil || e.OriginalStart == ""
			}
			if had && old.Master != "" && old.Master != e.Master {
				p.dirty[old.Master] = true
			}
			p.next.Items[it.ID] = e
			p.dirty[e.Master] = true
		case "seriesMaster":
			// The calendar view lists instances, not masters; a master
			// that comes anyway just marks its series for a rebuild.
			p.dirty[it.ID] = true
			continue
		default:
			data, warns, err := Object(&ev, nil, nil)
			for _, w := range warns {
				p.st.Warn("event %s: %s", shortID(it.ID), w)
			}
			if err != nil {
				p.st.Skipped++
				p.st.Warn("event %s skipped: %v", shortID(it.ID), err)
				continue
			}
			name := FileName(UID(&ev), ev.ID)
			p.next.Items[it.ID] = entry{Type: "singleInstance", File: name, ChangeKey: ev.ChangeKey}
			p.writes[name] = data
		}
		p.st.Changed++
	}
	return nil
}

func shortID(id string) string {
	if len(id) > 24 {
		return id[:12] + "…" + id[len(id)-8:]
	}
	return id
}

// materialize rebuilds the series that changed, writes and removes files
// and saves the state.
func (p *pass) materialize(ctx context.Context, prev *state, full bool) error {
	c, next := p.c, p.next
	members := map[string][]string{} // master → member ids
	for id, e := range next.Items {
		if e.Master != "" {
			members[e.Master] = append(members[e.Master], id)
		}
	}
	if full {
		for m := range members {
			p.dirty[m] = true
		}
	}
	var masters []string
	for m := range p.dirty {
		masters = append(masters, m)
	}
	sort.Strings(masters)
	for _, id := range masters {
		ms, err := c.complete(ctx, next, members[id])
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			delete(next.Series, id) // deleted, or out of the window
			continue
		}
		master, err := c.fetchEvent(ctx, id)
		if errors.Is(err, msgraph.ErrNotFound) {
			p.st.Warn("series %s: its master is gone", shortID(id))
			delete(next.Series, id)
			for k, e := range next.Items {
				if e.Master == id {
					delete(next.Items, k)
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		data, warns, err := c.seriesObject(master, ms)
		for _, w := range warns {
			p.st.Warn("series %s: %s", shortID(id), w)
		}
		if err != nil {
			p.st.Skipped++
			p.st.Warn("series %s skipped: %v", shortID(id), err)
			delete(next.Series, id)
			continue
		}
		name := FileName(UID(master), id)
		next.Series[id] = series{File: name, ETag: master.ETag}
		p.writes[name] = data
	}
	files := map[string]fileRef{}
	for id, e := range next.Items {
		if e.Type == "singleInstance" {
			files[e.File] = fileRef{ID: id, ETag: e.ChangeKey}
		}
	}
	for id, s := range next.Series {
		files[s.File] = fileRef{ID: id, ETag: s.ETag}
	}
	// Events created here that no pass has seen yet stay known (a month
	// at most), so their writes can still be confirmed.
	for name, r := range prev.Files {
		if _, ok := files[name]; !ok && r.Local && c.now().Sub(r.Created) < 30*24*time.Hour {
			files[name] = r
		}
	}
	for name, data := range p.writes {
		if _, ok := files[name]; !ok {
			continue // replaced later in the same round
		}
		if err := p.st.Write(c.Dir, name, data); err != nil {
			return err
		}
	}
	// Files no longer held go; a full round also clears files the state
	// never knew (a crash between writing and saving).
	stale := map[string]bool{}
	for name := range prev.Files {
		stale[name] = true
	}
	if full {
		for _, name := range graphmirror.Files(c.Dir, ".ics") {
			stale[name] = true
		}
	}
	for name := range stale {
		if r, ok := files[name]; ok && !r.Local {
			continue
		}
		p.st.Remove(c.Dir, name)
	}
	next.Files = files
	p.st.Files = 0
	for _, r := range files {
		if !r.Local {
			p.st.Files++
		}
	}
	return c.save(next)
}

// complete returns the members of a series, reading whole the exceptions
// the view listed without their fields (and dropping those gone since).
func (c *Collection) complete(ctx context.Context, next *state, ids []string) ([]entry, error) {
	sort.Strings(ids)
	var out []entry
	for _, id := range ids {
		e := next.Items[id]
		if e.Partial {
			x, err := c.fetchEvent(ctx, id)
			if errors.Is(err, msgraph.ErrNotFound) {
				delete(next.Items, id)
				continue
			}
			if err != nil {
				return nil, err
			}
			raw, err := json.Marshal(x)
			if err != nil {
				return nil, err
			}
			e.Raw, e.OriginalStart, e.Partial = raw, x.OriginalStart, false
			next.Items[id] = e
		}
		out = append(out, e)
	}
	return out, nil
}

// memberKey is the key of the occurrence a member of a series stands for:
// its original start (a date for an all-day series, read in the
// series' zone; the start's own date when only the start is known).
func memberKey(e entry, allDay bool, zone *time.Location) (string, bool) {
	if e.OriginalStart != "" {
		t, err := parseOffset(e.OriginalStart)
		if err != nil {
			return "", false
		}
		return occurrenceKey(t, allDay, zone), true
	}
	if e.Start == nil {
		return "", false
	}
	if allDay {
		d, err := civilDate(e.Start)
		if err != nil {
			return "", false
		}
		return d.Format("2006-01-02"), true
	}
	t, err := instant(e.Start)
	if err != nil {
		return "", false
	}
	return occurrenceKey(t, false, zone), true
}

// fetchEvent reads one event (GET /me/events/{id}).
func (c *Collection) fetchEvent(ctx context.Context, id string) (*Event, error) {
	var ev Event
	if _, err := c.Client.GetJSON(ctx, "/me/events/"+msgraph.Quote(id), msgraph.Prefer(0), &ev); err != nil {
		return nil, err
	}
	if ev.ID == "" {
		ev.ID = id
	}
	return &ev, nil
}

// seriesObject builds a series' file from its master and the members the
// view holds: exceptions become overrides, and the occurrences the
// pattern has in the window but the view lacks were cancelled.
func (c *Collection) seriesObject(master *Event, members []entry) ([]byte, []string, error) {
	var exceptions []*Event
	var warnings []string
	present := map[string]bool{}
	zone, _ := eventZone(master)
	for _, e := range members {
		key, ok := memberKey(e, master.IsAllDay, zone)
		if !ok {
			continue
		}
		present[key] = true
		if e.Type != "exception" {
			continue
		}
		var x Event
		if err := json.Unmarshal(e.Raw, &x); err != nil {
			warnings = append(warnings, "an exception with malformed JSON was left out")
			continue
		}
		exceptions = append(exceptions, &x)
	}
	cancelled, err := c.cancelled(master, present)
	if err != nil {
		return nil, warnings, err
	}
	data, w, err := Object(master, exceptions, cancelled)
	return data, append(warnings, w...), err
}

func occurrenceKey(t time.Time, allDay bool, zone *time.Location) string {
	if allDay {
		return t.In(zone).Format("2006-01-02")
	}
	return t.UTC().Format(time.RFC3339)
}

// cancelled lists the original starts the master's pattern has inside the
// window that no member of the view holds: Graph deletes a cancelled
// occurrence rather than marking it, so its absence is the only sign.
func (c *Collection) cancelled(master *Event, present map[string]bool) ([]time.Time, error) {
	if master.Recurrence == nil {
		return nil, nil
	}
	from, to := Window(c.now())
	base, _, err := Object(master, nil, nil)
	if err != nil {
		return nil, err
	}
	evs, err := calendar.ParseICS(bytes.NewReader(base), time.UTC)
	if err != nil {
		return nil, err
	}
	zone, _ := eventZone(master)
	var out []time.Time
	for _, e := range evs {
		if !e.RecurrenceID.IsZero() || !e.Recurring() {
			continue
		}
		s := calendar.Series{Start: e.Start, Duration: e.End.Sub(e.Start), AllDay: e.AllDay, Rule: e.RRule}
		occ, _, err := s.Expand(from, to, 20000)
		if err != nil {
			return nil, err
		}
		for _, o := range occ {
			if o.Start.Before(from) {
				continue
			}
			var key string
			if e.AllDay {
				key = o.Start.Format("2006-01-02")
			} else {
				key = occurrenceKey(o.Start, false, zone)
			}
			if present[key] {
				continue
			}
			if e.AllDay {
				// A date: anchored in the series' zone, so that it is
				// written back as the same date.
				y, m, d := o.Start.Date()
				out = append(out, time.Date(y, m, d, 0, 0, 0, 0, zone))
				continue
			}
			out = append(out, o.Start)
		}
	}
	return out, nil
}
