package approval

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes registers the approval endpoints.
func (b *Broker) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/approvals", b.list)
	mux.HandleFunc("POST /api/approvals/{id}", b.decide)
}

func (b *Broker) list(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]any{"approvals": b.Pending(r.URL.Query().Get("chat"))})
}

type decisionBody struct {
	Decision Outcome         `json:"decision"`
	Args     json.RawMessage `json:"args"`
	Note     string          `json:"note"`
	Answer   string          `json:"answer"`
	Mode     string          `json:"mode"`
}

func (b *Broker) decide(w http.ResponseWriter, r *http.Request) {
	var body decisionBody
	if err := httpjson.Decode(w, r, &body); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	id := r.PathValue("id")
	switch body.Decision {
	case Timeout, NoApprover, Cancelled:
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "decision "+string(body.Decision)+" is decided by the daemon, not by clients")
		return
	}
	d, err := b.Decide(id, Decision{Outcome: body.Decision, Args: body.Args, Note: body.Note, Answer: body.Answer, Mode: body.Mode})
	switch {
	case errors.Is(err, ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, "not_found", "approval request "+id+" does not exist or has expired")
	case errors.Is(err, ErrAlreadyDecided):
		httpjson.Error(w, http.StatusConflict, "conflict", "approval request "+id+" was already decided")
	case errors.Is(err, ErrInvalid):
		code := "bad_request"
		if body.Decision == Edit {
			code = "invalid_args"
		}
		httpjson.Error(w, http.StatusBadRequest, code, err.Error())
	case err != nil:
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("deciding failed", err))
	default:
		httpjson.Write(w, http.StatusOK, map[string]any{"id": id, "decision": d.Outcome, "args": d.Args, "note": d.Note})
	}
}
