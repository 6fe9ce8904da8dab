package calendar

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Subtasks (RFC 5545 §3.8.4.5, RFC 9253): a to-do names the to-do it is a
// subtask of with RELATED-TO, RELTYPE=PARENT (the default when RELTYPE is
// absent), as Nextcloud Tasks, Apple Reminders, Thunderbird and tasks.org
// write it. The index keeps the parent as written (todos.parent) and
// resolves the tree per list at query time, so a file read in any order,
// a parent deleted or moved, or another client's mistake never needs a
// re-index:
//
//   - a parent that is not a to-do of the same list (deleted, in another
//     list, never synced) leaves the child at top level;
//   - the to-dos on a cycle (A under B under A, or a to-do under itself)
//     are shown at top level, each once; those hanging below a cycle keep
//     their place under it;
//   - nesting is capped at MaxTaskDepth levels: a to-do that would be
//     deeper starts a new tree at top level (its own subtasks stay under
//     it).
//
// The resolution depends only on the set of to-dos and their parents,
// never on the order they were read in.

// MaxTaskDepth is how many levels tasks nest: a top-level task and up to
// four levels of subtasks below it.
const MaxTaskDepth = 5

// nesting is a to-do's place in its list's tree.
type nesting struct {
	parent string // "" at top level
	depth  int    // 0 at top level
}

// nestTasks resolves the tree of one list from each to-do's parent as
// written (uid → RELATED-TO parent, "" for none).
func nestTasks(parents map[string]string) map[string]nesting {
	raw := func(uid string) string {
		p := parents[uid]
		if _, ok := parents[p]; !ok || p == "" {
			return ""
		}
		return p
	}
	// Each to-do has at most one parent, so following parents from any
	// to-do ends at the top or on a cycle: the to-dos of every cycle are
	// found by one walk each, marking what was walked.
	const (
		unseen = iota
		walking
		walked
	)
	state := make(map[string]int, len(parents))
	onCycle := map[string]bool{}
	for uid := range parents {
		var path []string
		cur := uid
		for cur != "" && state[cur] == unseen {
			state[cur] = walking
			path = append(path, cur)
			cur = raw(cur)
		}
		if cur != "" && state[cur] == walking {
			for i := slices.Index(path, cur); i < len(path); i++ {
				onCycle[path[i]] = true
			}
		}
		for _, n := range path {
			state[n] = walked
		}
	}
	out := make(map[string]nesting, len(parents))
	for uid := range parents {
		// Walk up to a to-do placed already (or the top), then place the
		// walked ones from the top down.
		var path []string
		cur := uid
		for {
			if _, ok := out[cur]; ok {
				break
			}
			path = append(path, cur)
			p := raw(cur)
			if p == "" || onCycle[cur] {
				break
			}
			cur = p
		}
		for i := len(path) - 1; i >= 0; i-- {
			n := path[i]
			p := raw(n)
			if p == "" || onCycle[n] {
				out[n] = nesting{}
				continue
			}
			d := out[p].depth + 1
			if d >= MaxTaskDepth {
				out[n] = nesting{}
				continue
			}
			out[n] = nesting{parent: p, depth: d}
		}
	}
	return out
}

// TaskNode is one to-do in its list's tree.
type TaskNode struct {
	UID     string
	Summary string
	// Parent is where the to-do is nested ("" at top level); Related is
	// its RELATED-TO parent as written (which may name a to-do that is
	// not in the list, or lead into a cycle).
	Parent, Related string
	Done, Recurring bool
	// Depth is 0 at top level.
	Depth int
	// Children are the subtasks' UIDs, by summary.
	Children []string
}

// TaskTree is the tree of one task list's to-dos (their masters: an
// occurrence of a recurring to-do has no place of its own).
type TaskTree struct {
	List  string
	nodes map[string]*TaskNode
}

// Node returns the to-do uid, if the list holds it.
func (t *TaskTree) Node(uid string) (*TaskNode, bool) {
	n, ok := t.nodes[uid]
	return n, ok
}

// Descendants returns a to-do's subtasks, theirs after each, depth first
// in summary order (parents before their subtasks).
func (t *TaskTree) Descendants(uid string) []*TaskNode {
	var out []*TaskNode
	var walk func(string)
	walk = func(u string) {
		n, ok := t.nodes[u]
		if !ok {
			return
		}
		for _, c := range n.Children {
			out = append(out, t.nodes[c])
			walk(c)
		}
	}
	walk(uid) // the tree has no cycles and is at most MaxTaskDepth deep
	return out
}

// Height counts the levels of subtasks below a to-do (0 for none).
func (t *TaskTree) Height(uid string) int {
	h := 0
	for _, d := range t.Descendants(uid) {
		h = max(h, d.Depth-t.nodes[uid].Depth)
	}
	return h
}

// treeRow is one to-do master as the tree reads it.
type treeRow struct {
	uid, parent, summary string
	done, recurring      bool
	sequence, stamp      int64
}

// taskTrees builds the trees of the lists calIDs (every list when nil).
func (s *Store) taskTrees(ctx context.Context, calIDs []int64) (map[int64]*TaskTree, error) {
	q := `SELECT t.calendar_id, c.name, t.uid, t.parent, t.summary, t.done, t.rrule != '' OR (t.rdates != '' AND t.rdates != '[]'), t.sequence, t.dtstamp
		FROM todos t JOIN calendars c ON c.id = t.calendar_id WHERE t.recurrence_id IS NULL`
	var args []any
	if calIDs != nil {
		if len(calIDs) == 0 {
			return map[int64]*TaskTree{}, nil
		}
		q += " AND t.calendar_id IN (" + strings.TrimSuffix(strings.Repeat("?,", len(calIDs)), ",") + ")"
		for _, id := range calIDs {
			args = append(args, id)
		}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading subtasks: %w", err)
	}
	defer rows.Close()
	names := map[int64]string{}
	best := map[int64]map[string]treeRow{}
	for rows.Next() {
		var id int64
		var name string
		var r treeRow
		if err := rows.Scan(&id, &name, &r.uid, &r.parent, &r.summary, &r.done, &r.recurring, &r.sequence, &r.stamp); err != nil {
			return nil, fmt.Errorf("reading subtasks: %w", err)
		}
		names[id] = name
		m := best[id]
		if m == nil {
			m = map[string]treeRow{}
			best[id] = m
		}
		// One version per UID, as Todos picks it: the highest SEQUENCE,
		// then DTSTAMP; a tie goes to the one with the greater parent so
		// that the tree never depends on the order rows come in.
		if b, ok := m[r.uid]; ok && cmp.Or(cmp.Compare(r.sequence, b.sequence), cmp.Compare(r.stamp, b.stamp), strings.Compare(r.parent, b.parent)) <= 0 {
			continue
		}
		m[r.uid] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading subtasks: %w", err)
	}
	out := make(map[int64]*TaskTree, len(best))
	for id, m := range best {
		parents := make(map[string]string, len(m))
		for uid, r := range m {
			parents[uid] = r.parent
		}
		nest := nestTasks(parents)
		t := &TaskTree{List: names[id], nodes: make(map[string]*TaskNode, len(m))}
		for uid, r := range m {
			t.nodes[uid] = &TaskNode{UID: uid, Summary: r.summary, Parent: nest[uid].parent, Related: r.parent, Done: r.done,
				Recurring: r.recurring, Depth: nest[uid].depth}
		}
		for _, n := range t.nodes {
			if n.Parent != "" {
				p := t.nodes[n.Parent]
				p.Children = append(p.Children, n.UID)
			}
		}
		for _, n := range t.nodes {
			slices.SortFunc(n.Children, func(a, b string) int {
				x, y := t.nodes[a], t.nodes[b]
				return cmp.Or(strings.Compare(strings.ToLower(x.Summary), strings.ToLower(y.Summary)), strings.Compare(a, b))
			})
		}
		out[id] = t
	}
	return out, nil
}

// TaskTree returns the tree of one task list's to-dos.
func (s *Store) TaskTree(ctx context.Context, list string) (*TaskTree, error) {
	c, err := s.CalendarByName(ctx, list)
	if err != nil {
		return nil, err
	}
	ts, err := s.taskTrees(ctx, []int64{c.ID})
	if err != nil {
		return nil, err
	}
	if t, ok := ts[c.ID]; ok {
		return t, nil
	}
	return &TaskTree{List: list, nodes: map[string]*TaskNode{}}, nil
}

// placeTasks sets each task's place in its list's tree: its parent (when
// nested), the parent's title, and how many subtasks it has and has done.
func (s *Store) placeTasks(ctx context.Context, ts []Task, calOf map[string]int64) error {
	ids := []int64{} // not nil: only these lists' trees are read
	for _, t := range ts {
		if id, ok := calOf[t.List]; ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	trees, err := s.taskTrees(ctx, ids)
	if err != nil {
		return err
	}
	for i := range ts {
		t := &ts[i]
		t.Parent = ""
		tree := trees[calOf[t.List]]
		if tree == nil {
			continue
		}
		n, ok := tree.nodes[t.UID]
		if !ok {
			continue
		}
		if n.Parent != "" {
			t.Parent, t.ParentSummary = n.Parent, tree.nodes[n.Parent].Summary
		}
		t.Subtasks = len(n.Children)
		for _, c := range n.Children {
			if tree.nodes[c].Done {
				t.SubtasksDone++
			}
		}
	}
	return nil
}
