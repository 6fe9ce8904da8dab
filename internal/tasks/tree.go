package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Nest orders a task list answer as trees: each subtask right under its
// parent (siblings in the order given), at Depth one more than its
// parent's. A subtask whose parent is not among ts (filtered out by due,
// words or completion) stays a tree of its own at the top, its
// ParentSummary saying where it belongs. Each tree takes the place of its
// first task in ts — the most urgent of the tree, as the store orders by
// due — so an overdue subtask brings its parent up with it rather than
// hiding under a parent due later.
func Nest(ts []calendar.Task) []calendar.Task {
	type key struct{ list, uid string }
	at := make(map[key]int, len(ts))
	for i, t := range ts {
		at[key{t.List, t.UID}] = i
	}
	parentOf := func(i int) (int, bool) {
		if ts[i].Parent == "" {
			return 0, false
		}
		p, ok := at[key{ts[i].List, ts[i].Parent}]
		return p, ok && p != i
	}
	children := map[int][]int{}
	var roots []int
	for i := range ts {
		if p, ok := parentOf(i); ok {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	// first is the earliest position of any task of a tree.
	first := map[int]int{}
	var lowest func(i int, seen map[int]bool) int
	lowest = func(i int, seen map[int]bool) int {
		seen[i] = true
		m := i
		for _, c := range children[i] {
			if !seen[c] {
				m = min(m, lowest(c, seen))
			}
		}
		return m
	}
	seen := map[int]bool{}
	for _, r := range roots {
		first[r] = lowest(r, seen)
	}
	slices.SortStableFunc(roots, func(a, b int) int { return first[a] - first[b] })
	out := make([]calendar.Task, 0, len(ts))
	placed := make([]bool, len(ts))
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if placed[i] {
			return
		}
		placed[i] = true
		t := ts[i]
		t.Depth = depth
		out = append(out, t)
		for _, c := range children[i] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	// The store's tree has no cycles; should ts hold one anyway (tasks
	// from several answers), its tasks are listed at the top, once.
	for i := range ts {
		if !placed[i] {
			walk(i, 0)
		}
	}
	return out
}

// withSubtasks is calwrite.ToolFunc for the writes that may take a task's
// subtasks along (with_subtasks): the answer is the task's op with, under
// "subtasks", the ops of the subtasks written; a refusal or failure says
// which subtask ops were journaled before it.
func withSubtasks[A any](name string, w *calwrite.Writer, unconfigured string,
	fn func(ctx context.Context, key string, a A) (calwrite.TaskResult, error)) func(context.Context, tools.Call) (tools.Result, error) {
	return func(ctx context.Context, c tools.Call) (tools.Result, error) {
		var subs []calwrite.Op
		res, err := calwrite.ToolFunc(name, w, unconfigured, func(ctx context.Context, key string, a A) (calwrite.Op, error) {
			r, err := fn(ctx, key, a)
			subs = r.Subtasks
			return r.Op, err
		})(ctx, c)
		if err != nil || len(subs) == 0 {
			return res, err
		}
		var op calwrite.Op
		if json.Unmarshal([]byte(res.Content), &op) == nil && op.ID != 0 {
			b, err := json.Marshal(calwrite.TaskResult{Op: op, Subtasks: subs})
			if err != nil {
				return tools.Result{}, err
			}
			res.Content = string(b)
			return res, nil
		}
		var written []string
		for _, o := range subs {
			written = append(written, fmt.Sprintf("%q %s (journal op %d)", o.Summary, o.State, o.ID))
		}
		res.Content += "; subtasks written first: " + strings.Join(written, ", ")
		return res, nil
	}
}
