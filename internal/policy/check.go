package policy

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// PathResolver turns a path argument into the absolute path a tool would
// touch (internal/pathpolicy implements it).
type PathResolver interface {
	ResolveForWrite(path string) (string, error)
	// Resolve is the read check: a read-only tool's path is refused only
	// where reading is (a place where written files run code may be read).
	Resolve(path string) (string, error)
	Expand(path string) (string, error)
}

// Checked is a call after argument validation and a policy decision.
type Checked struct {
	Tool   tools.Tool // nil when unknown
	Args   json.RawMessage
	Result Result
	// ArgErr is set when the arguments were refused; the tool must not run
	// and the error text goes back to the model.
	ArgErr error
}

// Check validates raw arguments for the named tool and decides the call.
// The agent and the dry-run endpoint both use it, so `hestia policy test`
// shows exactly what a real call would get.
func (e *Engine) Check(ctx context.Context, reg *tools.Registry, paths PathResolver, name, raw, chatID string) Checked {
	t, err := reg.Get(name)
	if err != nil {
		t = nil
	}
	var c Checked
	c.Tool = t
	if t != nil {
		_, canon, aerr := tools.DecodeArgs(name, raw, t.Spec().Schema)
		if aerr != nil {
			c.ArgErr = aerr
			c.Result = Result{Tool: name, Decision: Deny, Source: SourceInvalidArgs, Risk: t.Spec().Risk.String(), Reason: aerr.Error()}
			return c
		}
		c.Args = canon
	} else {
		c.Args = json.RawMessage("{}")
	}
	in := Input{ToolName: name, Tool: t, Args: c.Args, ChatID: chatID}
	if t != nil {
		var refused error
		in.Paths, refused = resolvePaths(paths, t.Spec(), c.Args)
		if refused != nil {
			// A sensitive or out-of-bounds path is refused before anyone is
			// asked: approving it could not make it run anyway.
			c.Result = Result{Tool: name, Decision: Deny, Source: SourcePathPolicy, Risk: t.Spec().Risk.String(), Reason: refused.Error()}
			return c
		}
	}
	c.Result = e.Decide(ctx, in)
	return c
}

// ResolvedPaths resolves the spec's path arguments for scope matching. A
// path that cannot be resolved is still reported in expanded form so that a
// scope rule never matches by accident of a resolution failure.
func ResolvedPaths(paths PathResolver, spec tools.Spec, args json.RawMessage) []string {
	out, _ := resolvePaths(paths, spec, args)
	return out
}

// resolvePaths also reports the first path the path policy refuses.
func resolvePaths(paths PathResolver, spec tools.Spec, args json.RawMessage) ([]string, error) {
	vals := spec.PathValues(args)
	if paths == nil || len(vals) == 0 {
		return vals, nil
	}
	var refused error
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		r, err := paths.ResolveForWrite(v)
		if err != nil && spec.ReadOnly && errors.Is(err, pathpolicy.ErrExecutes) {
			// Reading a place where written files run code is fine
			// (~/.gitconfig, ~/.local/bin) unless reading is refused too.
			r, err = paths.Resolve(v)
		}
		if err != nil && refused == nil && (errors.Is(err, pathpolicy.ErrSensitive) || errors.Is(err, pathpolicy.ErrOutsideRoots)) {
			refused = err
		}
		if err == nil {
			out = append(out, r)
		} else if x, err2 := paths.Expand(v); err2 == nil {
			out = append(out, x)
		} else {
			out = append(out, v)
		}
	}
	return out, refused
}

// IsArgError reports whether err is an argument refusal.
func IsArgError(err error) bool {
	var ae *tools.ArgError
	return errors.As(err, &ae)
}
