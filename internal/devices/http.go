package devices

import (
	"errors"
	"net/http"

	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/store"
)

// Routes registers the device endpoints (admin scope, see RequiredScope).
func (r *Registry) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/devices", r.handleList)
	mux.HandleFunc("GET /api/devices/self", r.handleSelf)
	mux.HandleFunc("DELETE /api/devices/{id}", r.handleRevoke)
	mux.HandleFunc("POST /api/devices/{id}/revoke", r.handleRevoke)
}

func (r *Registry) handleList(w http.ResponseWriter, req *http.Request) {
	list, err := r.List(req.Context())
	if err != nil {
		httpjson.Respond(w, req, 0, nil, httpjson.Internal("listing devices failed", err))
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"devices": list})
}

// handleSelf tells a client who it is and what it may do, so the UI can
// hide what its scopes do not allow.
func (r *Registry) handleSelf(w http.ResponseWriter, req *http.Request) {
	id, _ := FromContext(req.Context())
	scopes := id.Scopes
	if scopes == nil {
		scopes = []Scope{}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"id": id.DeviceID, "name": id.Name, "local": id.Local(), "scopes": scopes})
}

func (r *Registry) handleRevoke(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	d, err := r.Revoke(req.Context(), id)
	switch {
	case errors.Is(err, ErrManaged):
		httpjson.Error(w, http.StatusConflict, "managed", err.Error())
	case errors.Is(err, store.ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, "not_found", "device "+id+" does not exist")
	case err != nil:
		httpjson.Respond(w, req, 0, nil, httpjson.Internal("revoking the device failed", err))
	default:
		httpjson.Write(w, http.StatusOK, map[string]any{"device": d})
	}
}
