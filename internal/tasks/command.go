package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
)

// ErrRefused means a command was not run: the user's rules deny the tool
// or ask before it, which a direct command cannot answer.
var ErrRefused = errors.New("refused by policy")

// ErrFailed marks a call the tool itself refused or failed (the text says
// why; it is safe to show).
var ErrFailed = errors.New("task write failed")

// CommandOrigin is a task write the user gave directly — `hestia tasks
// add|done|edit|delete`, a tap on the Agenda page's checkbox, its edit
// form or delete button — naming the call in full. The command is the user's approval of that one call, so it
// travels as a grant: it lifts the risk threshold (a medium-risk write
// needs no card), never a deny prefix, a trust rule that asks, taint or a
// restriction, and nobody is asked (a call still gated is not run).
func CommandOrigin(label, allows string) authority.Origin {
	o := authority.CommandOrigin(label)
	o.Grant = &authority.Grant{ID: label, Allows: allows}
	return o
}

// Command runs one task tool call the user gave directly through the
// authority (so it is decided, audited and journaled like any other) and
// returns the journal op (with, for a call that took a task's subtasks
// along, theirs). A domain error (an ambiguous text, a read-only list, a
// task with open subtasks) wraps ErrFailed; a call the policy kept from
// running wraps ErrRefused; bad arguments wrap ErrBadArgs.
func Command(ctx context.Context, auth *authority.Authority, label, tool string, args any) (calwrite.TaskResult, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return calwrite.TaskResult{}, err
	}
	allows := fmt.Sprintf("%s %s", tool, b)
	out := auth.Invoke(ctx, CommandOrigin(label, allows), authority.Call{Tool: tool, Args: string(b)})
	switch {
	case out.ArgErr != nil:
		return calwrite.TaskResult{}, fmt.Errorf("%w: %w", ErrBadArgs, out.ArgErr)
	case !out.Ran:
		return calwrite.TaskResult{}, fmt.Errorf("%w: %s was not run (%s): %s", ErrRefused, tool, out.Decision, out.Policy.Reason)
	case out.Err != nil:
		return calwrite.TaskResult{}, out.Err
	}
	var res calwrite.TaskResult
	if json.Unmarshal([]byte(out.Result.Content), &res) != nil || res.ID == 0 {
		return calwrite.TaskResult{}, fmt.Errorf("%w: %s", ErrFailed, out.Result.Content)
	}
	if out.Result.IsError {
		return res, fmt.Errorf("%w: %s (journal op %d)", ErrFailed, res.Error, res.ID)
	}
	return res, nil
}
