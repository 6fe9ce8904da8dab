package chat

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/store"
)

// Hooks let the wiring react to chat changes (events, cancelling turns).
type Hooks struct {
	Created  func(Chat)
	Updated  func(Chat)
	Deleting func(id string) // before the rows go: cancel running turns
	Deleted  func(id string)
}

// API serves the chat CRUD endpoints.
type API struct {
	Store *Store
	Hooks Hooks
}

// Routes registers the chat endpoints.
func (a *API) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/chats", a.create)
	mux.HandleFunc("GET /api/chats", a.list)
	mux.HandleFunc("GET /api/chats/{id}", a.get)
	mux.HandleFunc("PATCH /api/chats/{id}", a.rename)
	mux.HandleFunc("DELETE /api/chats/{id}", a.delete)
	mux.HandleFunc("GET /api/chats/{id}/export", a.export)
}

func notFound(w http.ResponseWriter, id string) {
	httpjson.Error(w, http.StatusNotFound, "not_found", "chat "+id+" does not exist")
}

type titleBody struct {
	Title string `json:"title"`
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	var b titleBody
	if r.ContentLength != 0 {
		if err := httpjson.Decode(w, r, &b); err != nil {
			httpjson.BadRequest(w, err)
			return
		}
	}
	c, err := a.Store.Create(r.Context(), b.Title)
	if err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	if a.Hooks.Created != nil {
		a.Hooks.Created(c)
	}
	httpjson.Write(w, http.StatusCreated, c)
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 50
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxListChat {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "limit must be an integer from 1 to 200")
			return
		}
		limit = n
	}
	var before time.Time
	if s := q.Get("before"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "before must be an RFC 3339 time")
			return
		}
		before = t
	}
	chats, err := a.Store.List(r.Context(), limit, before)
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("listing chats failed", err))
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"chats": chats})
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c, err := a.Store.Get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		notFound(w, id)
		return
	} else if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("reading the chat failed", err))
		return
	}
	msgs, err := a.Store.Messages(r.Context(), id, 0)
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("reading the chat failed", err))
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"chat": c, "messages": msgs})
}

func (a *API) rename(w http.ResponseWriter, r *http.Request) {
	var b titleBody
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	id := r.PathValue("id")
	c, err := a.Store.Rename(r.Context(), id, b.Title)
	switch {
	case errors.Is(err, store.ErrNotFound):
		notFound(w, id)
	case err != nil:
		httpjson.BadRequest(w, err)
	default:
		if a.Hooks.Updated != nil {
			a.Hooks.Updated(c)
		}
		httpjson.Write(w, http.StatusOK, c)
	}
}

func (a *API) delete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := a.Store.Get(r.Context(), id); errors.Is(err, store.ErrNotFound) {
		notFound(w, id)
		return
	}
	if a.Hooks.Deleting != nil {
		a.Hooks.Deleting(id)
	}
	err := a.Store.Delete(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		notFound(w, id)
	case err != nil:
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("deleting the chat failed", err))
	default:
		if a.Hooks.Deleted != nil {
			a.Hooks.Deleted(id)
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (a *API) export(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e, err := a.Store.Export(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		notFound(w, id)
		return
	} else if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("exporting the chat failed", err))
		return
	}
	w.Header().Set("Content-Disposition", `attachment; filename="hestia-chat-`+id+`.json"`)
	httpjson.Write(w, http.StatusOK, e)
}
