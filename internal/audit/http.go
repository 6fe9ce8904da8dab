package audit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes registers the audit endpoints.
func (l *Log) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/audit", l.list)
	mux.HandleFunc("GET /api/audit/verify", l.verify)
}

func (l *Log) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := Filter{Type: q.Get("type"), ChatID: q.Get("chat"), Tool: q.Get("tool"), Text: q.Get("q")}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := q.Get(p.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				httpjson.Error(w, http.StatusBadRequest, "bad_request", p.name+" must be an RFC 3339 time such as 2026-12-01T00:00:00Z")
				return
			}
			*p.dst = t
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxList {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "limit must be an integer from 1 to 500")
			return
		}
		f.Limit = n
	}
	if s := q.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "before must be a positive event id")
			return
		}
		f.Before = n
	}
	if len(f.Text) > 200 {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "q is longer than 200 characters")
		return
	}
	evs, err := l.List(r.Context(), f)
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("listing audit events failed", err))
		return
	}
	resp := map[string]any{"events": evs}
	limit := f.Limit
	if limit == 0 {
		limit = 100
	}
	if n := len(evs); n > 0 && n == limit {
		resp["next_before"] = evs[n-1].ID
	}
	httpjson.Write(w, http.StatusOK, resp)
}

func (l *Log) verify(w http.ResponseWriter, r *http.Request) {
	res, err := l.Verify(r.Context())
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("verifying the audit chain failed", err))
		return
	}
	httpjson.Write(w, http.StatusOK, res)
}
