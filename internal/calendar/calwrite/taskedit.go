package calwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-ical"

	"github.com/hestia-dev/hestia/internal/calendar"
)

// Task changes (tasks_update) and removals (tasks_delete) go the way of
// the other task writes (tasks.go): the task is found by UID or by words
// of its summary, its object read and rewritten (or removed) only if its
// ETag is unchanged, the op journaled before the write, and the result
// confirmed by reading the task back (a delete: by the task being gone,
// from the store and, once the list is synced again, from the index).
//
// A recurring task is one object: a change applies to the master, so to
// the whole series. Text and priority follow into the open overrides of
// single occurrences that only inherited them (an override another client
// gave its own title keeps it); completed overrides are history and are
// left. A new due date moves the series: it runs from the new due on (the
// rule kept; a DTSTART moves with it, keeping its distance), and the new
// due takes the series' form (a date for a series by date, a time with
// the old clock time for a series by time). Reopening a recurring task
// reopens the series when the master is completed, otherwise the
// occurrence completed last. A recurring task is deleted only when the
// call says series: true (every occurrence goes); otherwise the delete is
// refused and tasks_complete suggested for the one occurrence.

// DueNone is the due value that clears a task's due date.
const DueNone = "none"

// TaskUpdateArgs are tasks_update's arguments: the task as for
// tasks_complete, and the changes. A nil field is left as it is.
type TaskUpdateArgs struct {
	UID  string `json:"uid,omitempty"`
	Text string `json:"text,omitempty"`
	List string `json:"list,omitempty"`

	Summary *string `json:"summary,omitempty"`
	// Due takes tasks_add's forms; DueNone clears it.
	Due *string `json:"due,omitempty"`
	// Priority 1 (highest) to 9; 0 clears it.
	Priority *int `json:"priority,omitempty"`
	// Notes replace the description; "" clears it.
	Notes *string `json:"notes,omitempty"`
	// Reopen puts a completed (or cancelled) task back to NEEDS-ACTION.
	Reopen bool `json:"reopen,omitempty"`
	// Parent moves the task under another task of its list (its UID, or
	// words of its title matching one open task); ParentNone moves it to
	// the top level.
	Parent *string `json:"parent,omitempty"`
}

// ParentNone is the parent value that makes a subtask a top-level task.
const ParentNone = "none"

// TaskDeleteArgs are tasks_delete's arguments.
type TaskDeleteArgs struct {
	UID  string `json:"uid,omitempty"`
	Text string `json:"text,omitempty"`
	List string `json:"list,omitempty"`
	// Series confirms that a recurring task goes with every occurrence
	// (and, with WithSubtasks, a recurring subtask).
	Series bool `json:"series,omitempty"`
	// WithSubtasks deletes the task's subtasks too; without it a task
	// with subtasks is not deleted.
	WithSubtasks bool `json:"with_subtasks,omitempty"`
}

// taskChanges is a validated tasks_update.
type taskChanges struct {
	summary, notes *string
	priority       *int
	due            time.Time
	dueDate        bool
	setDue         bool
	clearDue       bool
	reopen         bool
	// parent is the parent asked for ("" unless moving), toTop a move
	// to the top level.
	parent string
	toTop  bool
}

func (w *Writer) prepareUpdate(a TaskUpdateArgs) (taskChanges, error) {
	c := taskChanges{notes: a.Notes, priority: a.Priority, reopen: a.Reopen}
	if a.Summary == nil && a.Due == nil && a.Priority == nil && a.Notes == nil && !a.Reopen && a.Parent == nil {
		return c, errors.New("nothing to change: give summary, due, priority, notes, reopen or parent")
	}
	if a.Parent != nil {
		v := strings.TrimSpace(*a.Parent)
		switch {
		case v == "":
			return c, fmt.Errorf("parent is empty: give the parent task's uid or words of its title, or %q to make it a top-level task", ParentNone)
		case strings.EqualFold(v, ParentNone):
			c.toTop = true
		default:
			c.parent = v
		}
	}
	if a.Summary != nil {
		s := strings.TrimSpace(*a.Summary)
		if s == "" {
			return c, errors.New("summary cannot be emptied")
		}
		if err := checkText("summary", *a.Summary, false); err != nil {
			return c, err
		}
		c.summary = &s
	}
	if a.Notes != nil {
		if err := checkText("notes", *a.Notes, true); err != nil {
			return c, err
		}
	}
	if a.Priority != nil && (*a.Priority < 0 || *a.Priority > 9) {
		return c, errors.New("priority is 1 (highest) to 9 (lowest), or 0 for none")
	}
	if a.Due != nil {
		v := strings.TrimSpace(*a.Due)
		switch {
		case v == "":
			return c, fmt.Errorf("due is empty: give a date (YYYY-MM-DD, today, tomorrow), a time (YYYY-MM-DDTHH:MM), or %q to clear it", DueNone)
		case strings.EqualFold(v, DueNone):
			c.clearDue = true
		default:
			t, date, err := w.taskDue(v)
			if err != nil {
				return c, err
			}
			if d := t.Sub(w.now()); d > maxAhead || d < -maxAhead {
				return c, errors.New("due is more than 20 years away")
			}
			c.due, c.dueDate, c.setDue = t, date, true
		}
	}
	return c, nil
}

// plannedTaskWrite is a task change or removal ready to be written.
type plannedTaskWrite struct {
	task   calendar.Task
	target Target
	obj    Object
	// data is the object's new content; nil removes the object.
	data []byte
	// changes say, old → new, what the card shows.
	changes []string
	// occurrence is the reopened occurrence (zero for the master).
	occurrence time.Time
	// summary is the task's title after the write.
	summary string
	rule    string // the series' rule, for a recurring task
	// others counts the other items kept in the object (a delete).
	others int
	check  func(*ical.Calendar) error
	// subtasks are the task's subtasks (theirs included, parents first)
	// that a delete takes along.
	subtasks []*calendar.TaskNode
}

// readTask finds a task's object and parses it: the master's component
// and parsed form, and the parsed overrides.
func (w *Writer) readTask(ctx context.Context, p *plannedTaskWrite) (*ical.Calendar, *ical.Component, *calendar.Todo, []calendar.Todo, error) {
	var err error
	if p.target, err = w.taskTarget(ctx, p.task.List); err != nil {
		return nil, nil, nil, nil, err
	}
	href, err := w.cal.TodoFileOf(ctx, p.task.List, p.task.UID)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if p.obj, err = p.target.Backend.Get(ctx, href); err != nil {
		return nil, nil, nil, nil, err
	}
	cal, err := decode(p.obj.Data)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	parsed, err := calendar.ParseObjects(bytes.NewReader(p.obj.Data), w.loc)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var td *calendar.Todo
	var overrides []calendar.Todo
	for i := range parsed.Todos {
		x := parsed.Todos[i]
		switch {
		case x.UID != p.task.UID:
		case x.RecurrenceID.IsZero():
			td = &x
		default:
			overrides = append(overrides, x)
		}
	}
	master, _ := todoComponents(cal, p.task.UID, time.Time{}, w.loc)
	if td == nil || master == nil {
		return nil, nil, nil, nil, fmt.Errorf("task %s has no master VTODO in %s", p.task.UID, href)
	}
	if td.Recurring() {
		p.rule = td.RRule
		if p.rule == "" {
			p.rule = "RDATE"
		}
	}
	return cal, master, td, overrides, nil
}

// quoted shows a text on a card: quoted, cut at 60 characters, "none"
// when empty.
func quoted(s string) string {
	if s == "" {
		return "none"
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return strconv.Quote(s)
}

func prioText(n int) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

// fmtDue shows a due value on a card.
func (w *Writer) fmtDue(t time.Time, date bool) string {
	switch {
	case t.IsZero():
		return "none"
	case date:
		return t.Format("Mon 2006-01-02")
	}
	return t.In(w.loc).Format("Mon 2006-01-02 15:04")
}

// componentDone reports whether a VTODO component is completed or
// cancelled (RFC 5545 §3.8.1.11; with no STATUS, a COMPLETED time).
func componentDone(c *ical.Component) bool {
	if p := c.Props.Get(ical.PropStatus); p != nil && strings.TrimSpace(p.Value) != "" {
		s := strings.ToUpper(strings.TrimSpace(p.Value))
		return s == calendar.TodoCompleted || s == calendar.TodoCancelled || s == "DONE"
	}
	return c.Props.Get(ical.PropCompleted) != nil
}

// reopen puts a component back to NEEDS-ACTION: its COMPLETED time and a
// 100% PERCENT-COMPLETE go.
func reopen(c *ical.Component) {
	c.Props.SetText(ical.PropStatus, calendar.TodoNeedsAction)
	c.Props.Del(ical.PropCompleted)
	if p := c.Props.Get(ical.PropPercentComplete); p != nil && strings.TrimSpace(p.Value) == "100" {
		c.Props.Del(ical.PropPercentComplete)
	}
}

// rawValue is a property's value as written ("" when absent).
func rawValue(c *ical.Component, name string) string {
	if p := c.Props.Get(name); p != nil {
		return p.Value
	}
	return ""
}

// isDateProp reports whether a date property holds a DATE.
func isDateProp(p *ical.Prop) bool {
	return p != nil && (strings.EqualFold(p.Params.Get(ical.ParamValue), "DATE") || len(strings.TrimSpace(p.Value)) == 8)
}

// dayDiff counts the calendar days from a's date to b's, each in its own
// zone.
func dayDiff(a, b time.Time) int {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return int(time.Date(by, bm, bd, 0, 0, 0, 0, time.UTC).Sub(time.Date(ay, am, ad, 0, 0, 0, 0, time.UTC)).Hours() / 24)
}

// planUpdate resolves the task, reads its object and makes the changed
// version.
func (w *Writer) planUpdate(ctx context.Context, a TaskUpdateArgs) (plannedTaskWrite, error) {
	var p plannedTaskWrite
	ch, err := w.prepareUpdate(a)
	if err != nil {
		return p, err
	}
	if p.task, err = w.findTask(ctx, a.UID, a.Text, a.List, ch.reopen); err != nil {
		return p, err
	}
	cal, master, td, overrides, err := w.readTask(ctx, &p)
	if err != nil {
		return p, err
	}
	uid := p.task.UID
	changed := map[*ical.Component]bool{}
	// openOverrides are the components of occurrences not done: they
	// follow a change of a value they inherited from the master.
	var openOverrides []*ical.Component
	for _, c := range cal.Children {
		if c.Name == ical.CompToDo && c.Props.Get(ical.PropRecurrenceID) != nil && strings.TrimSpace(rawValue(c, ical.PropUID)) == uid && !componentDone(c) {
			openOverrides = append(openOverrides, c)
		}
	}
	setText := func(name, label, old string, v *string) {
		if v == nil || *v == old {
			return
		}
		raw := rawValue(master, name)
		for _, c := range append([]*ical.Component{master}, openOverrides...) {
			if c != master && rawValue(c, name) != raw {
				continue // the occurrence's own value
			}
			if *v == "" {
				c.Props.Del(name)
			} else {
				c.Props.SetText(name, *v)
			}
			changed[c] = true
		}
		p.changes = append(p.changes, fmt.Sprintf("%s %s → %s", label, quoted(old), quoted(*v)))
	}
	setText(ical.PropSummary, "title", td.Summary, ch.summary)
	setText(ical.PropDescription, "notes", td.Description, ch.notes)
	if ch.priority != nil && *ch.priority != td.Priority {
		raw := rawValue(master, ical.PropPriority)
		for _, c := range append([]*ical.Component{master}, openOverrides...) {
			if c != master && rawValue(c, ical.PropPriority) != raw {
				continue
			}
			if *ch.priority == 0 {
				c.Props.Del(ical.PropPriority)
			} else {
				pr := ical.NewProp(ical.PropPriority)
				pr.Value = strconv.Itoa(*ch.priority)
				c.Props.Set(pr)
			}
			changed[c] = true
		}
		p.changes = append(p.changes, fmt.Sprintf("priority %s → %s", prioText(td.Priority), prioText(*ch.priority)))
	}
	due, dueDate := ch.due, ch.dueDate
	if ch.setDue || ch.clearDue {
		if due, dueDate, err = w.moveDue(&p, cal, master, td, ch); err != nil {
			return p, err
		}
		changed[master] = true
	}
	if ch.reopen {
		if err := w.planReopen(&p, cal, master, td, overrides, changed); err != nil {
			return p, err
		}
	}
	newParent := td.Parent
	if ch.parent != "" || ch.toTop {
		if newParent, err = w.planMove(ctx, &p, cal, master, td, ch, changed); err != nil {
			return p, err
		}
	}
	if len(changed) == 0 {
		return p, fmt.Errorf("task %q already reads so: nothing changes", p.task.Summary)
	}
	now := w.now()
	for c := range changed {
		bumpSequence(c)
		stamp(c.Props, now)
	}
	p.summary = td.Summary
	if ch.summary != nil {
		p.summary = *ch.summary
	}
	if p.data, err = encode(cal); err != nil {
		return p, fmt.Errorf("the task's file cannot be rewritten: %w", err)
	}
	if ch.setDue && td.Recurring() {
		p.changes = append(p.changes, w.nextDue(p.data, uid, due)...)
	}
	occurrence := p.occurrence
	p.check = func(c *ical.Calendar) error {
		got, err := readTodo(c, uid, time.Time{}, w.loc)
		if err != nil {
			return err
		}
		switch {
		case ch.summary != nil && got.Summary != *ch.summary:
			return fmt.Errorf("title reads back as %q", got.Summary)
		case ch.notes != nil && strings.TrimSpace(got.Description) != strings.TrimSpace(*ch.notes):
			return fmt.Errorf("notes read back as %q", got.Description)
		case ch.priority != nil && got.Priority != *ch.priority:
			return fmt.Errorf("priority reads back as %d", got.Priority)
		case ch.clearDue && !got.Due.IsZero():
			return fmt.Errorf("due reads back as %s", got.Due)
		case ch.setDue && dueDate && (!got.DueAllDay || got.Due.Format(time.DateOnly) != due.Format(time.DateOnly)):
			return fmt.Errorf("due reads back as %s", got.Due)
		case ch.setDue && !dueDate && (got.DueAllDay || !got.Due.Equal(due)):
			return fmt.Errorf("due reads back as %s", got.Due)
		case got.Parent != newParent:
			return fmt.Errorf("parent reads back as %q", got.Parent)
		}
		if ch.reopen {
			if !occurrence.IsZero() {
				if got, err = readTodo(c, uid, occurrence, w.loc); err != nil {
					return err
				}
			}
			if got.Done() {
				return fmt.Errorf("the task reads back as %s", cmpStatus(got.Status))
			}
		}
		return nil
	}
	return p, nil
}

// moveDue sets or clears the master's DUE (and moves its DTSTART, see the
// comment at the top of the file), notes the change and returns the due
// written.
func (w *Writer) moveDue(p *plannedTaskWrite, cal *ical.Calendar, master *ical.Component, td *calendar.Todo, ch taskChanges) (time.Time, bool, error) {
	startP, dueP := master.Props.Get(ical.PropDateTimeStart), master.Props.Get(ical.PropDue)
	recurring := td.Recurring()
	// The card shows the due the user sees: for a recurring task, the
	// occurrence shown.
	oldShown, oldDate := td.Due, td.DueAllDay
	if recurring && p.task.Due != nil {
		oldShown = *p.task.Due
	}
	if ch.clearDue {
		if td.Due.IsZero() {
			return time.Time{}, false, fmt.Errorf("task %q has no due date to clear", p.task.Summary)
		}
		if recurring && td.Start.IsZero() {
			return time.Time{}, false, fmt.Errorf("task %q repeats from its due date, so it keeps one: give another due instead", p.task.Summary)
		}
		master.Props.Del(ical.PropDue)
		master.Props.Del(ical.PropDuration)
		p.changes = append(p.changes, fmt.Sprintf("due %s → none", w.fmtDue(oldShown, oldDate)))
		return time.Time{}, false, nil
	}
	due, date := ch.due, ch.dueDate
	if recurring && !td.Due.IsZero() {
		// The series keeps its form.
		switch {
		case date && !td.DueAllDay:
			y, m, d := due.Date()
			od := td.Due
			due, date = time.Date(y, m, d, od.Hour(), od.Minute(), od.Second(), 0, od.Location()), false
		case !date && td.DueAllDay:
			y, m, d := due.In(w.loc).Date()
			due, date = time.Date(y, m, d, 0, 0, 0, 0, w.loc), true
		}
	}
	// The form the new DUE is written in: a time keeps the old DUE's
	// zone (or DTSTART's); without one, the user's.
	var like *ical.Prop
	if !date {
		switch {
		case dueP != nil && !isDateProp(dueP):
			c := *dueP
			like = &c
		case startP != nil && !isDateProp(startP):
			c := *startP
			like = &c
		}
	}
	if startP != nil && !td.Start.IsZero() {
		switch {
		case !td.Due.IsZero():
			// By calendar days, then the change of clock time: a move
			// across a DST change keeps the start's wall-clock time.
			days := dayDiff(td.Due, due)
			ns := td.Start.AddDate(0, 0, days)
			if !date && !td.DueAllDay {
				ns = ns.Add(due.Sub(td.Due.AddDate(0, 0, days)))
			}
			if !ns.Equal(td.Start) {
				sp := *startP
				setTime(master.Props, ical.PropDateTimeStart, ns, td.StartAllDay, &sp, w.loc, cal.Component)
				p.changes = append(p.changes, fmt.Sprintf("start %s → %s", w.fmtDue(td.Start, td.StartAllDay), w.fmtDue(ns, td.StartAllDay)))
			}
		case date && dayDiff(td.Start, due) < 0, !date && due.Before(td.Start):
			return time.Time{}, false, fmt.Errorf("due %s is before the task's start, %s", w.fmtDue(due, date), w.fmtDue(td.Start, td.StartAllDay))
		}
	}
	master.Props.Del(ical.PropDuration)
	setTime(master.Props, ical.PropDue, due, date, like, w.loc, cal.Component)
	s := fmt.Sprintf("due %s → %s", w.fmtDue(oldShown, oldDate), w.fmtDue(due, date))
	if recurring {
		s += " (the series runs from then on)"
	}
	p.changes = append(p.changes, s)
	return due, date, nil
}

// nextDue says where a moved series' next occurrence falls when its rule
// does not put it on the due asked for (RFC 5545 leaves a DTSTART off the
// rule undefined; the index starts from the rule's first occurrence).
func (w *Writer) nextDue(data []byte, uid string, due time.Time) []string {
	o, err := calendar.ParseObjects(bytes.NewReader(data), w.loc)
	if err != nil {
		return nil
	}
	for i := range o.Todos {
		td := &o.Todos[i]
		if td.UID != uid || !td.RecurrenceID.IsZero() {
			continue
		}
		y, m, d := w.now().In(w.loc).Date()
		occ, ok := td.NextOccurrence(time.Date(y, m, d, 0, 0, 0, 0, w.loc), func(time.Time) bool { return false })
		switch {
		case !ok:
			return []string{"by its rule no occurrence is left from then on"}
		case !occ.Due.IsZero() && !occ.Due.Equal(due) && occ.Due.After(due):
			return []string{"by its rule the next occurrence is due " + w.fmtDue(occ.Due, td.DueAllDay)}
		}
	}
	return nil
}

// planReopen reopens the master when it is done, else (a recurring task)
// the occurrence completed last.
func (w *Writer) planReopen(p *plannedTaskWrite, cal *ical.Calendar, master *ical.Component, td *calendar.Todo, overrides []calendar.Todo, changed map[*ical.Component]bool) error {
	if td.Done() {
		from := strings.ToLower(cmpStatus(td.Status))
		if td.Status == "" {
			from = "completed"
		}
		reopen(master)
		changed[master] = true
		p.changes = append(p.changes, fmt.Sprintf("status %s → needs-action", from))
		return nil
	}
	if !td.Recurring() {
		return fmt.Errorf("task %q is not completed: nothing to reopen", p.task.Summary)
	}
	var last *calendar.Todo
	for i := range overrides {
		o := &overrides[i]
		if !o.Done() {
			continue
		}
		if last == nil || o.Completed.After(last.Completed) || o.Completed.Equal(last.Completed) && o.RecurrenceID.After(last.RecurrenceID) {
			last = o
		}
	}
	if last == nil {
		return fmt.Errorf("task %q has no completed occurrence to reopen", p.task.Summary)
	}
	_, ov := todoComponents(cal, p.task.UID, last.RecurrenceID, w.loc)
	if ov == nil {
		return fmt.Errorf("task %q: the completed occurrence of %s is not in its file", p.task.Summary, last.RecurrenceID.Format(time.DateOnly))
	}
	reopen(ov)
	changed[ov] = true
	p.occurrence = last.RecurrenceID
	p.changes = append(p.changes, fmt.Sprintf("the occurrence of %s: completed → needs-action", w.fmtDue(last.RecurrenceID, isDateProp(ov.Props.Get(ical.PropRecurrenceID)))))
	return nil
}

// UpdateTask runs tasks_update: the changes written to the master (a
// reopened occurrence to its override), SEQUENCE and DTSTAMP bumped, the
// object replaced only if its ETag is unchanged, and the fields read
// back.
func (w *Writer) UpdateTask(ctx context.Context, key string, a TaskUpdateArgs) (Op, error) {
	// A repeated call is answered from the journal before planning: once
	// written, the change would plan as "nothing changes".
	if prev, ok, err := w.byKey(ctx, key); err != nil || ok {
		return prev, err
	}
	p, err := w.planUpdate(ctx, a)
	if err != nil {
		return Op{}, err
	}
	op, dup, err := w.begin(ctx, key, Op{Kind: KindTaskUpdate, Calendar: p.target.Name, UID: p.task.UID, Href: p.obj.Href,
		Instance: timeString(p.occurrence), Summary: p.summary})
	if err != nil || dup {
		return op, err
	}
	etag, err := p.target.Backend.Update(ctx, p.obj.Href, p.data, p.obj.ETag)
	if err != nil {
		w.finish(ctx, &op, classify(err), "", err)
		return op, fmt.Errorf("updating the task: %w", err)
	}
	w.confirm(ctx, p.target, &op, etag, p.check)
	return op, nil
}

// planDelete resolves the task and reads its object: removed whole, or
// rewritten without the task when it holds other items too. A task with
// subtasks is refused unless the call says with_subtasks; inSweep marks
// the removals of such a call, whose subtasks go (or went) with it.
func (w *Writer) planDelete(ctx context.Context, a TaskDeleteArgs, inSweep bool) (plannedTaskWrite, error) {
	var p plannedTaskWrite
	var err error
	if p.task, err = w.findTask(ctx, a.UID, a.Text, a.List, false); err != nil {
		return p, err
	}
	p.summary = p.task.Summary
	cal, _, _, _, err := w.readTask(ctx, &p)
	if err != nil {
		return p, err
	}
	if !inSweep {
		if p.subtasks, err = w.subtasks(ctx, p.task, false); err != nil {
			return p, err
		}
		if len(p.subtasks) > 0 && !a.WithSubtasks {
			return p, fmt.Errorf("task %q has %s: %s; delete them first, or say with_subtasks: true (hestia tasks delete --with-subtasks) to delete them with it",
				p.task.Summary, count(len(p.subtasks), "subtask"), nodeNames(p.subtasks))
		}
	}
	repeating := recurringNodes(p.subtasks)
	switch {
	case p.rule != "" && !a.Series:
		return p, fmt.Errorf("task %q repeats (%s): deleting it deletes every occurrence; say series: true (hestia tasks delete --series) to delete the series, or complete this occurrence with tasks_complete", p.task.Summary, p.rule)
	case repeating > 0 && !a.Series:
		return p, fmt.Errorf("task %q has %s: deleting a repeating task deletes every occurrence; say series: true (hestia tasks delete --series) as well", p.task.Summary, count(repeating, "repeating subtask"))
	case p.rule == "" && repeating == 0 && a.Series && !inSweep:
		return p, fmt.Errorf("task %q does not repeat: delete it without series", p.task.Summary)
	}
	uid := p.task.UID
	if holdsOthers(cal, uid) {
		var kept []*ical.Component
		for _, c := range cal.Children {
			if strings.TrimSpace(rawValue(c, ical.PropUID)) == uid && c.Name != ical.CompTimezone {
				continue
			}
			if c.Name != ical.CompTimezone {
				p.others++
			}
			kept = append(kept, c)
		}
		cal.Children = kept
		if p.data, err = encode(cal); err != nil {
			return p, fmt.Errorf("the task's file cannot be rewritten: %w", err)
		}
	}
	return p, nil
}

// deleteTask writes one planned removal: the object holding the task is
// deleted (rewritten without it when it holds other items), only if its
// ETag is unchanged. It is confirmed when the object no longer holds the
// task and, after the list's index is refreshed, no other file of the
// list shows a version of it.
func (w *Writer) deleteTask(ctx context.Context, key string, p plannedTaskWrite) (Op, error) {
	op, dup, err := w.begin(ctx, key, Op{Kind: KindTaskDelete, Calendar: p.target.Name, UID: p.task.UID, Href: p.obj.Href, Summary: p.summary})
	if err != nil || dup {
		return op, err
	}
	t, etag := p.target, ""
	if p.data == nil {
		err = t.Backend.Delete(ctx, p.obj.Href, p.obj.ETag)
	} else {
		etag, err = t.Backend.Update(ctx, p.obj.Href, p.data, p.obj.ETag)
	}
	if err != nil {
		w.finish(ctx, &op, classify(err), "", err)
		return op, fmt.Errorf("deleting the task: %w", err)
	}
	op.Checks++
	obj, gerr := t.Backend.Get(ctx, op.Href)
	switch {
	case p.data == nil && !errors.Is(gerr, ErrNotFound):
		err = fmt.Errorf("%s is still there (%v)", op.Href, gerr)
	case p.data != nil && gerr != nil:
		err = gerr
	case p.data != nil && obj.ETag != etag:
		err = fmt.Errorf("read back ETag %s, wrote %s", obj.ETag, etag)
	case p.data != nil && !taskGone(obj, nil, op.UID):
		err = fmt.Errorf("%s still holds the task", op.Href)
	}
	if err == nil && t.Resync != nil {
		w.resync(ctx, t)
		// Another file of the list showing the task now is an older
		// version the removed one hid. The removed file itself still
		// listed means only that the refresh failed (logged by resync):
		// the store's answer stands.
		if f, ferr := w.cal.TodoFileOf(ctx, t.Name, op.UID); ferr == nil && f != op.Href {
			err = fmt.Errorf("the task is still in list %q: %s holds another version of it; delete it again to remove that one", t.Name, f)
		}
	}
	if err != nil {
		w.finish(ctx, &op, StateUnknown, etag, fmt.Errorf("confirmation: %w", err))
		return op, nil
	}
	w.finish(ctx, &op, StateDone, etag, nil)
	return op, nil
}

// taskGone reports whether an object read back (or its absence, gerr)
// shows the task uid deleted.
func taskGone(obj Object, gerr error, uid string) bool {
	if errors.Is(gerr, ErrNotFound) {
		return true
	}
	if gerr != nil {
		return false
	}
	cal, err := decode(obj.Data)
	return err == nil && !holdsUID(cal, uid)
}

// PreviewUpdateTask is the approval card's line for tasks_update: what
// changes, old → new, and in which list.
func (w *Writer) PreviewUpdateTask(ctx context.Context, a TaskUpdateArgs) string {
	p, err := w.planUpdate(ctx, a)
	if err != nil {
		return "invalid: " + err.Error()
	}
	s := fmt.Sprintf("update task %q (%s) in list %q: %s", p.task.Summary, p.task.UID, p.target.Name, strings.Join(p.changes, "; "))
	if p.rule != "" && p.occurrence.IsZero() {
		s += fmt.Sprintf(" — a repeating task (%s): this changes the whole series", p.rule)
	}
	return s
}

// PreviewDeleteTask is the approval card's line for tasks_delete.
func (w *Writer) PreviewDeleteTask(ctx context.Context, a TaskDeleteArgs) string {
	p, err := w.planDelete(ctx, a, false)
	if err != nil {
		return "invalid: " + err.Error()
	}
	what := "task"
	if p.task.Done {
		what = "completed task"
	}
	s := fmt.Sprintf("delete %s %q (%s) from list %q", what, p.task.Summary, p.task.UID, p.target.Name)
	if p.rule != "" {
		s += fmt.Sprintf(": the whole repeating series (%s), every occurrence", p.rule)
	}
	if len(p.subtasks) > 0 {
		s += fmt.Sprintf(", and with it its %s: %s", count(len(p.subtasks), "subtask"), nodeNames(p.subtasks))
		if n := recurringNodes(p.subtasks); n > 0 {
			s += fmt.Sprintf(" (%s, every occurrence)", count(n, "repeating one"))
		}
	}
	if p.others > 0 {
		s += fmt.Sprintf("; its file %s holds %d other item(s), which are kept", p.obj.Href, p.others)
	}
	return s
}
