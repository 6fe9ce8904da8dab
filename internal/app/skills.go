package app

import (
	"context"
	"path/filepath"

	"github.com/hestia-dev/hestia/internal/skills"
	"github.com/hestia-dev/hestia/internal/tools"
)

// SkillsDir is where installed skills live.
func (a *App) SkillsDir() string { return filepath.Join(a.Paths.Data, "skills") }

// OpenSkills opens the skills store (closed with the App). The CLI uses it
// directly; the daemon reads the same folder, so an install is picked up at
// the next turn.
func (a *App) OpenSkills(ctx context.Context) (*skills.Store, error) {
	st, err := skills.Open(ctx, a.Paths.DB(skills.Schema.Name), a.SkillsDir(), a.Now, a.Log.With("component", "skills"))
	if err != nil {
		return nil, err
	}
	a.OnClose(st.Close)
	return st, nil
}

// registerSkills adds skill_load and returns the system prompt note that
// lists the installed skills.
func (a *App) registerSkills(ctx context.Context, reg *tools.Registry) (func(context.Context) string, error) {
	st, err := a.OpenSkills(ctx)
	if err != nil {
		return nil, err
	}
	if err := reg.Register(skills.LoadTool(st, reg)); err != nil {
		return nil, err
	}
	return st.Index, nil
}
