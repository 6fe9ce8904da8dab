package app

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/tasks"
	"github.com/hestia-dev/hestia/internal/tools"
)

// webTasksMax caps one task list answer to the web UI.
const webTasksMax = 1000

// TaskDeps are the task tools' and queries' dependencies: tasks live in
// the calendar index and are written through its journal.
func (c *Calendar) TaskDeps() tasks.Deps {
	return tasks.Deps{Store: c.Store, Writer: c.Writer, Now: c.Deps.Now, Loc: c.Deps.Loc}
}

// registerTasks registers the task tools and serves the task routes
// (called from registerCalendar: tasks are synced by its worker).
func (a *App) registerTasks(reg *tools.Registry, c *Calendar) error {
	for _, t := range tasks.Tools(c.TaskDeps()) {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	if a.Server != nil {
		// The authority is built before the connectors and kept once the
		// agent is wired; a request finds it there.
		c.TaskRoutes(a.Server.API(), func() *authority.Authority { return a.core.auth })
	}
	return nil
}

// TaskRoutes serves the task API: GET lists (subtasks after their parent,
// with parent, parent_summary and depth; a parent with subtasks and
// subtasks_done); the POSTs run tasks_add, tasks_complete, tasks_update
// and tasks_delete through the authority as the user's own command (see
// tasks.CommandOrigin), answering the operation (with, for a call with
// with_subtasks, the subtasks' ops under operation.subtasks). Because that
// command stands as the approval of the call, they need the approve scope
// as deciding a card does.
func (c *Calendar) TaskRoutes(mux *http.ServeMux, auth func() *authority.Authority) {
	d := c.TaskDeps()
	mux.HandleFunc("GET /api/tasks", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		done, _ := strconv.ParseBool(q.Get("done"))
		res, err := d.List(r.Context(), tasks.ListArgs{Lists: splitList(q.Get("lists")), Query: q.Get("q"), Due: q.Get("due"),
			IncludeCompleted: done, Limit: limit}, webTasksMax)
		writeTaskResult(w, r, http.StatusOK, res, err)
	})
	command := func(tool, what string, decode func(w http.ResponseWriter, r *http.Request) (any, bool)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := devices.Require(r.Context(), devices.Approve, what+" (the request is its own approval)"); err != nil {
				httpjson.Error(w, http.StatusForbidden, "forbidden", err.Error())
				return
			}
			args, ok := decode(w, r)
			if !ok {
				return // decode answered
			}
			au := auth()
			if au == nil {
				httpjson.Respond(w, r, 0, nil, httpjson.Conflict("unavailable", errors.New("the assistant's tools are not running in this process")))
				return
			}
			// The label names where the command came from on the audit
			// row and in errors; it grants nothing by itself.
			label := "Agenda page"
			if r.Header.Get("X-Hestia-Origin") == "cli" {
				label = "hestia tasks (command line)"
			}
			op, err := tasks.Command(r.Context(), au, label, tool, args)
			writeTaskResult(w, r, http.StatusOK, map[string]any{"operation": op}, err)
		}
	}
	mux.HandleFunc("POST /api/tasks", command("tasks_add", "add a task", func(w http.ResponseWriter, r *http.Request) (any, bool) {
		var a calwrite.TaskAddArgs
		if err := httpjson.Decode(w, r, &a); err != nil {
			httpjson.BadRequest(w, err)
			return nil, false
		}
		return a, true
	}))
	mux.HandleFunc("POST /api/tasks/complete", command("tasks_complete", "complete a task", func(w http.ResponseWriter, r *http.Request) (any, bool) {
		var a calwrite.TaskCompleteArgs
		if err := httpjson.Decode(w, r, &a); err != nil {
			httpjson.BadRequest(w, err)
			return nil, false
		}
		return a, true
	}))
	mux.HandleFunc("POST /api/tasks/update", command("tasks_update", "change a task", func(w http.ResponseWriter, r *http.Request) (any, bool) {
		var a calwrite.TaskUpdateArgs
		if err := httpjson.Decode(w, r, &a); err != nil {
			httpjson.BadRequest(w, err)
			return nil, false
		}
		return a, true
	}))
	mux.HandleFunc("POST /api/tasks/delete", command("tasks_delete", "delete a task", func(w http.ResponseWriter, r *http.Request) (any, bool) {
		var a calwrite.TaskDeleteArgs
		if err := httpjson.Decode(w, r, &a); err != nil {
			httpjson.BadRequest(w, err)
			return nil, false
		}
		return a, true
	}))
}

func writeTaskResult(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	switch {
	case errors.Is(err, tasks.ErrBadArgs):
		err = httpjson.Invalid(err)
	case errors.Is(err, tasks.ErrRefused):
		err = httpjson.Conflict("refused", err)
	case errors.Is(err, tasks.ErrFailed):
		err = httpjson.Conflict("failed", err)
	}
	httpjson.Respond(w, r, status, v, err)
}

// TaskAuthority builds, for a command run without a daemon (`hestia tasks
// add|done|edit|delete`), the authority the daemon would use for the task tools: the
// configured threshold, deny prefixes and trust rules, and the audit
// trail. Only one process may append to the audit chain, so this is for
// when no daemon runs; with one, the command goes to its routes. CalDAV
// lists are mirrored first so that writes know their server.
func (a *App) TaskAuthority(ctx context.Context, c *Calendar) (*authority.Authority, error) {
	if len(a.Config.Calendar.CalDAV) > 0 {
		if _, err := c.MirrorDAV(ctx); err != nil {
			a.Log.Warn("calendarMirror", "err", err) // local lists still work
		}
	}
	reg := tools.NewRegistry()
	for _, t := range tasks.Tools(c.TaskDeps()) {
		if err := reg.Register(t); err != nil {
			return nil, err
		}
	}
	policyDB, err := a.OpenStore(ctx, policy.Schema)
	if err != nil {
		return nil, err
	}
	rules, err := policy.NewRuleStore(ctx, policyDB, a.Now, a.Log)
	if err != nil {
		return nil, err
	}
	threshold, err := policy.ParseThreshold(a.Config.Policy.AutoApprove)
	if err != nil {
		return nil, err
	}
	engine, err := policy.New(policy.Config{AutoApprove: threshold, DenyPrefixes: a.Config.Policy.DenyPrefixes, NoTaint: !a.Config.Safety.Taint},
		rules, policy.NewModes(a.Now), a.Log)
	if err != nil {
		return nil, err
	}
	auditDB, err := a.OpenStore(ctx, audit.Schema)
	if err != nil {
		return nil, err
	}
	return authority.New(authority.Deps{Tools: reg, Policy: engine, Audit: audit.New(auditDB, a.Now, a.Log), Clock: a.Now,
		Log: a.Log.With("component", "authority")}), nil
}
