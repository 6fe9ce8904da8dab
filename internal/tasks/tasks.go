// Package tasks is the to-do surface over the calendar index: the agent's
// tasks_list (read-only) and tasks_add / tasks_complete / tasks_update /
// tasks_delete (writes), and the queries the CLI (`hestia tasks`) and the
// Agenda page share.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// To-dos are VTODOs in the user's calendar collections, indexed by package calendar from the
// same vdir folders and CalDAV mirrors as events (Radicale, Nextcloud, iCloud Reminders lists;
// Google Tasks is not CalDAV and is not read). A collection holding to-dos is a task list.
// Writes are calwrite's: journaled in calendarops.db (task_create, task_complete, task_update,
// task_delete), conditional (a task changed since it was read is never overwritten),
// confirmed by reading back, reaching the server through the same davsync backend. The tools are
// gated by their risk like calendar writes; the CLI and the Agenda page run the same tools through
// the authority with the user's own command standing as the approval of that one call (a grant
// that lifts the risk threshold only; deny prefixes and trust rules still hold). A recurring
// to-do is shown at one occurrence and completing it completes that occurrence; changing it
// changes the series (the card says so), and deleting it needs series: true and deletes every
// occurrence (without it the delete is refused, and completing the occurrence suggested).
// Subtasks are RELATED-TO;RELTYPE=PARENT (package calendar resolves the tree per list, guarding
// against cycles and nesting past 5 levels): tasks_list answers each task's parent and lists
// subtasks under their parents (Nest); tasks_add and tasks_update take parent; completing or
// deleting a task with (open) subtasks is refused, naming them, unless with_subtasks: then each
// subtask is written as its own journaled op before the task, and the answer lists their ops.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Limits for the agent.
const (
	ListMax          = 100
	descriptionChars = 500
)

// Deps are what the tools and queries work with.
type Deps struct {
	Store *calendar.Store
	// Writer makes the writes; nil leaves them unavailable.
	Writer *calwrite.Writer
	Now    func() time.Time
	// Loc is the user's zone ("today" is its day).
	Loc *time.Location
}

// Due windows of a list query.
const (
	DueAny     = ""
	DueOverdue = "overdue"
	DueToday   = "today" // overdue ones included
	DueWeek    = "week"  // the next 7 days, overdue ones included
)

// ListArgs are tasks_list's arguments.
type ListArgs struct {
	Lists            []string `json:"lists,omitempty"`
	Query            string   `json:"query,omitempty"`
	Due              string   `json:"due,omitempty"`
	IncludeCompleted bool     `json:"include_completed,omitempty"`
	Limit            int      `json:"limit,omitempty"`
}

// ListResult is tasks_list's answer.
type ListResult struct {
	Tasks []calendar.Task `json:"tasks"`
	// Lists names every task list (collections holding to-dos).
	Lists []string `json:"lists"`
	// Truncated says more tasks matched than Limit.
	Truncated bool `json:"truncated,omitempty"`
}

// ErrBadArgs marks arguments a caller got wrong.
var ErrBadArgs = calendar.ErrBadQuery

func (d Deps) loc() *time.Location {
	if d.Loc == nil {
		return d.Store.Floating()
	}
	return d.Loc
}

// List answers a task query with up to max tasks (ListMax for the
// model when max <= 0).
func (d Deps) List(ctx context.Context, a ListArgs, max int) (ListResult, error) {
	if max <= 0 {
		max = ListMax
	}
	if a.Limit <= 0 || a.Limit > max {
		a.Limit = max
	}
	q := calendar.TodoQuery{Lists: a.Lists, Text: a.Query, IncludeDone: a.IncludeCompleted, Limit: a.Limit + 1}
	y, m, day := d.Now().In(d.loc()).Date()
	today := time.Date(y, m, day, 0, 0, 0, 0, d.loc())
	switch strings.ToLower(strings.TrimSpace(a.Due)) {
	case DueAny, "all", "any":
	case DueOverdue:
		q.DueBefore = today.AddDate(0, 0, 1)
	case DueToday:
		q.DueBefore = today.AddDate(0, 0, 1)
	case DueWeek:
		q.DueBefore = today.AddDate(0, 0, 7)
	default:
		return ListResult{}, fmt.Errorf("%w: due is overdue, today, week or all, not %q", ErrBadArgs, a.Due)
	}
	ts, err := d.Store.Todos(ctx, q)
	if err != nil {
		return ListResult{}, err
	}
	if strings.EqualFold(strings.TrimSpace(a.Due), DueOverdue) {
		kept := ts[:0]
		for _, t := range ts {
			if t.Overdue {
				kept = append(kept, t)
			}
		}
		ts = kept
	}
	res := ListResult{Tasks: ts}
	if len(res.Tasks) > a.Limit {
		res.Tasks, res.Truncated = res.Tasks[:a.Limit], true
	}
	res.Tasks = Nest(res.Tasks)
	if res.Tasks == nil {
		res.Tasks = []calendar.Task{}
	}
	if res.Lists, err = d.Store.TaskLists(ctx); err != nil {
		return res, err
	}
	if res.Lists == nil {
		res.Lists = []string{}
	}
	return res, nil
}

func trim(ts []calendar.Task) {
	for i := range ts {
		if r := []rune(ts[i].Description); len(r) > descriptionChars {
			ts[i].Description = string(r[:descriptionChars]) + "…"
		}
	}
}

// Tools returns tasks_list and the writes tasks_add, tasks_complete,
// tasks_update and tasks_delete bound to d.
// d.Store may be nil (specs only: the security suite); the tools then
// report themselves unavailable.
func Tools(d Deps) []tools.Tool {
	// Task text comes from shared lists and other people's clients as
	// calendar text does, so it is given to the model as outside content.
	read := tools.Spec{Name: "tasks_list", Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, UntrustedOutput: true, MaxResult: 30000,
		Schema: json.RawMessage(listSchema),
		Description: "List the user's open tasks (to-dos from their task lists), due first: overdue ones, then by due date, undated last. " +
			"Filter by due (overdue, today, week), lists, or words in the title, notes and categories; include_completed adds done ones. " +
			"A recurring task appears once, at its next occurrence. A subtask has parent (its parent's uid) and parent_summary, and follows its parent (depth counts the levels); " +
			"a parent has subtasks and subtasks_done."}
	// Writes: not read-only (policy gates them; taint forces a card once
	// outside content was read) and Egress (CalDAV lists are on servers).
	base := tools.Spec{ReadOnly: false, Egress: true, Risk: tools.RiskMedium, MaxResult: 4000}
	add := base
	add.Name, add.Schema = "tasks_add", json.RawMessage(addSchema)
	add.Description = "Add a task to the user's task list (asks the user to approve). due is a date (YYYY-MM-DD, today, tomorrow) or a time (YYYY-MM-DDTHH:MM); priority 1 (highest) to 9; list names the task list when there are several; " +
		"parent (a task's uid, or words of its title matching one open task) makes it a subtask, in the parent's list. Journaled and confirmed by reading the task back."
	done := base
	done.Name, done.Schema = "tasks_complete", json.RawMessage(completeSchema)
	done.Description = "Mark a task done by uid (from tasks_list), or by text: words of its title that match one open task only. A recurring task's current occurrence is completed and the series goes on. " +
		"A task with open subtasks is completed only with with_subtasks: true, which completes them too. Asks the user to approve."
	update := base
	update.Name, update.Schema = "tasks_update", json.RawMessage(updateSchema)
	update.Description = "Change a task, by uid (from tasks_list) or by text (words of its title matching one open task; with reopen, one completed task): " +
		"summary, due (as tasks_add, or \"none\" to clear it), priority (1–9, 0 clears it), notes (\"\" clears them), reopen (a completed task back to open), " +
		"parent (move it under another task of its list, by uid or words of its title; \"none\" makes it a top-level task). " +
		"A recurring task changes as a whole series; a new due moves the series. Asks the user to approve; journaled and confirmed by reading the task back."
	del := base
	del.Name, del.Schema = "tasks_delete", json.RawMessage(deleteSchema)
	del.Description = "Delete a task by uid or by text (words of its title matching one open task). A recurring task is deleted with every occurrence, and only with series: true " +
		"(to skip one occurrence, complete it with tasks_complete). A task with subtasks is deleted only with with_subtasks: true, which deletes them too. Asks the user to approve; confirmed by the task being gone."
	const unconfigured = "task writes are not configured"
	unavailable := func(ctx context.Context) error {
		if d.Store == nil || d.Writer == nil {
			return errors.New(unconfigured)
		}
		return d.Writer.CanWrite(ctx)
	}
	return []tools.Tool{
		&tools.Func{S: read, Check: func(context.Context) error {
			if d.Store == nil {
				return errors.New("tasks are not configured")
			}
			return nil
		}, Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			var a ListArgs
			if err := json.Unmarshal(c.Args, &a); err != nil {
				return tools.Result{Content: fmt.Sprintf("arguments for tasks_list could not be read: %v", err), IsError: true}, nil
			}
			res, err := d.List(ctx, a, ListMax)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return tools.Result{}, err
				}
				return tools.Result{Content: err.Error(), IsError: true}, nil
			}
			trim(res.Tasks)
			b, err := json.Marshal(res)
			if err != nil {
				return tools.Result{}, err
			}
			return tools.Result{Content: tools.Cap(string(b), read.MaxResult)}, nil
		}},
		&tools.Func{S: add, Check: unavailable,
			Fn: calwrite.ToolFunc(add.Name, d.Writer, unconfigured, func(ctx context.Context, key string, a calwrite.TaskAddArgs) (calwrite.Op, error) {
				return d.Writer.AddTask(ctx, key, a)
			}),
			PreviewF: preview(d.Writer, (*calwrite.Writer).PreviewAddTask)},
		&tools.Func{S: done, Check: unavailable,
			Fn: withSubtasks(done.Name, d.Writer, unconfigured, func(ctx context.Context, key string, a calwrite.TaskCompleteArgs) (calwrite.TaskResult, error) {
				return d.Writer.CompleteTaskWithSubtasks(ctx, key, a)
			}),
			PreviewF: preview(d.Writer, (*calwrite.Writer).PreviewCompleteTask)},
		&tools.Func{S: update, Check: unavailable,
			Fn: calwrite.ToolFunc(update.Name, d.Writer, unconfigured, func(ctx context.Context, key string, a calwrite.TaskUpdateArgs) (calwrite.Op, error) {
				return d.Writer.UpdateTask(ctx, key, a)
			}),
			PreviewF: preview(d.Writer, (*calwrite.Writer).PreviewUpdateTask)},
		&tools.Func{S: del, Check: unavailable,
			Fn: withSubtasks(del.Name, d.Writer, unconfigured, func(ctx context.Context, key string, a calwrite.TaskDeleteArgs) (calwrite.TaskResult, error) {
				return d.Writer.DeleteTaskWithSubtasks(ctx, key, a)
			}),
			PreviewF: preview(d.Writer, (*calwrite.Writer).PreviewDeleteTask)},
	}
}

const listSchema = `{"type":"object","additionalProperties":false,"properties":{
"lists":{"type":"array","items":{"type":"string","maxLength":200},"maxItems":20},
"query":{"type":"string","maxLength":300,"description":"words in the title, notes or categories"},
"due":{"type":"string","enum":["overdue","today","week","all"],"description":"today and week include overdue tasks; default all"},
"include_completed":{"type":"boolean"},
"limit":{"type":"integer","minimum":1,"maximum":100}}}`

const addSchema = `{"type":"object","additionalProperties":false,"required":["summary"],"properties":{
"summary":{"type":"string","minLength":1,"maxLength":500},
"due":{"type":"string","maxLength":40,"description":"YYYY-MM-DD, today, tomorrow, or YYYY-MM-DDTHH:MM"},
"priority":{"type":"integer","minimum":0,"maximum":9,"description":"1 highest, 9 lowest, 0 none"},
"list":{"type":"string","maxLength":200},
"notes":{"type":"string","maxLength":4000},
"parent":{"type":"string","minLength":1,"maxLength":500,"description":"the parent task's uid, or words of its title matching one open task: the new task is its subtask"}}}`

const completeSchema = `{"type":"object","additionalProperties":false,"properties":{
"uid":{"type":"string","minLength":1,"maxLength":500},
"text":{"type":"string","minLength":1,"maxLength":300,"description":"words of the task's title, when they match one open task"},
"list":{"type":"string","maxLength":200},
"with_subtasks":{"type":"boolean","description":"required to complete a task with open subtasks: they are completed too"}}}`

const updateSchema = `{"type":"object","additionalProperties":false,"properties":{
"uid":{"type":"string","minLength":1,"maxLength":500},
"text":{"type":"string","minLength":1,"maxLength":300,"description":"words of the task's title, when they match one open task (one completed task with reopen)"},
"list":{"type":"string","maxLength":200},
"summary":{"type":"string","minLength":1,"maxLength":500,"description":"the new title"},
"due":{"type":"string","minLength":1,"maxLength":40,"description":"YYYY-MM-DD, today, tomorrow, YYYY-MM-DDTHH:MM, or none to clear it"},
"priority":{"type":"integer","minimum":0,"maximum":9,"description":"1 highest, 9 lowest, 0 clears it"},
"notes":{"type":"string","maxLength":4000,"description":"replaces the notes; empty clears them"},
"reopen":{"type":"boolean","description":"put a completed task back to open"},
"parent":{"type":"string","minLength":1,"maxLength":500,"description":"move it under this task (uid, or words of its title matching one open task), or none to make it a top-level task"}}}`

const deleteSchema = `{"type":"object","additionalProperties":false,"properties":{
"uid":{"type":"string","minLength":1,"maxLength":500},
"text":{"type":"string","minLength":1,"maxLength":300,"description":"words of the task's title, when they match one open task"},
"list":{"type":"string","maxLength":200},
"series":{"type":"boolean","description":"required to delete a recurring task (or, with with_subtasks, a recurring subtask): every occurrence goes"},
"with_subtasks":{"type":"boolean","description":"required to delete a task with subtasks: they are deleted too"}}}`

// preview is a write tool's card text: the arguments read as A and
// described by f; "" (the generic card) when they do not read or there
// is no writer.
func preview[A any](w *calwrite.Writer, f func(*calwrite.Writer, context.Context, A) string) func(context.Context, json.RawMessage) string {
	return func(ctx context.Context, raw json.RawMessage) string {
		var a A
		if w == nil || json.Unmarshal(raw, &a) != nil {
			return ""
		}
		return f(w, ctx, a)
	}
}
