package calwrite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/emersion/go-ical"

	"github.com/hestia-dev/hestia/internal/calendar"
)

// Subtasks (RELATED-TO;RELTYPE=PARENT, RFC 5545 §3.8.4.5, RFC 9253; the
// tree as package calendar resolves it, tasktree.go there):
//
//   - tasks_add with parent writes RELATED-TO;RELTYPE=PARENT:<uid> in the
//     new VTODO, in the parent's list (a parent in another list than the
//     one named is refused: a subtask lives beside its parent);
//   - tasks_update with parent moves a task under another task of its list
//     (never under itself or one of its own subtasks, never deeper than
//     calendar.MaxTaskDepth), or to the top with "none": only the parent
//     relations are replaced, CHILD, SIBLING and other RELATED-TO stay;
//   - tasks_complete and tasks_delete refuse a task with open subtasks (a
//     delete: with any subtasks), naming them, unless the call says
//     with_subtasks. Then each subtask is written as its own journaled op
//     (task_complete or task_delete, deepest first, under a key derived
//     from the call's, so a repeated call writes nothing twice), and the
//     task last; the first subtask that fails stops the call, leaving the
//     task as it was (what was done is said). A repeating subtask is
//     completed at its current occurrence, and deleted (every occurrence)
//     only when the call also says series.

// TaskResult is a task write's journal op and, for a call that took the
// task's subtasks along (with_subtasks), theirs, in the order written.
type TaskResult struct {
	Op
	Subtasks []Op `json:"subtasks,omitempty"`
}

// errAlreadyCompleted marks a completion of a task that is done.
var errAlreadyCompleted = errors.New("already completed")

// isParentRel reports whether a RELATED-TO names the parent: RELTYPE
// PARENT, or none (the default).
func isParentRel(p ical.Prop) bool {
	rt := strings.ToUpper(strings.TrimSpace(p.Params.Get(ical.ParamRelationshipType)))
	return rt == "" || rt == "PARENT"
}

// parentRels returns a component's parent relations as written.
func parentRels(c *ical.Component) string {
	var vs []string
	for _, p := range c.Props.Values(ical.PropRelatedTo) {
		if isParentRel(p) {
			vs = append(vs, p.Value)
		}
	}
	return strings.Join(vs, "\n")
}

// setParent replaces a component's parent relations with one naming uid
// ("" leaves none); its other relations stay.
func setParent(c *ical.Component, uid string) {
	var kept []ical.Prop
	for _, p := range c.Props.Values(ical.PropRelatedTo) {
		if !isParentRel(p) {
			kept = append(kept, p)
		}
	}
	if uid != "" {
		p := ical.NewProp(ical.PropRelatedTo)
		p.SetText(uid)
		p.Params.Set(ical.ParamRelationshipType, "PARENT")
		kept = append(kept, *p)
	}
	if len(kept) == 0 {
		c.Props.Del(ical.PropRelatedTo)
		return
	}
	c.Props[ical.PropRelatedTo] = kept
}

// resolveParent finds the task a parent value names: a UID (of a task
// in any list; with list, that list's first), else words of the title of
// one open task (with list breaking a tie). A completed parent is
// refused.
func (w *Writer) resolveParent(ctx context.Context, v, list string) (calendar.Task, error) {
	v = strings.TrimSpace(v)
	var found []calendar.Task
	if !strings.ContainsAny(v, " \t") {
		ts, err := w.cal.Todos(ctx, calendar.TodoQuery{UID: v, IncludeDone: true})
		if err != nil {
			return calendar.Task{}, err
		}
		found = ts
		if len(ts) > 1 && list != "" {
			found = nil
			for _, t := range ts {
				if t.List == list {
					found = append(found, t)
				}
			}
		}
		if len(found) > 1 {
			var names []string
			for _, t := range ts {
				names = append(names, t.List)
			}
			return calendar.Task{}, fmt.Errorf("the parent task %q is in several lists (%s): name the list", v, strings.Join(names, ", "))
		}
	}
	var t calendar.Task
	if len(found) == 1 {
		t = found[0]
	} else {
		var err error
		t, err = w.findTask(ctx, "", v, "", false)
		if err != nil && list != "" {
			if lt, lerr := w.findTask(ctx, "", v, list, false); lerr == nil {
				t, err = lt, nil
			}
		}
		if err != nil {
			return t, fmt.Errorf("parent: %w", err)
		}
	}
	if t.Done {
		return t, fmt.Errorf("the parent task %q is completed: reopen it first (tasks_update with reopen)", t.Summary)
	}
	return t, nil
}

// checkDepth refuses to hang levels more levels of tasks under parent when
// that nests deeper than calendar.MaxTaskDepth.
func (w *Writer) checkDepth(ctx context.Context, parent calendar.Task, levels int) error {
	tree, err := w.cal.TaskTree(ctx, parent.List)
	if err != nil {
		return err
	}
	n, ok := tree.Node(parent.UID)
	if ok && n.Depth+levels >= calendar.MaxTaskDepth {
		return fmt.Errorf("task %q is %d levels down already: subtasks nest at most %d levels", parent.Summary, n.Depth+1, calendar.MaxTaskDepth)
	}
	return nil
}

// subtasks returns a task's subtasks, theirs included (parents before
// their subtasks): the open ones only with openOnly.
func (w *Writer) subtasks(ctx context.Context, t calendar.Task, openOnly bool) ([]*calendar.TaskNode, error) {
	tree, err := w.cal.TaskTree(ctx, t.List)
	if err != nil {
		return nil, err
	}
	var out []*calendar.TaskNode
	for _, n := range tree.Descendants(t.UID) {
		if !openOnly || !n.Done {
			out = append(out, n)
		}
	}
	return out, nil
}

// count says "1 subtask", "3 subtasks".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// nodeNames lists tasks by title for a message or a card: the first
// five, then how many more.
func nodeNames(ns []*calendar.TaskNode) string {
	var names []string
	for i, n := range ns {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(ns)-5))
			break
		}
		names = append(names, quoted(n.Summary))
	}
	return strings.Join(names, ", ")
}

func recurringNodes(ns []*calendar.TaskNode) int {
	n := 0
	for _, x := range ns {
		if x.Recurring {
			n++
		}
	}
	return n
}

// planMove makes the change of a task's parent (a tasks_update with
// parent) on the master and the open overrides that inherited its parent,
// notes it and returns the parent written.
func (w *Writer) planMove(ctx context.Context, p *plannedTaskWrite, cal *ical.Calendar, master *ical.Component, td *calendar.Todo, ch taskChanges, changed map[*ical.Component]bool) (string, error) {
	tree, err := w.cal.TaskTree(ctx, p.task.List)
	if err != nil {
		return "", err
	}
	label := func(uid string) string {
		if uid == "" {
			return "none"
		}
		if n, ok := tree.Node(uid); ok {
			return quoted(n.Summary)
		}
		return quoted(uid) + " (not in the list)"
	}
	to := ""
	if !ch.toTop {
		pt, err := w.resolveParent(ctx, ch.parent, p.task.List)
		if err != nil {
			return "", err
		}
		switch {
		case pt.List != p.task.List:
			return "", fmt.Errorf("the parent task %q is in list %q, not %q: a task moves only under a task of its own list", pt.Summary, pt.List, p.task.List)
		case pt.UID == p.task.UID:
			return "", fmt.Errorf("task %q cannot be a subtask of itself", p.task.Summary)
		}
		for _, d := range tree.Descendants(p.task.UID) {
			if d.UID == pt.UID {
				return "", fmt.Errorf("task %q is a subtask of %q: moving %q under it would make a loop", pt.Summary, p.task.Summary, p.task.Summary)
			}
		}
		if err := w.checkDepth(ctx, pt, 1+tree.Height(p.task.UID)); err != nil {
			return "", err
		}
		to = pt.UID
	}
	if to == td.Parent {
		return td.Parent, nil // nothing to move; other changes may stand
	}
	raw := parentRels(master)
	for _, c := range cal.Children {
		if c.Name != ical.CompToDo || strings.TrimSpace(rawValue(c, ical.PropUID)) != p.task.UID {
			continue
		}
		if c != master && (componentDone(c) || parentRels(c) != raw) {
			continue // history, or the occurrence's own relation
		}
		setParent(c, to)
		changed[c] = true
	}
	p.changes = append(p.changes, fmt.Sprintf("parent %s → %s", label(td.Parent), label(to)))
	return to, nil
}

// subtaskKey is the journal key of the write of one subtask made by the
// call key.
func subtaskKey(key, uid string) string { return key + "/subtask/" + uid }

// subtaskOps returns the ops a call made on subtasks, in the order made.
func (w *Writer) subtaskOps(ctx context.Context, key string) ([]Op, error) {
	prefix := subtaskKey(key, "")
	rows, err := w.db.QueryContext(ctx, `SELECT `+opCols+` FROM ops WHERE substr(key, 1, length(?)) = ? ORDER BY id`, prefix, prefix)
	if err != nil {
		return nil, fmt.Errorf("reading calendar journal: %w", err)
	}
	defer rows.Close()
	var out []Op
	for rows.Next() {
		o, err := scanOp(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// replayed answers a call made before from the journal: its op and the
// ops of its subtasks.
func (w *Writer) replayed(ctx context.Context, key string) (TaskResult, bool, error) {
	prev, ok, err := w.byKey(ctx, key)
	if err != nil || !ok {
		return TaskResult{}, false, err
	}
	subs, err := w.subtaskOps(ctx, key)
	return TaskResult{Op: prev, Subtasks: subs}, true, err
}

// sweep writes each subtask (deepest first) through write, under keys
// derived from key; a subtask journaled by an earlier run of the same call
// is not written again. It stops at the first that is not done.
func (w *Writer) sweep(ctx context.Context, key string, subs []*calendar.TaskNode, verb string,
	write func(n *calendar.TaskNode, key string) (Op, bool, error)) ([]Op, error) {
	var ops []Op
	stopped := func(n *calendar.TaskNode, err error) ([]Op, error) {
		done := "no subtask was " + verb
		if len(ops) > 0 {
			done = count(len(ops), "subtask") + " " + verb + " before it"
		}
		return ops, fmt.Errorf("subtask %q: %w; %s, and the task itself is left as it was", n.Summary, err, done)
	}
	for i := len(subs) - 1; i >= 0; i-- {
		n := subs[i]
		k := subtaskKey(key, n.UID)
		if prev, ok, err := w.byKey(ctx, k); err != nil {
			return ops, err
		} else if ok && prev.State == StateDone {
			ops = append(ops, prev)
			continue
		}
		op, skipped, err := write(n, k)
		switch {
		case skipped:
			continue
		case err == nil && op.State != StateDone:
			err = fmt.Errorf("journal op %d is %s: %s", op.ID, op.State, op.Error)
		}
		if op.ID != 0 {
			ops = append(ops, op)
		}
		if err != nil {
			return stopped(n, err)
		}
	}
	return ops, nil
}

// CompleteTask runs tasks_complete (see CompleteTaskWithSubtasks) and
// returns the task's op.
func (w *Writer) CompleteTask(ctx context.Context, key string, a TaskCompleteArgs) (Op, error) {
	r, err := w.CompleteTaskWithSubtasks(ctx, key, a)
	return r.Op, err
}

// CompleteTaskWithSubtasks runs tasks_complete: the task, and with
// with_subtasks its open subtasks first, each its own op.
func (w *Writer) CompleteTaskWithSubtasks(ctx context.Context, key string, a TaskCompleteArgs) (TaskResult, error) {
	if r, ok, err := w.replayed(ctx, key); err != nil || ok {
		return r, err
	}
	p, err := w.planCompletion(ctx, a, false)
	if err != nil {
		return TaskResult{}, err
	}
	var res TaskResult
	if len(p.subtasks) > 0 {
		list := p.task.List
		res.Subtasks, err = w.sweep(ctx, key, p.subtasks, "completed", func(n *calendar.TaskNode, k string) (Op, bool, error) {
			sp, err := w.planCompletion(ctx, TaskCompleteArgs{UID: n.UID, List: list}, true)
			if errors.Is(err, errAlreadyCompleted) {
				return Op{}, true, nil // done meanwhile, as asked
			}
			if err != nil {
				return Op{}, false, err
			}
			op, err := w.completeTask(ctx, k, sp)
			return op, false, err
		})
		if err != nil {
			return res, err
		}
		// Read again: a subtask's write may have changed the task's file
		// (one holding several to-dos).
		if p, err = w.planCompletion(ctx, TaskCompleteArgs{UID: p.task.UID, List: list}, true); err != nil {
			return res, fmt.Errorf("its subtasks were completed (%d), the task itself not: %w", len(res.Subtasks), err)
		}
	}
	res.Op, err = w.completeTask(ctx, key, p)
	return res, err
}

// DeleteTask runs tasks_delete (see DeleteTaskWithSubtasks) and returns
// the task's op.
func (w *Writer) DeleteTask(ctx context.Context, key string, a TaskDeleteArgs) (Op, error) {
	r, err := w.DeleteTaskWithSubtasks(ctx, key, a)
	return r.Op, err
}

// DeleteTaskWithSubtasks runs tasks_delete: the task, and with
// with_subtasks its subtasks first, each its own op.
func (w *Writer) DeleteTaskWithSubtasks(ctx context.Context, key string, a TaskDeleteArgs) (TaskResult, error) {
	// A repeated call is answered from the journal: the task is gone.
	if r, ok, err := w.replayed(ctx, key); err != nil || ok {
		return r, err
	}
	p, err := w.planDelete(ctx, a, false)
	if err != nil {
		return TaskResult{}, err
	}
	var res TaskResult
	if len(p.subtasks) > 0 {
		list := p.task.List
		res.Subtasks, err = w.sweep(ctx, key, p.subtasks, "deleted", func(n *calendar.TaskNode, k string) (Op, bool, error) {
			sp, err := w.planDelete(ctx, TaskDeleteArgs{UID: n.UID, List: list, Series: n.Recurring}, true)
			if err != nil {
				return Op{}, false, err
			}
			op, err := w.deleteTask(ctx, k, sp)
			return op, false, err
		})
		if err != nil {
			return res, err
		}
		if p, err = w.planDelete(ctx, TaskDeleteArgs{UID: p.task.UID, List: list, Series: a.Series}, true); err != nil {
			return res, fmt.Errorf("its subtasks were deleted (%d), the task itself not: %w", len(res.Subtasks), err)
		}
	}
	res.Op, err = w.deleteTask(ctx, key, p)
	return res, err
}
