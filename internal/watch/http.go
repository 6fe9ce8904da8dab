package watch

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes serves the watches API. A grant is an approval given in advance,
// so creating a watch with grants, or resuming one, needs the caller's
// approve scope (checked here: the route's scope cannot see the body);
// the request itself is then the user's approval and no card follows.
func (e *Engine) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/watches", e.handleList)
	mux.HandleFunc("POST /api/watches", e.handleCreate)
	mux.HandleFunc("POST /api/watches/preview", e.handlePreview)
	mux.HandleFunc("GET /api/watches/{id}", e.handleGet)
	mux.HandleFunc("POST /api/watches/{id}/stop", e.handleStop)
	mux.HandleFunc("POST /api/watches/{id}/pause", e.handleSetPaused(true))
	mux.HandleFunc("POST /api/watches/{id}/resume", e.handleResume)
	mux.HandleFunc("DELETE /api/watches/{id}", e.handleDelete)
}

func (e *Engine) handleList(w http.ResponseWriter, r *http.Request) {
	ws, err := e.List(r.Context(), r.URL.Query().Get("state"))
	write(w, r, http.StatusOK, map[string]any{"watches": ws, "sources": e.Sources(), "events": e.SourceEvents()}, err)
}

// Detail is a watch with its recent events and claims.
type Detail struct {
	Watch
	RecentEvents []StoredEvent `json:"recent_events"`
	Claims       []Claim       `json:"claims"`
}

// Detail returns a watch with its events and claims.
func (e *Engine) Detail(r *http.Request, id string) (Detail, error) {
	wt, err := e.Get(r.Context(), id)
	if err != nil {
		return Detail{}, err
	}
	evs, err := e.Events(r.Context(), id)
	if err != nil {
		return Detail{}, err
	}
	cl, err := e.Claims(r.Context(), id)
	return Detail{Watch: wt, RecentEvents: evs, Claims: cl}, err
}

func (e *Engine) handleGet(w http.ResponseWriter, r *http.Request) {
	d, err := e.Detail(r, r.PathValue("id"))
	write(w, r, http.StatusOK, d, err)
}

func (e *Engine) handleCreate(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 256<<10))
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "request body is larger than 256 KiB")
		return
	}
	var withChat struct {
		ChatID string `json:"chat_id"`
	}
	// chat_id is the one field beyond the tool's arguments.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "request body is not a JSON object")
		return
	}
	if c, ok := raw["chat_id"]; ok {
		json.Unmarshal(c, &withChat.ChatID)
		delete(raw, "chat_id")
	}
	rest, _ := json.Marshal(raw)
	s, err := parseCreate(rest)
	if err == nil && hasGrants(s.Rules) {
		if err := devices.Require(r.Context(), devices.Approve, "create a watch whose rules grant tools (a grant runs them without asking)"); err != nil {
			httpjson.Error(w, http.StatusForbidden, "forbidden", err.Error())
			return
		}
	}
	if err == nil {
		s.ChatID = withChat.ChatID
		var wt Watch
		wt, err = e.Create(r.Context(), s)
		if err == nil {
			write(w, r, http.StatusCreated, wt, nil)
			return
		}
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		write(w, r, 0, nil, err)
		return
	}
	// Anything else is the resource failing its first read.
	httpjson.Error(w, http.StatusBadRequest, "bad_watch", err.Error())
}

// handleResume re-arms a paused watch. Pausing only takes authority away,
// but resuming a watch with grants lets them run again without asking, so
// it needs approve like creating them.
func (e *Engine) handleResume(w http.ResponseWriter, r *http.Request) {
	wt, err := e.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		write(w, r, http.StatusOK, nil, err)
		return
	}
	if hasGrants(wt.Rules) {
		if err := devices.Require(r.Context(), devices.Approve, "resume a watch whose rules grant tools (a grant runs them without asking)"); err != nil {
			httpjson.Error(w, http.StatusForbidden, "forbidden", err.Error())
			return
		}
	}
	e.handleSetPaused(false)(w, r)
}

func (e *Engine) handleStop(w http.ResponseWriter, r *http.Request) {
	wt, err := e.Stop(r.Context(), r.PathValue("id"))
	write(w, r, http.StatusOK, wt, err)
}

func write(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	httpjson.Respond(w, r, status, v, err)
}
