package calendar

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/search"
)

// ErrBadQuery marks query arguments that cannot be answered (an empty or
// inverted window, a window too wide).
var ErrBadQuery = errors.New("bad calendar query")

// MaxWindow bounds the span of one agenda or availability query.
const MaxWindow = 366 * 24 * time.Hour

// DefaultMaxResults caps an agenda when the caller sets no limit.
const DefaultMaxResults = 500

// Instance is one occurrence on the calendar: a single event, one expanded
// instance of a series, or an override.
type Instance struct {
	ID          int64     `json:"id"`
	Calendar    string    `json:"calendar"`
	UID         string    `json:"uid"`
	Summary     string    `json:"summary"`
	Location    string    `json:"location,omitempty"`
	Description string    `json:"description,omitempty"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	AllDay      bool      `json:"all_day,omitempty"`
	// Zone is the event's own IANA zone when it has one (not floating or
	// all-day), so a viewer elsewhere can show its local time too.
	Zone         string     `json:"zone,omitempty"`
	Recurring    bool       `json:"recurring,omitempty"`
	RecurrenceID *time.Time `json:"recurrence_id,omitempty"`
	Status       string     `json:"status,omitempty"`
	Transp       string     `json:"transp,omitempty"`
	Organizer    string     `json:"organizer,omitempty"`
	Attendees    []Attendee `json:"attendees,omitempty"`
	Rule         string     `json:"rrule,omitempty"`
	Warnings     []string   `json:"warnings,omitempty"`
}

// Busy reports whether the instance blocks time.
func (in Instance) Busy() bool {
	return !strings.EqualFold(in.Transp, "TRANSPARENT") && !strings.EqualFold(in.Status, "CANCELLED")
}

// Query selects instances in a window.
type Query struct {
	From, To  time.Time
	Calendars []string // names; empty means all
	Max       int      // DefaultMaxResults when <= 0
	// MaxPerSeries caps instances expanded from one series
	// (DefaultMaxInstances when <= 0).
	MaxPerSeries     int
	IncludeCancelled bool
	// path forces one way of answering (tests and the benchmark compare
	// them); zero picks the fastest available.
	path queryPath
}

type queryPath int

const (
	pathAuto queryPath = iota
	pathSQL            // materialized instances in SQL, no snapshot
	pathLazy           // every series expanded per query
)

// Agenda is the result of a window query.
type Agenda struct {
	From      time.Time  `json:"from"`
	To        time.Time  `json:"to"`
	Instances []Instance `json:"instances"`
	// Truncated is set when a cap cut the list (the window holds more).
	Truncated bool `json:"truncated,omitempty"`
}

// row is one events row as read for queries.
type row struct {
	id, calID               int64
	cal, uid                string
	recID                   sql.NullInt64
	summary, desc, location string
	attJSON, organizer      string
	start, end              int64
	allDay                  bool
	zone, status, transp    string
	rule, rdates, exdates   string
	recurring               bool
	warnings                string
}

const rowCols = `e.id, e.calendar_id, c.name, e.uid, e.recurrence_id, e.summary, e.description, e.location, e.attendee_json, e.organizer,
	e.start, e.end, e.all_day, e.zone, e.status, e.transp, e.rrule, e.rdates, e.exdates, e.recurring, e.warnings`

// scanRow reads the rowCols of one row, then any columns after them into
// extra.
func scanRow(rows *sql.Rows, extra ...any) (row, error) {
	var r row
	dest := append([]any{&r.id, &r.calID, &r.cal, &r.uid, &r.recID, &r.summary, &r.desc, &r.location, &r.attJSON, &r.organizer,
		&r.start, &r.end, &r.allDay, &r.zone, &r.status, &r.transp, &r.rule, &r.rdates, &r.exdates, &r.recurring, &r.warnings}, extra...)
	err := rows.Scan(dest...)
	return r, err
}

func (s *Store) loc(r *row) *time.Location {
	if r.allDay {
		return s.floating
	}
	return s.zone(r.zone)
}

func (s *Store) instance(r *row) Instance {
	loc := s.loc(r)
	in := Instance{ID: r.id, Calendar: r.cal, UID: r.uid, Summary: r.summary, Location: r.location, Description: r.desc,
		Start: time.Unix(r.start, 0).In(loc), End: time.Unix(r.end, 0).In(loc), AllDay: r.allDay, Recurring: r.recurring,
		Status: r.status, Transp: r.transp, Organizer: r.organizer, Rule: r.rule}
	if !r.allDay && r.zone != "" && r.zone != "floating" {
		in.Zone = loc.String()
	}
	if r.recID.Valid {
		t := time.Unix(r.recID.Int64, 0).In(loc)
		in.RecurrenceID = &t
		in.Recurring = true
	}
	if r.attJSON != "" && r.attJSON != "[]" && r.attJSON != "null" {
		_ = json.Unmarshal([]byte(r.attJSON), &in.Attendees)
	}
	if r.warnings != "" {
		_ = json.Unmarshal([]byte(r.warnings), &in.Warnings)
	}
	return in
}

// series rebuilds the expansion input of a master row.
func (s *Store) series(r *row) Series {
	loc := s.loc(r)
	start := time.Unix(r.start, 0).In(loc)
	return Series{Start: start, Duration: time.Duration(r.end-r.start) * time.Second, AllDay: r.allDay, Rule: r.rule,
		RDates: timeList(r.rdates, loc), ExDates: timeList(r.exdates, loc)}
}

func (s *Store) calFilter(ctx context.Context, names []string) (string, []any, error) {
	if len(names) == 0 {
		return "", nil, nil
	}
	var ids []any
	for _, n := range names {
		c, err := s.CalendarByName(ctx, n)
		if err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrBadQuery, err)
		}
		ids = append(ids, c.ID)
	}
	return " AND e.calendar_id IN (" + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + ")", ids, nil
}

// longEvent is the span above which a single event is found through the
// events_long scan rather than the start-time range.
const longEvent = 7 * 24 * 3600

type overrideKey struct {
	cal   int64
	uid   string
	recID int64
}

// Agenda returns the instances overlapping [From, To), sorted by start.
// A fresh horizon snapshot answers from memory; otherwise SQL does
// (agendaRead).
func (s *Store) Agenda(ctx context.Context, q Query) (Agenda, error) {
	out := Agenda{From: q.From, To: q.To}
	if err := q.checkWindow(); err != nil {
		return out, err
	}
	if q.Max <= 0 {
		q.Max = DefaultMaxResults
	}
	filter, fargs, err := s.calFilter(ctx, q.Calendars)
	if err != nil {
		return out, err
	}
	w := window{from: q.From.Unix(), to: q.To.Unix(), includeCancelled: q.IncludeCancelled}
	var all []Instance
	// freshSnapshot is asked whatever the path: a stale kept snapshot
	// starts its rebuild there.
	if sn := s.freshSnapshot(ctx, w.from, w.to); sn != nil && q.path == pathAuto {
		all, out.Truncated = sn.agenda(s, q, w.from, w.to, calSet(fargs), w.keep)
	} else {
		r := agendaRead{s: s, q: q, w: w, filter: filter, fargs: fargs, overridden: map[overrideKey]bool{}}
		if err := r.run(ctx); err != nil {
			return out, err
		}
		all, out.Truncated = r.all, r.truncated
	}
	return s.finish(out, all, q.Max), nil
}

// checkWindow refuses an empty, inverted or too wide window.
func (q Query) checkWindow() error {
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		return fmt.Errorf("%w: the window needs from before to", ErrBadQuery)
	}
	if q.To.Sub(q.From) > MaxWindow {
		return fmt.Errorf("%w: the window is longer than %d days", ErrBadQuery, int(MaxWindow.Hours()/24))
	}
	return nil
}

// calSet is the set of calendar IDs calFilter selected, as the snapshot
// filters by it; nil means every calendar.
func calSet(ids []any) map[int64]bool {
	if len(ids) == 0 {
		return nil
	}
	set := make(map[int64]bool, len(ids))
	for _, id := range ids {
		set[id.(int64)] = true
	}
	return set
}

// window is an agenda query's [from, to) in Unix seconds.
type window struct {
	from, to         int64
	includeCancelled bool
}

// keep reports whether an instance belongs in the agenda: it overlaps the
// window, or takes no time at a moment inside it; cancelled ones only
// when asked for.
func (w window) keep(in Instance) bool {
	if !w.includeCancelled && strings.EqualFold(in.Status, "CANCELLED") {
		return false
	}
	e, st := in.End.Unix(), in.Start.Unix()
	return st < w.to && (e > w.from || (e == st && st >= w.from))
}

// agendaRead answers one agenda from SQL: single events and overrides by
// their times, series inside the materialized horizon from the instances
// table, every other series expanded per query.
type agendaRead struct {
	s *Store
	q Query
	w window
	// filter and fargs are calFilter's clause and arguments, appended to
	// every query.
	filter string
	fargs  []any
	// overridden names the series instances an override replaces, so
	// neither the instances table nor the expansion shows them too.
	overridden map[overrideKey]bool
	all        []Instance
	truncated  bool
}

// selectEvents starts a query of events rows (rowCols) by condition,
// leaving out the versions superseded by a newer one in another file.
const selectEvents = `SELECT ` + rowCols + ` FROM events e JOIN calendars c ON c.id = e.calendar_id WHERE e.superseded = 0 AND `

func (r *agendaRead) run(ctx context.Context) error {
	if err := r.singles(ctx); err != nil {
		return err
	}
	// Overrides come before the series, which skip what they replace.
	if err := r.overrides(ctx); err != nil {
		return err
	}
	// Inside the horizon, series read their materialized instances; the
	// rest (and every series outside it) expand lazily.
	hz, err := readHorizon(ctx, r.s.db)
	if err != nil {
		return err
	}
	materialized := hz.covers(r.w.from, r.w.to) && r.q.path != pathLazy
	if materialized {
		if err := r.instances(ctx); err != nil {
			return err
		}
	}
	return r.expandSeries(ctx, materialized)
}

// add keeps an instance when it belongs in the window.
func (r *agendaRead) add(in Instance) {
	if r.w.keep(in) {
		r.all = append(r.all, in)
	}
}

// each runs one events query, calendar filter appended, calling fn per row.
func (r *agendaRead) each(ctx context.Context, where string, args []any, fn func(ev *row)) error {
	rows, err := r.s.db.QueryContext(ctx, where+r.filter, append(args, r.fargs...)...)
	if err != nil {
		return fmt.Errorf("querying calendar: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		ev, err := scanRow(rows)
		if err != nil {
			return fmt.Errorf("reading calendar rows: %w", err)
		}
		fn(&ev)
	}
	return rows.Err()
}

// singles reads the events that do not repeat: by start time, and those
// longer than longEvent, which start before that range, through
// events_long.
func (r *agendaRead) singles(ctx context.Context) error {
	add := func(ev *row) { r.add(r.s.instance(ev)) }
	if err := r.each(ctx, selectEvents+`e.recurring = 0 AND e.recurrence_id IS NULL AND e.start >= ? AND e.start < ?`,
		[]any{r.w.from - longEvent, r.w.to}, add); err != nil {
		return err
	}
	return r.each(ctx, `SELECT `+rowCols+` FROM events e INDEXED BY events_long JOIN calendars c ON c.id = e.calendar_id WHERE `+
		`e.superseded = 0 AND e.recurring = 0 AND e.recurrence_id IS NULL AND e.end - e.start > 604800 AND e.start < ? AND e.end > ?`,
		[]any{r.w.from - longEvent, r.w.from}, add)
}

// overrides reads the overrides whose original instance may fall in the
// window (to suppress it) and those moved into the window (to show them).
func (r *agendaRead) overrides(ctx context.Context) error {
	const margin = int64(35 * 24 * 3600)
	return r.each(ctx, selectEvents+`e.recurrence_id IS NOT NULL AND ((e.recurrence_id >= ? AND e.recurrence_id < ?) OR (e.start < ? AND e.end >= ?))`,
		[]any{r.w.from - margin, r.w.to + margin, r.w.to, r.w.from}, func(ev *row) {
			r.overridden[overrideKey{ev.calID, ev.uid, ev.recID.Int64}] = true
			r.add(r.s.instance(ev))
		})
}

// instances reads the materialized instances of the series the horizon
// holds, each capped at MaxPerSeries as the lazy expansion caps it.
func (r *agendaRead) instances(ctx context.Context) error {
	maxPer := r.q.MaxPerSeries
	if maxPer <= 0 {
		maxPer = DefaultMaxInstances
	}
	rows, err := r.s.db.QueryContext(ctx, `SELECT `+rowCols+`, i.start, i.end FROM instances i JOIN events e ON e.id = i.event_id
			JOIN calendars c ON c.id = e.calendar_id WHERE i.start >= ? AND i.start < ? AND i.end >= ? AND e.superseded = 0`+r.filter+` ORDER BY i.start`,
		append([]any{r.w.from - longEvent - 86400, r.w.to, r.w.from}, r.fargs...)...)
	if err != nil {
		return fmt.Errorf("querying calendar instances: %w", err)
	}
	defer rows.Close()
	bases := map[int64]Instance{}
	perSeries := map[int64]int{}
	for rows.Next() {
		var st, en int64
		ev, err := scanRow(rows, &st, &en)
		if err != nil {
			return fmt.Errorf("reading calendar instances: %w", err)
		}
		// Rows come by start, so the cap keeps the earliest, as the lazy
		// expansion does.
		if perSeries[ev.id]++; perSeries[ev.id] > maxPer {
			r.truncated = true
			continue
		}
		if r.overridden[overrideKey{ev.calID, ev.uid, st}] {
			continue
		}
		base, ok := bases[ev.id]
		if !ok {
			base = r.s.instance(&ev)
			bases[ev.id] = base
		}
		in := base
		loc := base.Start.Location()
		in.Start, in.End = time.Unix(st, 0).In(loc), time.Unix(en, 0).In(loc)
		r.add(in)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading calendar instances: %w", err)
	}
	return nil
}

// expandSeries expands the series that may reach into the window: all of
// them, or only those not materialized when the instances table answered.
func (r *agendaRead) expandSeries(ctx context.Context, materialized bool) error {
	where := selectEvents + `e.recurring = 1 AND e.start < ? AND (e.range_end IS NULL OR e.range_end > ?)`
	if materialized {
		where += ` AND e.materialized = 0`
	}
	return r.each(ctx, where, []any{r.w.to, r.w.from}, func(ev *row) {
		if r.s.expandInto(ev, r.q, r.overridden, r.w.keep, &r.all) {
			r.truncated = true
		}
	})
}

// expandInto expands one master lazily over the query window, skipping
// overridden instances; it reports whether the per-series cap cut it.
func (s *Store) expandInto(r *row, q Query, overridden map[overrideKey]bool, keep func(Instance) bool, all *[]Instance) bool {
	occ, trunc, err := s.series(r).Expand(q.From, q.To, q.MaxPerSeries)
	if err != nil {
		// Indexed rules parsed once already; a failure here is logged
		// rather than hiding the whole agenda.
		s.log.Warn("calendarExpand", "uid", r.uid, "err", err)
		return false
	}
	base := s.instance(r)
	dur := base.End.Sub(base.Start)
	for _, o := range occ {
		if overridden[overrideKey{r.calID, r.uid, o.Original.Unix()}] {
			continue
		}
		in := base
		in.Start = o.Start
		in.End = Series{AllDay: r.allDay, Duration: dur}.end(o.Start)
		if keep(in) {
			*all = append(*all, in)
		}
	}
	return trunc
}

// finish sorts the instances by start (then summary, calendar and UID, so
// both query paths give one order) and applies the cap.
func (s *Store) finish(out Agenda, all []Instance, max int) Agenda {
	// The snapshot yields instances nearly in order; sort only when needed,
	// and an index rather than the (large) Instance values.
	if !isSorted(all) {
		order := make([]int, len(all))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(i, j int) int { return compareInstances(&all[i], &all[j]) })
		sorted := make([]Instance, len(all))
		for i, k := range order {
			sorted[i] = all[k]
		}
		all = sorted
	}
	if len(all) > max {
		all, out.Truncated = all[:max], true
	}
	out.Instances = all
	return out
}

func isSorted(all []Instance) bool {
	for i := 1; i < len(all); i++ {
		if compareInstances(&all[i-1], &all[i]) > 0 {
			return false
		}
	}
	return true
}

// compareInstances orders by start, summary, calendar and UID (pointers:
// an Instance is a few hundred bytes).
func compareInstances(a, b *Instance) int {
	if c := a.Start.Compare(b.Start); c != 0 {
		return c
	}
	if c := strings.Compare(a.Summary, b.Summary); c != 0 {
		return c
	}
	if c := strings.Compare(a.Calendar, b.Calendar); c != 0 {
		return c
	}
	return strings.Compare(a.UID, b.UID)
}

// SearchQuery selects events by text, window, calendar and attendee.
type SearchQuery struct {
	Text      string
	From, To  time.Time // optional window
	Calendars []string
	Attendee  string // substring of an attendee's or the organizer's name or address
	Limit     int
}

// MaxSearchResults caps Search.
const MaxSearchResults = 200

// Search finds events. Text is matched word by word (FTS5) in summary,
// description, location and attendees. Recurring events are reported at
// their first occurrence in the window (or their next one from now, or
// DTSTART when none is left).
func (s *Store) Search(ctx context.Context, q SearchQuery) ([]Instance, error) {
	if q.Limit <= 0 || q.Limit > MaxSearchResults {
		q.Limit = 50
	}
	match := search.MatchAll(q.Text)
	if match == "" && q.Attendee == "" && q.From.IsZero() {
		return nil, fmt.Errorf("%w: give words to search for, an attendee or a window", ErrBadQuery)
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.To.After(q.From) {
		return nil, fmt.Errorf("%w: the window needs from before to", ErrBadQuery)
	}
	filter, fargs, err := s.calFilter(ctx, q.Calendars)
	if err != nil {
		return nil, err
	}
	where := []string{"e.superseded = 0"}
	var args []any
	from := "events e JOIN calendars c ON c.id = e.calendar_id"
	order := "e.start"
	if match != "" {
		from += " JOIN events_fts f ON f.rowid = e.id"
		where = append(where, "events_fts MATCH ?")
		args = append(args, match)
		order = "f.rank"
	}
	if q.Attendee != "" {
		where = append(where, "e.attendees LIKE ? ESCAPE '\\'")
		args = append(args, "%"+likeEscape(strings.ToLower(q.Attendee))+"%")
	}
	if !q.To.IsZero() {
		where = append(where, "e.start < ?")
		args = append(args, q.To.Unix())
	}
	if !q.From.IsZero() {
		where = append(where, "(e.end > ? OR e.recurring = 1 AND (e.range_end IS NULL OR e.range_end > ?))")
		args = append(args, q.From.Unix(), q.From.Unix())
	}
	sqlText := "SELECT " + rowCols + " FROM " + from + " WHERE " + strings.Join(where, " AND ") + filter +
		" ORDER BY " + order + " LIMIT ?"
	args = append(append(args, fargs...), q.Limit*4)
	rows, err := s.db.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return nil, fmt.Errorf("searching calendar: %w", err)
	}
	defer rows.Close()
	var out []Instance
	for rows.Next() && len(out) < q.Limit {
		r, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("reading calendar rows: %w", err)
		}
		in := s.instance(&r)
		if r.recurring {
			wf, wt := q.From, q.To
			if wf.IsZero() {
				wf = s.now()
			}
			if wt.IsZero() || wt.Sub(wf) > MaxWindow {
				wt = wf.Add(MaxWindow)
			}
			if occ, _, err := s.series(&r).Expand(wf, wt, 1); err == nil && len(occ) > 0 {
				dur := in.End.Sub(in.Start)
				in.Start = occ[0].Start
				in.End = Series{AllDay: r.allDay, Duration: dur}.end(in.Start)
			} else if !q.From.IsZero() {
				continue // no occurrence in the asked window
			}
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
