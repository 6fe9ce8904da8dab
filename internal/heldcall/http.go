package heldcall

import (
	"net/http"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes registers GET /api/held-calls (?state=waiting|running|done|
// failed|denied|unknown): the background calls held for the user, newest
// first, so a client can show what waited, ran or was refused.
func (q *Queue) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/held-calls", q.handleList)
}

func (q *Queue) handleList(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	switch state {
	case "", StateWaiting, StateRunning, StateDone, StateFailed, StateDenied, StateUnknown:
	default:
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "state "+state+" is not one of waiting, running, done, failed, denied, unknown")
		return
	}
	calls, err := q.List(r.Context(), state)
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("listing held calls failed", err))
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"calls": calls})
}
