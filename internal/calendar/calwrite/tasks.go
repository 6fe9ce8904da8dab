package calwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-ical"

	"github.com/hestia-dev/hestia/internal/calendar"
)

// Task writes (tasks_add, tasks_complete; tasks_update and tasks_delete
// in taskedit.go; subtasks in tasktree.go) go through the same journal, targets and conditional
// backends as event writes: the UID is assigned and the op recorded
// before anything is written, a new task is created with If-None-Match
// semantics, a completion, change or removal touches the object only if
// its ETag is unchanged, and each is confirmed by reading the object
// back.

// Task operation kinds (task_update and task_delete: taskedit.go).
const (
	KindTaskCreate   = "task_create"
	KindTaskComplete = "task_complete"
	KindTaskUpdate   = "task_update"
	KindTaskDelete   = "task_delete"
)

// TaskAddArgs are tasks_add's arguments.
type TaskAddArgs struct {
	Summary string `json:"summary"`
	// Due is a date (YYYY-MM-DD, today, tomorrow: due that day) or a
	// time (RFC 3339 or local YYYY-MM-DDTHH:MM).
	Due      string `json:"due,omitempty"`
	Priority int    `json:"priority,omitempty"`
	List     string `json:"list,omitempty"`
	Notes    string `json:"notes,omitempty"`
	// Parent makes the task a subtask: the parent's UID, or words of its
	// title that match one open task. The task goes in the parent's list.
	Parent string `json:"parent,omitempty"`
}

// TaskCompleteArgs are tasks_complete's arguments: the task by UID, or by
// words of its summary that match one open task only.
type TaskCompleteArgs struct {
	UID  string `json:"uid,omitempty"`
	Text string `json:"text,omitempty"`
	List string `json:"list,omitempty"`
	// WithSubtasks completes the task's open subtasks too; without it a
	// task with open subtasks is not completed.
	WithSubtasks bool `json:"with_subtasks,omitempty"`
}

// taskDue reads a due value: a date gives a DATE (due by the end of that
// day), anything ParseWhen reads with a time gives a DATE-TIME.
func (w *Writer) taskDue(v string) (time.Time, bool, error) {
	v = strings.TrimSpace(v)
	switch strings.ToLower(v) {
	case "today", "tomorrow":
		t, err := calendar.ParseWhen(v, w.now(), w.loc)
		return t, true, err
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, w.loc); err == nil {
		return t, true, nil
	}
	t, err := w.when("due", v)
	return t, false, err
}

// taskTarget picks the list a new task goes to: the one named, else the
// only writable list holding tasks, else the only writable calendar.
func (w *Writer) taskTarget(ctx context.Context, list string) (Target, error) {
	ts, err := w.targets(ctx)
	if err != nil {
		return Target{}, err
	}
	if list != "" {
		t, ok := ts[list]
		if !ok {
			return Target{}, fmt.Errorf("no task list %q", list)
		}
		if t.ReadOnly {
			return Target{}, fmt.Errorf("task list %q: %w; writes to it are refused", list, calendar.ErrReadOnly)
		}
		return t, nil
	}
	lists, err := w.cal.TaskLists(ctx)
	if err != nil {
		return Target{}, err
	}
	var withTasks, writable []string
	for _, l := range lists {
		if t, ok := ts[l]; ok && !t.ReadOnly {
			withTasks = append(withTasks, l)
		}
	}
	for n, t := range ts {
		if !t.ReadOnly {
			writable = append(writable, n)
		}
	}
	slices.Sort(writable)
	switch {
	case len(withTasks) == 1:
		return ts[withTasks[0]], nil
	case len(withTasks) == 0 && len(writable) == 1:
		return ts[writable[0]], nil
	case len(writable) == 0:
		return Target{}, errors.New("no writable task list or calendar is configured")
	case len(withTasks) > 1:
		return Target{}, fmt.Errorf("name the list to add to (task lists: %s)", strings.Join(withTasks, ", "))
	}
	return Target{}, fmt.Errorf("name the list to add to (writable calendars: %s)", strings.Join(writable, ", "))
}

// preparedTask is a validated tasks_add.
type preparedTask struct {
	summary, notes string
	due            time.Time
	dueDate        bool
	priority       int
}

func (w *Writer) prepareTask(a TaskAddArgs) (preparedTask, error) {
	p := preparedTask{summary: strings.TrimSpace(a.Summary), notes: a.Notes, priority: a.Priority}
	if p.summary == "" {
		return p, errors.New("summary is required")
	}
	if err := checkText("summary", a.Summary, false); err != nil {
		return p, err
	}
	if err := checkText("notes", a.Notes, true); err != nil {
		return p, err
	}
	if a.Priority < 0 || a.Priority > 9 {
		return p, errors.New("priority is 1 (highest) to 9 (lowest), or 0 for none")
	}
	if a.Due != "" {
		t, date, err := w.taskDue(a.Due)
		if err != nil {
			return p, err
		}
		if d := t.Sub(w.now()); d > maxAhead || d < -maxAhead {
			return p, errors.New("due is more than 20 years away")
		}
		p.due, p.dueDate = t, date
	}
	return p, nil
}

// addTarget picks the list a new task goes to and its parent (nil for a
// top-level task): a subtask goes in its parent's list.
func (w *Writer) addTarget(ctx context.Context, a TaskAddArgs) (Target, *calendar.Task, error) {
	list := a.List
	var parent *calendar.Task
	if strings.TrimSpace(a.Parent) != "" {
		pt, err := w.resolveParent(ctx, a.Parent, a.List)
		if err != nil {
			return Target{}, nil, err
		}
		if a.List != "" && pt.List != a.List {
			return Target{}, nil, fmt.Errorf("the parent task %q is in list %q, not %q: a subtask goes in its parent's list (leave out the list to add it there)", pt.Summary, pt.List, a.List)
		}
		if err := w.checkDepth(ctx, pt, 1); err != nil {
			return Target{}, nil, err
		}
		parent, list = &pt, pt.List
	}
	t, err := w.taskTarget(ctx, list)
	return t, parent, err
}

// AddTask runs tasks_add.
func (w *Writer) AddTask(ctx context.Context, key string, a TaskAddArgs) (Op, error) {
	p, err := w.prepareTask(a)
	if err != nil {
		return Op{}, err
	}
	t, parent, err := w.addTarget(ctx, a)
	if err != nil {
		return Op{}, err
	}
	uid := newUID()
	cal := ical.NewCalendar()
	cal.Props.SetText(ical.PropProductID, prodID)
	cal.Props.SetText(ical.PropVersion, "2.0")
	td := ical.NewComponent(ical.CompToDo)
	td.Props.SetText(ical.PropUID, uid)
	stamp(td.Props, w.now())
	td.Props.SetDateTime(ical.PropCreated, w.now().UTC())
	td.Props.SetText(ical.PropSummary, p.summary)
	if p.notes != "" {
		td.Props.SetText(ical.PropDescription, p.notes)
	}
	if !p.due.IsZero() {
		setTime(td.Props, ical.PropDue, p.due, p.dueDate, nil, w.loc, cal.Component)
	}
	if p.priority > 0 {
		pr := ical.NewProp(ical.PropPriority)
		pr.Value = fmt.Sprint(p.priority)
		td.Props.Set(pr)
	}
	td.Props.SetText(ical.PropStatus, calendar.TodoNeedsAction)
	if parent != nil {
		setParent(td, parent.UID)
	}
	cal.Children = append(cal.Children, td)
	data, err := encode(cal)
	if err != nil {
		return Op{}, err
	}
	op, dup, err := w.begin(ctx, key, Op{Kind: KindTaskCreate, Calendar: t.Name, UID: uid, Href: hrefFor(uid), Summary: p.summary})
	if err != nil || dup {
		return op, err
	}
	etag, err := t.Backend.Create(ctx, op.Href, data)
	if err != nil {
		w.finish(ctx, &op, classify(err), "", err)
		return op, fmt.Errorf("creating the task: %w", err)
	}
	w.confirm(ctx, t, &op, etag, func(c *ical.Calendar) error {
		got, err := readTodo(c, uid, time.Time{}, w.loc)
		if err != nil {
			return err
		}
		if got.Summary != p.summary {
			return fmt.Errorf("summary reads back as %q", got.Summary)
		}
		if parent != nil && got.Parent != parent.UID {
			return fmt.Errorf("parent reads back as %q", got.Parent)
		}
		return nil
	})
	return op, nil
}

// readTodo parses cal back and returns the to-do uid (the override of
// occurrence when it is set).
func readTodo(cal *ical.Calendar, uid string, occurrence time.Time, loc *time.Location) (calendar.Todo, error) {
	data, err := encode(cal)
	if err != nil {
		return calendar.Todo{}, err
	}
	o, err := calendar.ParseObjects(bytes.NewReader(data), loc)
	if err != nil {
		return calendar.Todo{}, err
	}
	for _, td := range o.Todos {
		if td.UID == uid && (occurrence.IsZero() && td.RecurrenceID.IsZero() || !occurrence.IsZero() && td.RecurrenceID.Equal(occurrence)) {
			return td, nil
		}
	}
	return calendar.Todo{}, fmt.Errorf("no VTODO %s in the object", uid)
}

// resolveTask finds the one task a completion names.
func (w *Writer) resolveTask(ctx context.Context, a TaskCompleteArgs) (calendar.Task, error) {
	return w.findTask(ctx, a.UID, a.Text, a.List, false)
}

// findTask finds one task by UID (open or completed), or by words of its
// summary that match one task only: among the open tasks, or with
// completed among those completed (a recurring task counts as completed
// too, for the occurrences done).
func (w *Writer) findTask(ctx context.Context, uid, text, list string, completed bool) (calendar.Task, error) {
	var lists []string
	if list != "" {
		lists = []string{list}
	}
	switch {
	case strings.TrimSpace(uid) != "":
		ts, err := w.cal.Todos(ctx, calendar.TodoQuery{UID: strings.TrimSpace(uid), Lists: lists, IncludeDone: true})
		if err != nil {
			return calendar.Task{}, err
		}
		switch len(ts) {
		case 0:
			return calendar.Task{}, fmt.Errorf("no task with uid %q (list the tasks with tasks_list first)", uid)
		case 1:
			return ts[0], nil
		}
		var names []string
		for _, t := range ts {
			names = append(names, t.List)
		}
		return calendar.Task{}, fmt.Errorf("task %q is in several lists (%s): name the list", uid, strings.Join(names, ", "))
	case strings.TrimSpace(text) != "":
		state := "open"
		ts, err := w.cal.Todos(ctx, calendar.TodoQuery{Text: text, Lists: lists, IncludeDone: completed, Limit: 50})
		if err != nil {
			return calendar.Task{}, err
		}
		if completed {
			state = "completed"
			kept := ts[:0]
			for _, t := range ts {
				if t.Done || t.Recurring {
					kept = append(kept, t)
				}
			}
			ts = kept
		}
		if len(ts) == 1 {
			return ts[0], nil
		}
		if len(ts) == 0 {
			return calendar.Task{}, fmt.Errorf("no %s task matches %q", state, text)
		}
		// Several match the words: one whose summary is exactly the
		// text is meant; otherwise the caller must choose.
		var exact []calendar.Task
		for _, t := range ts {
			if strings.EqualFold(strings.TrimSpace(t.Summary), strings.TrimSpace(text)) {
				exact = append(exact, t)
			}
		}
		if len(exact) == 1 {
			return exact[0], nil
		}
		var names []string
		for i, t := range ts {
			if i == 5 {
				names = append(names, "…")
				break
			}
			names = append(names, fmt.Sprintf("%q (uid %s, list %s)", t.Summary, t.UID, t.List))
		}
		return calendar.Task{}, fmt.Errorf("%d %s tasks match %q: %s; give the uid", len(ts), state, text, strings.Join(names, ", "))
	}
	return calendar.Task{}, errors.New("give the task's uid or words of its summary")
}

// todoComponents finds a to-do's master and, when occurrence is set, its
// override of that occurrence (nil when absent).
func todoComponents(cal *ical.Calendar, uid string, occurrence time.Time, loc *time.Location) (master, override *ical.Component) {
	for _, c := range cal.Children {
		if c.Name != ical.CompToDo {
			continue
		}
		if p := c.Props.Get(ical.PropUID); p == nil || strings.TrimSpace(p.Value) != uid {
			continue
		}
		rid := c.Props.Get(ical.PropRecurrenceID)
		switch {
		case rid == nil:
			master = c
		case !occurrence.IsZero():
			if t, ok := propTime(rid, loc, cal.Component); ok && t.Equal(occurrence) {
				override = c
			}
		}
	}
	return master, override
}

// markCompleted sets a to-do's completion (RFC 5545 §3.8.1.11, §3.8.2.1,
// §3.8.1.8) and bumps its SEQUENCE and DTSTAMP.
func markCompleted(c *ical.Component, now time.Time) {
	c.Props.SetText(ical.PropStatus, calendar.TodoCompleted)
	c.Props.SetDateTime(ical.PropCompleted, now.UTC())
	pc := ical.NewProp(ical.PropPercentComplete)
	pc.Value = "100"
	c.Props.Set(pc)
	bumpSequence(c)
	stamp(c.Props, now)
}

// plannedCompletion is a completion ready to be written.
type plannedCompletion struct {
	task       calendar.Task
	target     Target
	obj        Object
	data       []byte
	occurrence time.Time // zero unless recurring
	summary    string
	// subtasks are the task's open subtasks (theirs included), parents
	// before their subtasks.
	subtasks []*calendar.TaskNode
}

// planCompletion resolves the task, reads its object and makes the
// completed version (for a recurring task, an override of the occurrence
// to do next). A task with open subtasks is refused unless the call says
// with_subtasks; inSweep marks the completions of such a call, whose
// subtasks are completed (or being) by the same call.
func (w *Writer) planCompletion(ctx context.Context, a TaskCompleteArgs, inSweep bool) (plannedCompletion, error) {
	var p plannedCompletion
	task, err := w.resolveTask(ctx, a)
	if err != nil {
		return p, err
	}
	p.task, p.summary = task, task.Summary
	if task.Done {
		return p, fmt.Errorf("task %q is %w", task.Summary, errAlreadyCompleted)
	}
	if !inSweep {
		if p.subtasks, err = w.subtasks(ctx, task, true); err != nil {
			return p, err
		}
		if len(p.subtasks) > 0 && !a.WithSubtasks {
			return p, fmt.Errorf("task %q has %s: %s; complete them first, or say with_subtasks: true (hestia tasks done --with-subtasks) to complete them with it",
				task.Summary, count(len(p.subtasks), "open subtask"), nodeNames(p.subtasks))
		}
	}
	if p.target, err = w.taskTarget(ctx, task.List); err != nil {
		return p, err
	}
	href, err := w.cal.TodoFileOf(ctx, task.List, task.UID)
	if err != nil {
		return p, err
	}
	if p.obj, err = p.target.Backend.Get(ctx, href); err != nil {
		return p, err
	}
	cal, err := decode(p.obj.Data)
	if err != nil {
		return p, err
	}
	parsed, err := calendar.ParseObjects(bytes.NewReader(p.obj.Data), w.loc)
	if err != nil {
		return p, err
	}
	var td *calendar.Todo
	overrides := map[int64]bool{}
	for i := range parsed.Todos {
		x := &parsed.Todos[i]
		switch {
		case x.UID != task.UID:
		case x.RecurrenceID.IsZero():
			td = x
		default:
			overrides[x.RecurrenceID.Unix()] = x.Done()
		}
	}
	master, _ := todoComponents(cal, task.UID, time.Time{}, w.loc)
	if td == nil || master == nil {
		return p, fmt.Errorf("task %s has no master VTODO in %s", task.UID, href)
	}
	if td.Done() {
		return p, fmt.Errorf("task %q is %w (the list changed since it was read)", task.Summary, errAlreadyCompleted)
	}
	now := w.now()
	if !td.Recurring() {
		markCompleted(master, now)
	} else {
		y, m, d := now.In(w.loc).Date()
		occ, ok := td.NextOccurrence(time.Date(y, m, d, 0, 0, 0, 0, w.loc), func(o time.Time) bool { return overrides[o.Unix()] })
		if !ok {
			return p, fmt.Errorf("task %q has no occurrence left to complete", task.Summary)
		}
		p.occurrence = occ.Original
		_, ov := todoComponents(cal, task.UID, occ.Original, w.loc)
		if ov == nil {
			ov = occurrenceOverride(master, occ, w.loc, cal.Component)
			cal.Children = append(cal.Children, ov)
		}
		markCompleted(ov, now)
	}
	if p.data, err = encode(cal); err != nil {
		return p, fmt.Errorf("the task's file cannot be rewritten: %w", err)
	}
	return p, nil
}

// occurrenceOverride makes the override of one occurrence of a recurring
// to-do: the master's properties without its rule, with RECURRENCE-ID
// naming the occurrence in the form of the property the rule runs from,
// and DTSTART/DUE moved to it.
func occurrenceOverride(master *ical.Component, occ calendar.TodoOccurrence, loc *time.Location, cal *ical.Component) *ical.Component {
	ov := ical.NewComponent(ical.CompToDo)
	for name, ps := range master.Props {
		switch name {
		case ical.PropRecurrenceRule, ical.PropRecurrenceDates, ical.PropExceptionDates, ical.PropDateTimeStart, ical.PropDue, ical.PropDuration:
			continue
		}
		ov.Props[name] = append([]ical.Prop(nil), ps...)
	}
	start, due := master.Props.Get(ical.PropDateTimeStart), master.Props.Get(ical.PropDue)
	anchor := start
	if anchor == nil {
		anchor = due
	}
	isDate := func(p *ical.Prop) bool {
		return p != nil && (strings.EqualFold(p.Params.Get(ical.ParamValue), "DATE") || len(strings.TrimSpace(p.Value)) == 8)
	}
	setTime(ov.Props, ical.PropRecurrenceID, occ.Original, isDate(anchor), anchor, loc, cal)
	if start != nil && !occ.Start.IsZero() {
		setTime(ov.Props, ical.PropDateTimeStart, occ.Start, isDate(start), start, loc, cal)
	}
	if !occ.Due.IsZero() {
		like := due
		if like == nil {
			like = start // a DURATION's end takes DTSTART's form
		}
		setTime(ov.Props, ical.PropDue, occ.Due, isDate(like), like, loc, cal)
	}
	return ov
}

// completeTask writes one planned completion: STATUS:COMPLETED,
// COMPLETED, PERCENT-COMPLETE:100, SEQUENCE and DTSTAMP bumped; for a
// recurring task on the override of the occurrence to do next, so the
// series goes on.
func (w *Writer) completeTask(ctx context.Context, key string, p plannedCompletion) (Op, error) {
	op, dup, err := w.begin(ctx, key, Op{Kind: KindTaskComplete, Calendar: p.target.Name, UID: p.task.UID, Href: p.obj.Href,
		Instance: timeString(p.occurrence), Summary: p.summary})
	if err != nil || dup {
		return op, err
	}
	etag, err := p.target.Backend.Update(ctx, p.obj.Href, p.data, p.obj.ETag)
	if err != nil {
		w.finish(ctx, &op, classify(err), "", err)
		return op, fmt.Errorf("completing the task: %w", err)
	}
	w.confirm(ctx, p.target, &op, etag, func(c *ical.Calendar) error {
		got, err := readTodo(c, p.task.UID, p.occurrence, w.loc)
		if err != nil {
			return err
		}
		if !got.Done() {
			return fmt.Errorf("the task reads back as %s", cmpStatus(got.Status))
		}
		return nil
	})
	return op, nil
}

func cmpStatus(s string) string {
	if s == "" {
		return "without a status"
	}
	return s
}

// PreviewAddTask is the approval card's line for tasks_add.
func (w *Writer) PreviewAddTask(ctx context.Context, a TaskAddArgs) string {
	p, err := w.prepareTask(a)
	if err != nil {
		return "invalid: " + err.Error()
	}
	t, parent, err := w.addTarget(ctx, a)
	if err != nil {
		return "invalid: " + err.Error()
	}
	s := fmt.Sprintf("add task %q", p.summary)
	if parent != nil {
		s = fmt.Sprintf("add subtask %q under %q (%s)", p.summary, parent.Summary, parent.UID)
	}
	if !p.due.IsZero() {
		if p.dueDate {
			s += " due " + p.due.Format("Mon 2006-01-02")
		} else {
			s += " due " + p.due.In(w.loc).Format("Mon 2006-01-02 15:04")
		}
	}
	if p.priority > 0 {
		s += fmt.Sprintf(" (priority %d)", p.priority)
	}
	if p.notes != "" {
		s += ", with notes"
	}
	return s + fmt.Sprintf(" to list %q", t.Name)
}

// PreviewCompleteTask is the approval card's line for tasks_complete.
func (w *Writer) PreviewCompleteTask(ctx context.Context, a TaskCompleteArgs) string {
	p, err := w.planCompletion(ctx, a, false)
	if err != nil {
		return "invalid: " + err.Error()
	}
	s := fmt.Sprintf("complete task %q (%s) in list %q", p.summary, p.task.UID, p.target.Name)
	if !p.occurrence.IsZero() {
		s += ", the occurrence of " + p.occurrence.In(w.loc).Format("Mon 2006-01-02") + " (the series goes on)"
	}
	if len(p.subtasks) > 0 {
		s += fmt.Sprintf(", and with it its %s: %s", count(len(p.subtasks), "open subtask"), nodeNames(p.subtasks))
		if recurringNodes(p.subtasks) > 0 {
			s += " (a repeating subtask's current occurrence only)"
		}
	}
	return s
}

// CanWrite reports why no task (or event) can be written: no writable
// list or calendar is configured. nil means writes can be offered.
func (w *Writer) CanWrite(ctx context.Context) error {
	ts, err := w.targets(ctx)
	if err != nil && len(ts) == 0 {
		return err
	}
	for _, t := range ts {
		if !t.ReadOnly {
			return nil
		}
	}
	return errors.New("no writable task list or calendar is configured")
}
