package actions

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes serves the Action Center API.
func (c *Center) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/actions", c.handleList)
	mux.HandleFunc("GET /api/actions/settings", c.handleSettings)
	mux.HandleFunc("PUT /api/actions/settings", c.handleSetSettings)
	mux.HandleFunc("POST /api/actions/scan", c.handleScan)
	mux.HandleFunc("GET /api/actions/flows", c.handleFlows)
	mux.HandleFunc("GET /api/actions/{id}", c.handleGet)
	mux.HandleFunc("POST /api/actions/{id}/state", c.handleState)
	mux.HandleFunc("POST /api/actions/{id}/execute", c.handleExecute)
}

func (c *Center) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := Filter{State: q.Get("state"), Kind: q.Get("kind"), Priority: q.Get("priority")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "limit: must be an integer from 1 to 100")
			return
		}
		f.Limit = n
	}
	switch f.State {
	case "", "all", StateNew, StateRead, StateDone, StateDismissed:
	default:
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "state: must be new, read, done, dismissed or all")
		return
	}
	items, counts, err := c.List(r.Context(), f)
	write(w, r, http.StatusOK, map[string]any{"actions": items, "counts": counts}, err)
}

func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "id: must be a positive integer")
		return 0, false
	}
	return id, true
}

func (c *Center) handleGet(w http.ResponseWriter, r *http.Request) {
	if id, ok := pathID(w, r); ok {
		it, err := c.Get(r.Context(), id)
		write(w, r, http.StatusOK, it, err)
	}
}

func (c *Center) handleState(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var b struct {
		State string `json:"state"`
	}
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	it, err := c.SetState(r.Context(), id, b.State)
	write(w, r, http.StatusOK, it, err)
}

func (c *Center) handleExecute(w http.ResponseWriter, r *http.Request) {
	if id, ok := pathID(w, r); ok {
		it, err := c.Execute(r.Context(), id)
		write(w, r, http.StatusAccepted, it, err)
	}
}

func (c *Center) handleSettings(w http.ResponseWriter, r *http.Request) {
	s, err := c.GetSettings(r.Context())
	write(w, r, http.StatusOK, s, err)
}

func (c *Center) handleSetSettings(w http.ResponseWriter, r *http.Request) {
	var s Settings
	if err := httpjson.Decode(w, r, &s); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	s, err := c.SetSettings(r.Context(), s)
	if err == nil && s.Enabled {
		c.Kick()
	}
	write(w, r, http.StatusOK, s, err)
}

func (c *Center) handleScan(w http.ResponseWriter, r *http.Request) {
	res, err := c.Scan(r.Context())
	write(w, r, http.StatusOK, res, err)
}

func (c *Center) handleFlows(w http.ResponseWriter, r *http.Request) {
	fs, err := c.Flows(r.Context())
	write(w, r, http.StatusOK, map[string]any{"flows": fs}, err)
}

func write(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	switch {
	case errors.Is(err, ErrBadTransition):
		err = httpjson.Conflict("bad_state", err)
	case errors.Is(err, ErrExecuting):
		err = httpjson.Conflict("executing", err)
	}
	httpjson.Respond(w, r, status, v, err)
}
