package policy

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

// API serves the policy endpoints.
type API struct {
	Engine   *Engine
	Registry *tools.Registry
	Paths    PathResolver
	// Audit records rule and mode changes; may be nil.
	Audit func(typ, chatID, summary string, data any)
}

// Routes registers the policy endpoints on mux.
func (a *API) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/policy", a.get)
	mux.HandleFunc("GET /api/policy/rules", a.listRules)
	mux.HandleFunc("POST /api/policy/rules", a.createRule)
	mux.HandleFunc("PUT /api/policy/rules/{id}", a.updateRule)
	mux.HandleFunc("DELETE /api/policy/rules/{id}", a.deleteRule)
	mux.HandleFunc("POST /api/policy/test", a.test)
	mux.HandleFunc("GET /api/chats/{id}/mode", a.getMode)
	mux.HandleFunc("PUT /api/chats/{id}/mode", a.setMode)
}

func (a *API) audit(typ, chatID, summary string, data any) {
	if a.Audit != nil {
		a.Audit(typ, chatID, summary, data)
	}
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	rules, _ := a.Engine.rules.List(r.Context())
	if rules == nil {
		rules = []Rule{}
	}
	cfg := a.Engine.Config()
	dp := cfg.DenyPrefixes
	if dp == nil {
		dp = []string{}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"auto_approve": cfg.AutoApprove, "deny_prefixes": dp, "rules": rules})
}

func (a *API) listRules(w http.ResponseWriter, r *http.Request) {
	rules, _ := a.Engine.rules.List(r.Context())
	if rules == nil {
		rules = []Rule{}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"rules": rules})
}

type ruleBody struct {
	Tool      string   `json:"tool"`
	Pattern   string   `json:"pattern"`
	PathScope string   `json:"path_scope"`
	Decision  Decision `json:"decision"`
	Priority  *int     `json:"priority"`
	Note      string   `json:"note"`
}

func (b ruleBody) rule() Rule {
	p := 100
	if b.Priority != nil {
		p = *b.Priority
	}
	return Rule{Tool: b.Tool, Pattern: b.Pattern, PathScope: b.PathScope, Decision: b.Decision, Priority: p, Note: b.Note}
}

// decodeRule reads and validates a rule body; on false the 400 is written.
func decodeRule(w http.ResponseWriter, r *http.Request) (Rule, bool) {
	var b ruleBody
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return Rule{}, false
	}
	rule := b.rule()
	if err := rule.Validate(); err != nil {
		httpjson.BadRequest(w, err)
		return Rule{}, false
	}
	return rule, true
}

func (a *API) createRule(w http.ResponseWriter, r *http.Request) {
	rule, ok := decodeRule(w, r)
	if !ok {
		return
	}
	out, err := a.Engine.rules.Create(r.Context(), rule)
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("storing the rule failed", err))
		return
	}
	a.audit("policy.rule_changed", "", "rule "+out.ID+" created: "+out.Tool+" → "+string(out.Decision), map[string]any{"action": "create", "rule": out})
	a.Engine.changed()
	httpjson.Write(w, http.StatusCreated, out)
}

func (a *API) updateRule(w http.ResponseWriter, r *http.Request) {
	rule, ok := decodeRule(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	out, err := a.Engine.rules.Update(r.Context(), id, rule)
	if errors.Is(err, store.ErrNotFound) {
		httpjson.Error(w, http.StatusNotFound, "not_found", "policy rule "+id+" does not exist")
		return
	} else if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("updating the rule failed", err))
		return
	}
	a.audit("policy.rule_changed", "", "rule "+id+" updated", map[string]any{"action": "update", "rule": out})
	a.Engine.changed()
	httpjson.Write(w, http.StatusOK, out)
}

func (a *API) deleteRule(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := a.Engine.rules.Delete(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		httpjson.Error(w, http.StatusNotFound, "not_found", "policy rule "+id+" does not exist")
		return
	} else if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("deleting the rule failed", err))
		return
	}
	a.audit("policy.rule_changed", "", "rule "+id+" deleted", map[string]any{"action": "delete", "id": id})
	a.Engine.changed()
	w.WriteHeader(http.StatusNoContent)
}

type testBody struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	ChatID string          `json:"chat_id"`
}

func (a *API) test(w http.ResponseWriter, r *http.Request) {
	var b testBody
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	if b.Tool == "" {
		httpjson.BadRequest(w, errors.New("tool is required"))
		return
	}
	c := a.Engine.Check(r.Context(), a.Registry, a.Paths, b.Tool, string(b.Args), b.ChatID)
	httpjson.Write(w, http.StatusOK, c.Result)
}

func (a *API) getMode(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, a.Engine.modes.Get(r.PathValue("id")))
}

type modeBody struct {
	Mode    string `json:"mode"`
	Minutes int    `json:"minutes"`
}

func (a *API) setMode(w http.ResponseWriter, r *http.Request) {
	var b modeBody
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	id := r.PathValue("id")
	st, err := a.Engine.modes.Set(id, b.Mode, time.Duration(b.Minutes)*time.Minute)
	if err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	a.audit("policy.mode_changed", id, "temporary mode "+st.Mode, st)
	a.Engine.changed()
	httpjson.Write(w, http.StatusOK, st)
}
