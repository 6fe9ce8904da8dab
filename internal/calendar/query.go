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

func scanRow(rows *sql.Rows) (row, error) {
	var r row
	err := rows.Scan(&r.id, &r.calID, &r.cal, &r.uid, &r.recID, &r.summary, &r.desc, &r.location, &r.attJSON, &r.organizer,
		&r.start, &r.end, &r.allDay, &r.zone, &r.status, &r.transp, &r.rule, &r.rdates, &r.exdates, &r.recurring, &r.warnings)
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
func (s *Store) Agenda(ctx context.Context, q Query) (Agenda, error) {
	out := Agenda{From: q.From, To: q.To}
	if q.From.IsZero() || q.To.IsZero() || !q.To.After(q.From) {
		return out, fmt.Errorf("%w: the window needs from before to", ErrBadQuery)
	}
	if q.To.Sub(q.From) > MaxWindow {
		return out, fmt.Errorf("%w: the window is longer than %d days", ErrBadQuery, int(MaxWindow.Hours()/24))
	}
	if q.Max <= 0 {
		q.Max = DefaultMaxResults
	}
	filter, fargs, err := s.calFilter(ctx, q.Calendars)
	if err != nil {
		return out, err
	}
	from, to := q.From.Unix(), q.To.Unix()
	keep := func(in Instance) bool {
		if !q.IncludeCancelled && strings.EqualFold(in.Status, "CANCELLED") {
			return false
		}
		e, st := in.End.Unix(), in.Start.Unix()
		return st < to && (e > from || (e == st && st >= from))
	}
	if sn := s.freshSnapshot(ctx, from, to); sn != nil && q.path == pathAuto {
		var cals map[int64]bool
		if len(fargs) > 0 {
			cals = map[int64]bool{}
			for _, id := range fargs {
				cals[id.(int64)] = true
			}
		}
		all, trunc := sn.agenda(s, q, from, to, cals, keep)
		out.Truncated = trunc
		return s.finish(out, all, q.Max), nil
	}
	var all []Instance
	query := func(sqlText string, args []any, fn func(r *row) error) error {
		rows, err := s.db.QueryContext(ctx, sqlText, append(args, fargs...)...)
		if err != nil {
			return fmt.Errorf("querying calendar: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRow(rows)
			if err != nil {
				return fmt.Errorf("reading calendar rows: %w", err)
			}
			if err := fn(&r); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	addSingle := func(r *row) error {
		if in := s.instance(r); keep(in) {
			all = append(all, in)
		}
		return nil
	}
	const sel = `SELECT ` + rowCols + ` FROM events e JOIN calendars c ON c.id = e.calendar_id WHERE `
	if err := query(sel+`e.recurring = 0 AND e.recurrence_id IS NULL AND e.start >= ? AND e.start < ?`+filter,
		[]any{from - longEvent, to}, addSingle); err != nil {
		return out, err
	}
	selLong := `SELECT ` + rowCols + ` FROM events e INDEXED BY events_long JOIN calendars c ON c.id = e.calendar_id WHERE `
	if err := query(selLong+`e.recurring = 0 AND e.recurrence_id IS NULL AND e.end - e.start > 604800 AND e.start < ? AND e.end > ?`+filter,
		[]any{from - longEvent, from}, addSingle); err != nil {
		return out, err
	}
	// Overrides: those whose original instance may fall in the window (to
	// suppress it) and those moved into the window (to show them).
	overridden := map[overrideKey]bool{}
	margin := int64(35 * 24 * 3600)
	if err := query(sel+`e.recurrence_id IS NOT NULL AND ((e.recurrence_id >= ? AND e.recurrence_id < ?) OR (e.start < ? AND e.end >= ?))`+filter,
		[]any{from - margin, to + margin, to, from}, func(r *row) error {
			overridden[overrideKey{r.calID, r.uid, r.recID.Int64}] = true
			return addSingle(r)
		}); err != nil {
		return out, err
	}
	// Inside the horizon, series read their materialized instances; the
	// rest (and every series outside it) expand lazily.
	hz, err := readHorizon(ctx, s.db)
	if err != nil {
		return out, err
	}
	lazy := ""
	if hz.covers(from, to) && q.path != pathLazy {
		lazy = " AND e.materialized = 0"
		bases := map[int64]Instance{}
		perSeries := map[int64]int{}
		maxPer := q.MaxPerSeries
		if maxPer <= 0 {
			maxPer = DefaultMaxInstances
		}
		rows, err := s.db.QueryContext(ctx, `SELECT `+rowCols+`, i.start, i.end FROM instances i JOIN events e ON e.id = i.event_id
			JOIN calendars c ON c.id = e.calendar_id WHERE i.start >= ? AND i.start < ? AND i.end >= ?`+filter+` ORDER BY i.start`,
			append([]any{from - longEvent - 86400, to, from}, fargs...)...)
		if err != nil {
			return out, fmt.Errorf("querying calendar instances: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var r row
			var st, en int64
			if err := rows.Scan(&r.id, &r.calID, &r.cal, &r.uid, &r.recID, &r.summary, &r.desc, &r.location, &r.attJSON, &r.organizer,
				&r.start, &r.end, &r.allDay, &r.zone, &r.status, &r.transp, &r.rule, &r.rdates, &r.exdates, &r.recurring, &r.warnings,
				&st, &en); err != nil {
				return out, fmt.Errorf("reading calendar instances: %w", err)
			}
			// Rows come by start, so the cap keeps the earliest, as
			// the lazy expansion does.
			if perSeries[r.id]++; perSeries[r.id] > maxPer {
				out.Truncated = true
				continue
			}
			if overridden[overrideKey{r.calID, r.uid, st}] {
				continue
			}
			base, ok := bases[r.id]
			if !ok {
				base = s.instance(&r)
				bases[r.id] = base
			}
			in := base
			in.Start, in.End = time.Unix(st, 0).In(base.Start.Location()), time.Unix(en, 0).In(base.Start.Location())
			if keep(in) {
				all = append(all, in)
			}
		}
		if err := rows.Err(); err != nil {
			return out, fmt.Errorf("reading calendar instances: %w", err)
		}
		rows.Close()
	}
	if err := query(sel+`e.recurring = 1 AND e.start < ? AND (e.range_end IS NULL OR e.range_end > ?)`+lazy+filter,
		[]any{to, from}, func(r *row) error {
			if s.expandInto(r, q, overridden, keep, &all) {
				out.Truncated = true
			}
			return nil
		}); err != nil {
		return out, err
	}
	return s.finish(out, all, q.Max), nil
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
	var where []string
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
