package budget

import (
	"net/http"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes registers GET /api/budget: every configured cap with today's and
// this month's spend, for `hestia usage` and the usage page.
func (g *Guard) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/budget", g.handleStatus)
}

func (g *Guard) handleStatus(w http.ResponseWriter, r *http.Request) {
	st, err := g.Status(r.Context())
	if err != nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "budget_unavailable", err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, st)
}
