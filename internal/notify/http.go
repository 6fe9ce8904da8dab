package notify

import (
	"net/http"
	"strconv"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes serves the inbox, settings and push subscription API.
func (n *Notifier) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/notifications", n.handleList)
	mux.HandleFunc("POST /api/notifications/{id}/read", n.handleRead)
	mux.HandleFunc("POST /api/notifications/read-all", n.handleReadAll)
	mux.HandleFunc("GET /api/notifications/settings", n.handleSettings)
	mux.HandleFunc("PUT /api/notifications/settings", n.handleSetSettings)
	mux.HandleFunc("GET /api/push/key", n.handleKey)
	mux.HandleFunc("GET /api/push/subscriptions", n.handleSubs)
	mux.HandleFunc("POST /api/push/subscriptions", n.handleSubscribe)
	mux.HandleFunc("DELETE /api/push/subscriptions", n.handleUnsubscribe)
}

func (n *Notifier) handleList(w http.ResponseWriter, r *http.Request) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > 200 {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", "limit: must be an integer from 1 to 200")
			return
		}
		limit = k
	}
	in, err := n.List(r.Context(), r.URL.Query().Get("unread") == "1", limit)
	write(w, r, http.StatusOK, in, err)
}

func (n *Notifier) handleRead(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "id: must be a positive integer")
		return
	}
	err = n.MarkRead(r.Context(), id)
	write(w, r, http.StatusOK, map[string]any{"read": id}, err)
}

func (n *Notifier) handleReadAll(w http.ResponseWriter, r *http.Request) {
	write(w, r, http.StatusOK, map[string]any{"read": "all"}, n.MarkRead(r.Context(), 0))
}

func (n *Notifier) handleSettings(w http.ResponseWriter, r *http.Request) {
	s, err := n.Settings(r.Context())
	write(w, r, http.StatusOK, s, err)
}

func (n *Notifier) handleSetSettings(w http.ResponseWriter, r *http.Request) {
	var s Settings
	if err := httpjson.Decode(w, r, &s); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	s, err := n.SetSettings(r.Context(), s)
	write(w, r, http.StatusOK, s, err)
}

func (n *Notifier) handleKey(w http.ResponseWriter, r *http.Request) {
	k, err := n.VAPIDPublicKey(r.Context())
	write(w, r, http.StatusOK, map[string]any{"public_key": k}, err)
}

func (n *Notifier) handleSubs(w http.ResponseWriter, r *http.Request) {
	subs, err := n.Subscriptions(r.Context())
	for i := range subs {
		subs[i].Keys = Keys{} // the browser's keys never leave the daemon again
	}
	write(w, r, http.StatusOK, map[string]any{"subscriptions": subs}, err)
}

type subscribeBody struct {
	Endpoint       string `json:"endpoint"`
	ExpirationTime *int64 `json:"expirationTime"`
	Keys           Keys   `json:"keys"`
	Device         string `json:"device"`
}

func (n *Notifier) handleSubscribe(w http.ResponseWriter, r *http.Request) {
	var b subscribeBody
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	s, err := n.Subscribe(r.Context(), Subscription{Endpoint: b.Endpoint, Keys: b.Keys, Device: b.Device})
	s.Keys = Keys{}
	write(w, r, http.StatusCreated, s, err)
}

func (n *Notifier) handleUnsubscribe(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Endpoint string `json:"endpoint"`
	}
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	write(w, r, http.StatusOK, map[string]any{"removed": true}, n.Unsubscribe(r.Context(), b.Endpoint))
}

func write(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	httpjson.Respond(w, r, status, v, err)
}
