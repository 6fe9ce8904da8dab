package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/cli/daemonclient"
	"github.com/hestia-dev/hestia/internal/clisock"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/tasks"
)

const tasksUsage = `usage: hestia tasks [COMMAND]
  [list] [WORDS] [--due overdue|today|week] [--list NAME] [--done] [--json]   open tasks, overdue first, subtasks under their parent
  add TEXT [--due DATE] [--priority 1-9] [--list NAME] [--notes TEXT] [--parent UID|TEXT] [--json]
                                                                             add a task (--parent: a subtask, in the parent's list)
  done UID|TEXT [--with-subtasks] [--list NAME] [--json]                     mark a task done (--with-subtasks: its open subtasks too)
  edit UID|TEXT [--summary S] [--due DATE|none] [--priority 0-9] [--notes TEXT] [--reopen] [--parent UID|TEXT|none] [--list NAME] [--json]
                                                                             change a task (0, none and "" clear; --parent none: to the top)
  delete UID|TEXT [--series] [--with-subtasks] [--list NAME] [--json]        delete a task (--series: a recurring one, every occurrence;
                                                                             --with-subtasks: its subtasks too)
Tasks are the VTODOs of your calendar folders and CalDAV accounts (hestia cal sync reads them).
TEXT is words of a task's title that match one open task (one completed task with --reopen).
A task with open subtasks is completed, and one with any subtasks deleted, only with --with-subtasks.`

// runTasks lists tasks from the calendar index (like hestia cal, safe
// beside a running daemon) and writes them through the task tools: with a
// daemon, through its routes; without one, through an authority built
// here. Either way the command is the user's approval of that one call.
func runTasks(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 && isHelpArg(args[0]) {
		// The subcommands, rather than the flags of list alone.
		fmt.Fprintln(env.Stdout, tasksUsage)
		return nil
	}
	sub, rest := "list", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, rest = args[0], args[1:]
	}
	switch sub {
	case "list":
		return tasksList(ctx, env, rest)
	case "add":
		return tasksAdd(ctx, env, rest)
	case "done", "complete":
		return tasksDone(ctx, env, rest)
	case "edit":
		return tasksEdit(ctx, env, rest)
	case "delete":
		return tasksDelete(ctx, env, rest)
	}
	return usagef("unknown tasks command %q\n%s", sub, tasksUsage)
}

func tasksList(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("tasks list")
	due := fs.String("due", "", "only tasks due: overdue, today or week (today and week include overdue ones)")
	list := fs.String("list", "", "only these lists (comma-separated)")
	done := fs.Bool("done", false, "include completed tasks")
	limit := fs.Int("limit", calendar.DefaultMaxTasks, "at most this many tasks")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	c, err := a.OpenCalendar(ctx)
	if err != nil {
		return err
	}
	la := tasks.ListArgs{Query: strings.Join(fs.Args(), " "), Due: *due, IncludeCompleted: *done, Limit: *limit}
	if *list != "" {
		la.Lists = strings.Split(*list, ",")
	}
	res, err := c.TaskDeps().List(ctx, la, calendar.DefaultMaxTasks)
	if err != nil {
		return calErr(err)
	}
	if *asJSON {
		return printJSON(env.Stdout, res)
	}
	printTasks(env.Stdout, res, c.Deps.Now(), c.Deps.Loc)
	return nil
}

// taskGroup is the heading a task is listed under.
func taskGroup(t calendar.Task, today time.Time) string {
	switch {
	case t.Done:
		return "Completed"
	case t.Overdue:
		return "Overdue"
	case t.Due == nil:
		return "No due date"
	case t.Due.Before(today.AddDate(0, 0, 1)):
		return "Today"
	case t.Due.Before(today.AddDate(0, 0, 7)):
		return "Next 7 days"
	}
	return "Later"
}

// groupRank orders the headings as they are listed.
func groupRank(g string) int {
	switch g {
	case "Overdue":
		return 0
	case "Today":
		return 1
	case "Next 7 days":
		return 2
	case "Later":
		return 3
	case "No due date":
		return 4
	}
	return 5 // Completed
}

// treeGroup is the heading of the tree of tasks starting at ts[0] (the
// task and the subtasks that follow it, deeper): its most urgent task's,
// so an overdue subtask is never listed under "No due date". n is how
// many tasks the tree holds.
func treeGroup(ts []calendar.Task, today time.Time) (string, int) {
	best, n := "", 0
	for i, t := range ts {
		if i > 0 && t.Depth == 0 {
			break
		}
		n++
		if g := taskGroup(t, today); best == "" || groupRank(g) < groupRank(best) {
			best = g
		}
	}
	return best, n
}

func printTasks(w io.Writer, res tasks.ListResult, now time.Time, loc *time.Location) {
	if len(res.Lists) == 0 {
		fmt.Fprintln(w, "no task lists: tasks come from calendar folders and CalDAV accounts holding VTODOs (hestia cal import PATH, hestia cal sync)")
		return
	}
	if len(res.Tasks) == 0 {
		fmt.Fprintln(w, "no open tasks")
		return
	}
	y, m, d := now.In(loc).Date()
	today := time.Date(y, m, d, 0, 0, 0, 0, loc)
	group, left := "", 0
	for i, t := range res.Tasks {
		if left == 0 {
			var g string
			if g, left = treeGroup(res.Tasks[i:], today); g != group {
				fmt.Fprintln(w, g)
				group = g
			}
		}
		left--
		box := "[ ]"
		if t.Done {
			box = "[x]"
		}
		when := ""
		if t.Due != nil {
			if t.DueDate {
				when = t.Due.Format("Mon 2006-01-02") + "  "
			} else {
				when = t.Due.In(loc).Format("Mon 2006-01-02 15:04") + "  "
			}
		}
		extra := ""
		if t.Priority > 0 {
			extra += fmt.Sprintf(" !%d", t.Priority)
		}
		if t.Recurring {
			extra += " ⟳"
		}
		if t.Status == calendar.TodoInProcess && t.Percent > 0 {
			extra += fmt.Sprintf(" (%d%%)", t.Percent)
		}
		if t.Subtasks > 0 {
			extra += fmt.Sprintf(" (%d of %d done)", t.SubtasksDone, t.Subtasks)
		}
		if t.Depth == 0 && t.ParentSummary != "" {
			// A subtask listed without its parent (a filter left the
			// parent out): where it belongs.
			extra += " — in " + t.ParentSummary
		}
		fmt.Fprintf(w, "  %s%s %s%s%s  [%s]  %s\n", strings.Repeat("    ", t.Depth), box, when, t.Summary, extra, t.List, t.UID)
	}
	if res.Truncated {
		fmt.Fprintln(w, "(more tasks; narrow with --due, --list or words, or raise --limit)")
	}
}

func tasksAdd(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("tasks add")
	due := fs.String("due", "", "due date (YYYY-MM-DD, today, tomorrow) or time (YYYY-MM-DDTHH:MM)")
	prio := fs.Int("priority", 0, "1 (highest) to 9 (lowest)")
	list := fs.String("list", "", "the task list (needed when there are several)")
	notes := fs.String("notes", "", "notes (the task's description)")
	parent := fs.String("parent", "", "make it a subtask of this task (its uid, or words of its title matching one open task)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	text := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if text == "" {
		return usagef("usage: hestia tasks add TEXT [--due DATE] [--priority N] [--list NAME] [--parent UID|TEXT]")
	}
	a := calwrite.TaskAddArgs{Summary: text, Due: *due, Priority: *prio, List: *list, Notes: *notes, Parent: strings.TrimSpace(*parent)}
	op, err := env.taskCommand(ctx, "tasks_add", "/api/tasks", a)
	return printTaskOp(env, op, err, *asJSON)
}

func tasksDone(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("tasks done")
	list := fs.String("list", "", "the task list")
	subs := fs.Bool("with-subtasks", false, "complete the task's open subtasks too")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	what := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if what == "" {
		return usagef("usage: hestia tasks done UID|TEXT [--with-subtasks] [--list NAME]")
	}
	// A UID is taken as one when the index knows it; anything else is
	// words of a summary, which must match one open task.
	a := calwrite.TaskCompleteArgs{Text: what, List: *list, WithSubtasks: *subs}
	if isUID, err := env.knownTaskUID(ctx, what); err != nil {
		return err
	} else if isUID {
		a = calwrite.TaskCompleteArgs{UID: what, List: *list, WithSubtasks: *subs}
	}
	op, err := env.taskCommand(ctx, "tasks_complete", "/api/tasks/complete", a)
	return printTaskOp(env, op, err, *asJSON)
}

func tasksEdit(ctx context.Context, env *Env, args []string) error {
	const usage = "usage: hestia tasks edit UID|TEXT [--summary S] [--due DATE|none] [--priority 0-9] [--notes TEXT] [--reopen] [--parent UID|TEXT|none] [--list NAME]"
	fs := env.flags("tasks edit")
	summary := fs.String("summary", "", "the new title")
	due := fs.String("due", "", "due date (YYYY-MM-DD, today, tomorrow) or time (YYYY-MM-DDTHH:MM); none clears it")
	prio := fs.Int("priority", 0, "1 (highest) to 9 (lowest); 0 clears it")
	notes := fs.String("notes", "", `the new notes; "" clears them`)
	reopen := fs.Bool("reopen", false, "put a completed task back to open")
	parent := fs.String("parent", "", "move it under this task (uid or words of its title); none makes it a top-level task")
	list := fs.String("list", "", "the task list")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	what := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if what == "" {
		return usagef("%s", usage)
	}
	// Only the flags given change the task: --notes "" clears the notes,
	// an absent --notes leaves them.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	a := calwrite.TaskUpdateArgs{List: *list, Reopen: *reopen}
	if set["summary"] {
		a.Summary = summary
	}
	if set["due"] {
		a.Due = due
	}
	if set["priority"] {
		a.Priority = prio
	}
	if set["notes"] {
		a.Notes = notes
	}
	if set["parent"] {
		a.Parent = parent
	}
	if a.Summary == nil && a.Due == nil && a.Priority == nil && a.Notes == nil && !a.Reopen && a.Parent == nil {
		return usagef("nothing to change: give --summary, --due, --priority, --notes, --reopen or --parent\n%s", usage)
	}
	if isUID, err := env.knownTaskUID(ctx, what); err != nil {
		return err
	} else if isUID {
		a.UID = what
	} else {
		a.Text = what
	}
	op, err := env.taskCommand(ctx, "tasks_update", "/api/tasks/update", a)
	return printTaskOp(env, op, err, *asJSON)
}

func tasksDelete(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("tasks delete")
	series := fs.Bool("series", false, "delete a recurring task: the whole series, every occurrence")
	subs := fs.Bool("with-subtasks", false, "delete the task's subtasks too")
	list := fs.String("list", "", "the task list")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	what := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if what == "" {
		return usagef("usage: hestia tasks delete UID|TEXT [--series] [--with-subtasks] [--list NAME]")
	}
	a := calwrite.TaskDeleteArgs{Text: what, List: *list, Series: *series, WithSubtasks: *subs}
	if isUID, err := env.knownTaskUID(ctx, what); err != nil {
		return err
	} else if isUID {
		a = calwrite.TaskDeleteArgs{UID: what, List: *list, Series: *series, WithSubtasks: *subs}
	}
	op, err := env.taskCommand(ctx, "tasks_delete", "/api/tasks/delete", a)
	return printTaskOp(env, op, err, *asJSON)
}

func (env *Env) knownTaskUID(ctx context.Context, s string) (bool, error) {
	if strings.ContainsAny(s, " \t") {
		return false, nil
	}
	a, err := env.openApp()
	if err != nil {
		return false, err
	}
	defer a.Close()
	c, err := a.OpenCalendar(ctx)
	if err != nil {
		return false, err
	}
	ts, err := c.Store.Todos(ctx, calendar.TodoQuery{UID: s, IncludeDone: true, Limit: 1})
	return len(ts) > 0, err
}

func printTaskOp(env *Env, res calwrite.TaskResult, err error, asJSON bool) error {
	if err != nil {
		if errors.Is(err, tasks.ErrBadArgs) {
			return usagef("%v", err)
		}
		return err
	}
	if asJSON {
		return printJSON(env.Stdout, map[string]any{"operation": res})
	}
	// The subtasks a call took along were written first.
	for _, op := range res.Subtasks {
		printOneTaskOp(env, op, "subtask ")
	}
	printOneTaskOp(env, res.Op, "")
	return nil
}

func printOneTaskOp(env *Env, op calwrite.Op, what string) {
	verb, in := "added", "in"
	switch op.Kind {
	case calwrite.KindTaskComplete:
		verb = "completed"
	case calwrite.KindTaskUpdate:
		verb = "updated"
		if op.Instance != "" {
			verb = "updated the occurrence of " + op.Instance + " of"
		}
	case calwrite.KindTaskDelete:
		verb, in = "deleted", "from"
	}
	switch op.State {
	case calwrite.StateDone:
		fmt.Fprintf(env.Stdout, "%s %s%q %s %s (%s)\n", verb, what, op.Summary, in, op.Calendar, op.UID)
	default:
		// Written but not confirmed: the journal settles it by reading
		// back later; the write is never repeated blindly.
		fmt.Fprintf(env.Stdout, "%s %s%q %s %s (%s): %s, %s (journal op %d; hestia cal ops)\n", verb, what, op.Summary, in, op.Calendar, op.UID, op.State, op.Error, op.ID)
	}
}

// taskCommand runs a task write: through the running daemon's route when
// there is one (it alone appends to the audit chain), else here.
func (env *Env) taskCommand(ctx context.Context, tool, route string, args any) (calwrite.TaskResult, error) {
	if op, ok, err := env.taskViaDaemon(ctx, route, args); ok {
		return op, err
	}
	a, err := env.openApp()
	if err != nil {
		return calwrite.TaskResult{}, err
	}
	defer a.Close()
	c, err := a.OpenCalendar(ctx)
	if err != nil {
		return calwrite.TaskResult{}, err
	}
	auth, err := a.TaskAuthority(ctx, c)
	if err != nil {
		return calwrite.TaskResult{}, err
	}
	return tasks.Command(ctx, auth, "hestia tasks (command line)", tool, args)
}

// taskViaDaemon posts a task write to this home's daemon; ok is false when
// no daemon answers on the socket.
func (env *Env) taskViaDaemon(ctx context.Context, route string, args any) (calwrite.TaskResult, bool, error) {
	paths, err := config.ResolvePaths(env.Getenv)
	if err != nil {
		return calwrite.TaskResult{}, true, err
	}
	if _, err := os.Stat(clisock.Path(paths.Data)); err != nil {
		return calwrite.TaskResult{}, false, nil
	}
	c, err := daemonclient.Socket(paths)
	if err != nil {
		return calwrite.TaskResult{}, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := c.Request(ctx, http.MethodPost, route, args)
	if err != nil {
		return calwrite.TaskResult{}, true, err
	}
	req.Header.Set("X-Hestia-Origin", "cli")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if errors.Is(err, clisock.ErrNoDaemon) {
			return calwrite.TaskResult{}, false, nil
		}
		return calwrite.TaskResult{}, true, fmt.Errorf("calling the daemon: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Operation calwrite.TaskResult `json:"operation"`
	}
	if err := daemonclient.DecodeResponse(resp, &out); err != nil {
		var apiErr *daemonclient.APIError
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusBadRequest {
			return out.Operation, true, fmt.Errorf("%w: %s", tasks.ErrBadArgs, apiErr.Message)
		}
		if errors.As(err, &apiErr) {
			return out.Operation, true, errors.New(apiErr.Message)
		}
		return out.Operation, true, err
	}
	return out.Operation, true, nil
}
