package calendar

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

const insertTodoSQL = `INSERT INTO todos(file_id, calendar_id, uid, recurrence_id, summary, description, status, done, priority, percent,
	due, due_all_day, due_zone, start, start_all_day, start_zone, completed, categories, parent, rrule, rdates, exdates, sequence, dtstamp, warnings)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func unixOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Unix()
}

// insertTodos writes one file's to-dos.
func (ix *indexer) insertTodos(ctx context.Context, calID, fileID int64, tds []Todo) error {
	for i := range tds {
		t := &tds[i]
		warn := ""
		if len(t.Warnings) > 0 {
			b, _ := json.Marshal(t.Warnings)
			warn = string(b)
		}
		if _, err := ix.insertTodo.ExecContext(ctx, fileID, calID, t.UID, unixOrNil(t.RecurrenceID), t.Summary, t.Description,
			t.Status, t.Done(), t.Priority, t.Percent,
			unixOrNil(t.Due), t.DueAllDay, t.DueZone, unixOrNil(t.Start), t.StartAllDay, t.StartZone, unixOrNil(t.Completed),
			strings.Join(t.Categories, ","), t.Parent, t.RRule, unixList(t.RDates), unixList(t.ExDates),
			t.Sequence, stampSeconds(t.Stamp), warn); err != nil {
			return fmt.Errorf("inserting to-do %s: %w", t.UID, err)
		}
	}
	return nil
}

// Task is a to-do as queries answer it: for a recurring one, the
// occurrence shown (see Todo.NextOccurrence).
type Task struct {
	ID          int64      `json:"id"`
	List        string     `json:"list"`
	UID         string     `json:"uid"`
	Summary     string     `json:"summary"`
	Description string     `json:"description,omitempty"`
	Status      string     `json:"status,omitempty"`
	Done        bool       `json:"done,omitempty"`
	Priority    int        `json:"priority,omitempty"`
	Percent     int        `json:"percent,omitempty"`
	Due         *time.Time `json:"due,omitempty"`
	// DueDate is set for a due date without a time (a DATE): the task is
	// due by the end of that day.
	DueDate    bool       `json:"due_date,omitempty"`
	Start      *time.Time `json:"start,omitempty"`
	Completed  *time.Time `json:"completed,omitempty"`
	Categories []string   `json:"categories,omitempty"`
	// Parent is the UID of the task this one is a subtask of, when it is
	// nested (see tasktree.go): "" at top level, including for a
	// RELATED-TO parent not in the list or a cycle. ParentSummary is that
	// task's title, to show a subtask found without its parent in context.
	Parent        string `json:"parent,omitempty"`
	ParentSummary string `json:"parent_summary,omitempty"`
	// Subtasks counts the task's direct subtasks (open and done),
	// SubtasksDone the done ones ("1 of 2 done").
	Subtasks     int `json:"subtasks,omitempty"`
	SubtasksDone int `json:"subtasks_done,omitempty"`
	// Depth is how many tasks shown above this one it is nested under: 0
	// in the store's flat answer, set by a caller that lists subtasks
	// under their parents (package tasks).
	Depth     int    `json:"depth,omitempty"`
	Recurring bool   `json:"recurring,omitempty"`
	Rule      string `json:"rrule,omitempty"`
	// Occurrence is, for a recurring task, the original time of the
	// occurrence shown (what completing it names).
	Occurrence *time.Time `json:"occurrence,omitempty"`
	Overdue    bool       `json:"overdue,omitempty"`
	Warnings   []string   `json:"warnings,omitempty"`
}

// TodoQuery selects tasks.
type TodoQuery struct {
	Lists []string // calendar names; empty means all
	// Text is matched word by word (FTS5) in summary, description and
	// categories.
	Text string
	// DueBefore, when set, keeps tasks due before it (overdue ones
	// included); tasks without a due date are left out.
	DueBefore time.Time
	// IncludeDone adds completed and cancelled tasks (most recently
	// completed first, after the open ones).
	IncludeDone bool
	UID         string // only this UID
	Limit       int    // DefaultMaxTasks when <= 0
}

// DefaultMaxTasks caps a task query when the caller sets no limit.
const DefaultMaxTasks = 500

// todoRow is one todos row as read for queries.
type todoRow struct {
	id, calID                   int64
	list, uid                   string
	recID                       sql.NullInt64
	summary, desc, status       string
	done                        bool
	priority, percent           int
	due, start, completed       sql.NullInt64
	dueAllDay, startAllDay      bool
	dueZone, startZone          string
	categories, parent          string
	rule, rdates, exdates, warn string
	sequence, stamp             int64
}

const todoCols = `t.id, t.calendar_id, c.name, t.uid, t.recurrence_id, t.summary, t.description, t.status, t.done, t.priority, t.percent,
	t.due, t.start, t.completed, t.due_all_day, t.start_all_day, t.due_zone, t.start_zone, t.categories, t.parent,
	t.rrule, t.rdates, t.exdates, t.warnings, t.sequence, t.dtstamp`

func scanTodo(rows *sql.Rows) (todoRow, error) {
	var r todoRow
	err := rows.Scan(&r.id, &r.calID, &r.list, &r.uid, &r.recID, &r.summary, &r.desc, &r.status, &r.done, &r.priority, &r.percent,
		&r.due, &r.start, &r.completed, &r.dueAllDay, &r.startAllDay, &r.dueZone, &r.startZone, &r.categories, &r.parent,
		&r.rule, &r.rdates, &r.exdates, &r.warn, &r.sequence, &r.stamp)
	return r, err
}

// timeOf places a stored time in its zone (the floating zone for DATE
// values and floating times).
func (s *Store) timeOf(v sql.NullInt64, allDay bool, zone string) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	loc := s.floating
	if !allDay {
		loc = s.zone(zone)
	}
	return time.Unix(v.Int64, 0).In(loc)
}

// todo rebuilds the parsed form of a row (for recurrence).
func (s *Store) todo(r *todoRow) Todo {
	t := Todo{UID: r.uid, Summary: r.summary, Status: r.status, RRule: r.rule,
		Due: s.timeOf(r.due, r.dueAllDay, r.dueZone), DueAllDay: r.dueAllDay,
		Start: s.timeOf(r.start, r.startAllDay, r.startZone), StartAllDay: r.startAllDay,
		Completed: s.timeOf(r.completed, false, "UTC")}
	loc := s.floating
	if a, allDay := t.anchor(); !a.IsZero() && !allDay {
		loc = a.Location()
	}
	t.RDates, t.ExDates = timeList(r.rdates, loc), timeList(r.exdates, loc)
	if r.recID.Valid {
		t.RecurrenceID = time.Unix(r.recID.Int64, 0).In(loc)
	}
	return t
}

func (s *Store) task(r *todoRow) Task {
	t := Task{ID: r.id, List: r.list, UID: r.uid, Summary: r.summary, Description: r.desc, Status: r.status, Done: r.done,
		Priority: r.priority, Percent: r.percent, Parent: r.parent, Rule: r.rule, Recurring: r.rule != "" || (r.rdates != "" && r.rdates != "[]"),
		DueDate: r.dueAllDay}
	ptr := func(v time.Time) *time.Time {
		if v.IsZero() {
			return nil
		}
		return &v
	}
	t.Due = ptr(s.timeOf(r.due, r.dueAllDay, r.dueZone))
	t.Start = ptr(s.timeOf(r.start, r.startAllDay, r.startZone))
	if r.completed.Valid {
		t.Completed = ptr(time.Unix(r.completed.Int64, 0).UTC())
	}
	if r.categories != "" {
		t.Categories = strings.Split(r.categories, ",")
	}
	if r.warn != "" {
		_ = json.Unmarshal([]byte(r.warn), &t.Warnings)
	}
	return t
}

// Todos answers a task query: open tasks (and done ones when asked),
// sorted by due time (so overdue ones come first), then those without a
// due date; ties by priority (1 first, none last), then summary. A
// recurring task is one entry, at its occurrence to do next.
func (s *Store) Todos(ctx context.Context, q TodoQuery) ([]Task, error) {
	if q.Limit <= 0 || q.Limit > DefaultMaxTasks {
		q.Limit = DefaultMaxTasks
	}
	where := []string{"t.recurrence_id IS NULL"}
	var args []any
	from := "todos t JOIN calendars c ON c.id = t.calendar_id"
	if len(q.Lists) > 0 {
		var ph []string
		for _, n := range q.Lists {
			if _, err := s.CalendarByName(ctx, n); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadQuery, err)
			}
			ph = append(ph, "?")
			args = append(args, n)
		}
		where = append(where, "c.name IN ("+strings.Join(ph, ",")+")")
	}
	if !q.IncludeDone {
		where = append(where, "t.done = 0")
	}
	if q.UID != "" {
		where = append(where, "t.uid = ?")
		args = append(args, q.UID)
	}
	if strings.TrimSpace(q.Text) != "" {
		match := search.MatchAll(q.Text)
		if match == "" {
			return nil, fmt.Errorf("%w: no words to search for in %q", ErrBadQuery, q.Text)
		}
		from += " JOIN todos_fts f ON f.rowid = t.id"
		where = append(where, "todos_fts MATCH ?")
		args = append(args, match)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+todoCols+" FROM "+from+" WHERE "+strings.Join(where, " AND "), args...)
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	// One version per list and UID: the highest SEQUENCE, then DTSTAMP
	// (several files of a collection may hold the same to-do).
	type key struct {
		cal int64
		uid string
	}
	best := map[key]todoRow{}
	var order []key
	for rows.Next() {
		r, err := scanTodo(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading tasks: %w", err)
		}
		k := key{r.calID, r.uid}
		if b, ok := best[k]; ok {
			if cmp.Or(cmp.Compare(r.sequence, b.sequence), cmp.Compare(r.stamp, b.stamp)) > 0 {
				best[k] = r
			}
			continue
		}
		best[k] = r
		order = append(order, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading tasks: %w", err)
	}
	today := s.today()
	now := s.now()
	out := make([]Task, 0, len(order))
	for _, k := range order {
		r := best[k]
		t := s.task(&r)
		if t.Recurring && !r.done {
			occ, ov, ok, err := s.nextTodoOccurrence(ctx, &r, today)
			if err != nil {
				return nil, err
			}
			if !ok {
				if !q.IncludeDone {
					continue // every occurrence is done
				}
			} else {
				o := occ.Original
				t.Occurrence = &o
				t.Due, t.Start = nil, nil
				if !occ.Due.IsZero() {
					d := occ.Due
					t.Due = &d
				}
				if !occ.Start.IsZero() {
					st := occ.Start
					t.Start = &st
				}
				if ov != nil {
					// An override of this occurrence says how it differs.
					t.Summary, t.Description, t.Status, t.Percent = ov.summary, ov.desc, ov.status, ov.percent
					if ov.priority != 0 {
						t.Priority = ov.priority
					}
					if ov.due.Valid {
						d := s.timeOf(ov.due, ov.dueAllDay, ov.dueZone)
						t.Due = &d
					}
				}
			}
		}
		t.Overdue = !t.Done && t.Due != nil && overdue(*t.Due, t.DueDate, now, today)
		if !q.DueBefore.IsZero() && (t.Due == nil || !t.Due.Before(q.DueBefore)) {
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, compareTasks)
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	calOf := map[string]int64{}
	for _, k := range order {
		calOf[best[k].list] = k.cal
	}
	if err := s.placeTasks(ctx, out, calOf); err != nil {
		return nil, err
	}
	return out, nil
}

// overdue: a due time is past; a due date (DATE) is past once its day is.
func overdue(due time.Time, date bool, now, today time.Time) bool {
	if date {
		return due.Before(today)
	}
	return due.Before(now)
}

// compareTasks orders open tasks by due (undated last), then priority
// (1 first, none last), then summary; done tasks after every open one,
// the most recently completed first.
func compareTasks(a, b Task) int {
	if a.Done != b.Done {
		if a.Done {
			return 1
		}
		return -1
	}
	if a.Done {
		return cmp.Or(-cmpTimePtr(a.Completed, b.Completed), strings.Compare(a.Summary, b.Summary))
	}
	prio := func(p int) int {
		if p == 0 {
			return 10
		}
		return p
	}
	return cmp.Or(cmpTimePtr(a.Due, b.Due), cmp.Compare(prio(a.Priority), prio(b.Priority)),
		strings.Compare(strings.ToLower(a.Summary), strings.ToLower(b.Summary)), strings.Compare(a.List, b.List), strings.Compare(a.UID, b.UID))
}

// cmpTimePtr orders times with nil last.
func cmpTimePtr(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Compare(*b)
}

// today is midnight of the current day in the floating zone.
func (s *Store) today() time.Time {
	y, m, d := s.now().In(s.floating).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, s.floating)
}

// nextTodoOccurrence finds a recurring master's occurrence to show, with
// the override of it when there is one.
func (s *Store) nextTodoOccurrence(ctx context.Context, r *todoRow, today time.Time) (TodoOccurrence, *todoRow, bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+todoCols+` FROM todos t JOIN calendars c ON c.id = t.calendar_id
		WHERE t.calendar_id = ? AND t.uid = ? AND t.recurrence_id IS NOT NULL`, r.calID, r.uid)
	if err != nil {
		return TodoOccurrence{}, nil, false, fmt.Errorf("reading task occurrences: %w", err)
	}
	overrides := map[int64]todoRow{}
	for rows.Next() {
		o, err := scanTodo(rows)
		if err != nil {
			rows.Close()
			return TodoOccurrence{}, nil, false, fmt.Errorf("reading task occurrences: %w", err)
		}
		if prev, ok := overrides[o.recID.Int64]; !ok || cmp.Or(cmp.Compare(o.sequence, prev.sequence), cmp.Compare(o.stamp, prev.stamp)) > 0 {
			overrides[o.recID.Int64] = o
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return TodoOccurrence{}, nil, false, err
	}
	td := s.todo(r)
	occ, ok := td.NextOccurrence(today, func(orig time.Time) bool {
		o, ok := overrides[orig.Unix()]
		return ok && o.done
	})
	if !ok {
		return occ, nil, false, nil
	}
	if o, found := overrides[occ.Original.Unix()]; found {
		return occ, &o, true, nil
	}
	return occ, nil, true, nil
}

// TaskLists names the calendars that hold to-dos, by name.
func (s *Store) TaskLists(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT c.name FROM todos t JOIN calendars c ON c.id = t.calendar_id ORDER BY c.name`)
	if err != nil {
		return nil, fmt.Errorf("listing task lists: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// TodoFileOf returns the vdir file holding the to-do uid in a list (the
// one with the newest master when several do), or store.ErrNotFound.
func (s *Store) TodoFileOf(ctx context.Context, list, uid string) (string, error) {
	var name string
	err := s.db.QueryRowContext(ctx, `SELECT f.name FROM todos t JOIN files f ON f.id = t.file_id JOIN calendars c ON c.id = t.calendar_id
		WHERE c.name = ? AND t.uid = ? ORDER BY t.recurrence_id IS NOT NULL, t.sequence DESC, t.dtstamp DESC LIMIT 1`, list, uid).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("task %q in list %q: %w", uid, list, store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("finding task %q: %w", uid, err)
	}
	return name, nil
}
