package agent

import (
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// MaxMessage bounds a user message (characters).
const MaxMessage = 100_000

// Routes registers the turn and tool inventory endpoints.
func (a *Agent) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/chats/{id}/messages", a.postMessage)
	mux.HandleFunc("POST /api/chats/{id}/cancel", a.cancel)
	mux.HandleFunc("GET /api/chats/{id}/status", a.status)
	mux.HandleFunc("DELETE /api/chats/{id}/queue/{turn}", a.cancelQueued)
	mux.HandleFunc("GET /api/tools", a.listTools)
}

type messageBody struct {
	Text     string `json:"text"`
	Wait     bool   `json:"wait"`
	Approver string `json:"approver"`
	// OverBudget continues this turn past a reached model budget cap.
	OverBudget bool `json:"over_budget"`
	// Retry re-runs the unfinished last turn; text must then be empty.
	Retry bool `json:"retry"`
	// Queue waits behind the running turn instead of interrupting it (the
	// user chose to keep a pending approval and send afterwards).
	Queue bool `json:"queue"`
	// EditOf replaces that user message and everything after it with text.
	EditOf string `json:"edit_of"`
	// Regenerate re-runs the last turn's reply; text must be empty.
	Regenerate bool `json:"regenerate"`
}

func (a *Agent) postMessage(w http.ResponseWriter, r *http.Request) {
	var b messageBody
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	switch {
	case b.Retry && b.Text != "":
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "a retry re-runs the stored turn; leave text empty")
		return
	case b.Regenerate && b.Text != "":
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "regenerate re-runs the last message; leave text empty")
		return
	case b.Regenerate && (b.Retry || b.EditOf != ""):
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "regenerate cannot be combined with retry or edit_of")
		return
	case b.EditOf != "" && b.Retry:
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "edit_of cannot be combined with retry")
		return
	case b.Queue && (b.EditOf != "" || b.Regenerate):
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "queue cannot be combined with edit_of or regenerate (they need an idle chat)")
		return
	case !b.Retry && !b.Regenerate && strings.TrimSpace(b.Text) == "":
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "text is required")
		return
	case utf8.RuneCountInString(b.Text) > MaxMessage:
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "text is longer than 100000 characters")
		return
	case b.Approver != "" && b.Approver != "attached" && b.Approver != "none":
		httpjson.Error(w, http.StatusBadRequest, "bad_request", `approver must be "attached" or "none"`)
		return
	}
	id := r.PathValue("id")
	t, err := a.Submit(r.Context(), id, b.Text, Options{NoApprover: b.Approver == "none", OverBudget: b.OverBudget, Retry: b.Retry,
		NoInterrupt: b.Queue, EditOf: b.EditOf, Regenerate: b.Regenerate})
	switch {
	case isNotFound(err):
		httpjson.Error(w, http.StatusNotFound, "not_found", "chat "+id+" does not exist")
		return
	case errors.Is(err, ErrBusy):
		httpjson.Error(w, http.StatusConflict, "busy", err.Error())
		return
	case errors.Is(err, chat.ErrNotRewindable):
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "edit_of: "+err.Error())
		return
	case errors.Is(err, ErrNothingToRegenerate):
		httpjson.Error(w, http.StatusConflict, CodeNothingToRetry, err.Error())
		return
	case errors.Is(err, ErrNothingToRetry):
		httpjson.Error(w, http.StatusConflict, CodeNothingToRetry, err.Error())
		return
	case errors.Is(err, ErrQueueFull):
		httpjson.Error(w, http.StatusTooManyRequests, "queue_full", err.Error())
		return
	case errors.Is(err, ErrClosed):
		httpjson.Error(w, http.StatusServiceUnavailable, "busy", err.Error())
		return
	case err != nil:
		httpjson.Error(w, http.StatusInternalServerError, "internal", "starting the turn failed")
		return
	}
	if !b.Wait {
		httpjson.Write(w, http.StatusAccepted, map[string]any{"turn_id": t.ID, "chat_id": id, "position": t.Position})
		return
	}
	// Waiting clients keep the connection open; the server's write timeout
	// must not cut a long turn.
	_ = http.NewResponseController(w).SetWriteDeadline(timeZero)
	httpjson.Write(w, http.StatusOK, t.Wait(r.Context()))
}

func (a *Agent) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := a.d.Chats.Get(r.Context(), id); isNotFound(err) {
		httpjson.Error(w, http.StatusNotFound, "not_found", "chat "+id+" does not exist")
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]bool{"cancelled": a.Cancel(id)})
}

// cancelQueued drops one waiting message (the composer's "cancel" on a
// queued message).
func (a *Agent) cancelQueued(w http.ResponseWriter, r *http.Request) {
	id, turn := r.PathValue("id"), r.PathValue("turn")
	if _, err := a.d.Chats.Get(r.Context(), id); isNotFound(err) {
		httpjson.Error(w, http.StatusNotFound, "not_found", "chat "+id+" does not exist")
		return
	}
	if !a.CancelQueued(id, turn) {
		httpjson.Error(w, http.StatusNotFound, "not_found", "turn "+turn+" is not waiting in chat "+id+" (it started or ended)")
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]bool{"cancelled": true})
}

// ToolInfo is one entry of the tool inventory.
type ToolInfo struct {
	Name              string          `json:"name"`
	Description       string          `json:"description"`
	Schema            any             `json:"schema"`
	Risk              string          `json:"risk"`
	ReadOnly          bool            `json:"read_only"`
	ParallelSafe      bool            `json:"parallel_safe"`
	UntrustedOutput   bool            `json:"untrusted_output"`
	Available         bool            `json:"available"`
	UnavailableReason string          `json:"unavailable_reason"`
	Decision          policy.Decision `json:"decision"`
	DecisionSource    string          `json:"decision_source"`
	DecisionReason    string          `json:"decision_reason"`
}

// Inventory lists every registered tool with its availability and its
// current decision for empty arguments.
func (a *Agent) Inventory(r *http.Request, chatID string) []ToolInfo {
	ctx := r.Context()
	out := []ToolInfo{}
	for _, t := range a.d.Tools.All() {
		s := t.Spec()
		info := ToolInfo{Name: s.Name, Description: s.Description, Risk: s.Risk.String(), ReadOnly: s.ReadOnly, ParallelSafe: s.ParallelSafe, UntrustedOutput: s.UntrustedOutput, Available: true}
		info.Schema = rawSchema(s)
		if err := t.Available(ctx); err != nil {
			info.Available, info.UnavailableReason = false, err.Error()
		}
		d := a.d.Policy.Decide(ctx, policy.Input{ToolName: s.Name, Tool: t, Args: []byte("{}"), ChatID: chatID, Target: "*"})
		info.Decision, info.DecisionSource, info.DecisionReason = d.Decision, d.Source, d.Reason
		out = append(out, info)
	}
	return out
}

func rawSchema(s tools.Spec) any {
	if len(s.Schema) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return s.Schema
}

func (a *Agent) listTools(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]any{"tools": a.Inventory(r, r.URL.Query().Get("chat"))})
}

func (a *Agent) status(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := a.d.Chats.Get(r.Context(), id); isNotFound(err) {
		httpjson.Error(w, http.StatusNotFound, "not_found", "chat "+id+" does not exist")
		return
	}
	httpjson.Write(w, http.StatusOK, a.ChatStatus(id))
}
