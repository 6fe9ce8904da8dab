package app

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/store"
)

// Routes serves the mail API the web UI's Mail page reads (read-only;
// sending goes through the agent's gated tools and their approvals).
func (m *Mail) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/mail/mailboxes", m.handleMailboxes)
	mux.HandleFunc("GET /api/mail/search", m.handleSearch)
	mux.HandleFunc("GET /api/mail/messages/{id}", m.handleRead)
	mux.HandleFunc("GET /api/mail/messages/{id}/thread", m.handleThread)
	mux.HandleFunc("GET /api/mail/messages/{id}/attachments/{index}", m.handleAttachment)
	mux.HandleFunc("GET /api/mail/ops", m.handleOps)
}

func (m *Mail) handleMailboxes(w http.ResponseWriter, r *http.Request) {
	list, err := m.Store.MailboxCounts(r.Context())
	if err != nil {
		writeMailResult(w, nil, err)
		return
	}
	st, err := m.Store.Stats(r.Context())
	writeMailResult(w, map[string]any{"mailboxes": list, "total": st.Messages, "threads": st.Threads}, err)
}

// searchParams are the query parameters GET /api/mail/search accepts; each
// mirrors a `hestia mail search` flag.
var searchParams = map[string]bool{
	"q": true, "account": true, "mailbox": true, "role": true, "from": true, "to": true, "cc": true,
	"subject": true, "body": true, "after": true, "before": true, "unread": true, "flagged": true,
	"attachments": true, "attachment_name": true, "sort": true, "per_message": true, "offset": true, "limit": true, "count": true, "related": true,
	"snippets": true,
}

// ParseMailQuery turns the search route's query string into a mail.Query.
// Unknown parameters and malformed values are errors naming the parameter,
// so a typo is not silently a broader search.
func ParseMailQuery(v url.Values) (mail.Query, error) {
	var q mail.Query
	for k := range v {
		if !searchParams[k] {
			return q, fmt.Errorf("%w: unknown parameter %q", mail.ErrBadQuery, k)
		}
	}
	q.Text, q.Account, q.Mailbox, q.Role = v.Get("q"), v.Get("account"), v.Get("mailbox"), v.Get("role")
	q.From, q.To, q.Cc, q.Subject, q.Body = v.Get("from"), v.Get("to"), v.Get("cc"), v.Get("subject"), v.Get("body")
	q.AttachmentName = v.Get("attachment_name")
	q.Sort = v.Get("sort")
	if q.Sort != "" && q.Sort != "date" && q.Sort != "size" {
		return q, fmt.Errorf("%w: sort %q is not date or size", mail.ErrBadQuery, q.Sort)
	}
	var err error
	day := func(name string) time.Time {
		s := v.Get(name)
		if s == "" || err != nil {
			return time.Time{}
		}
		// A day is a UTC day; the CLI sends the instant its local
		// midnight is, in RFC 3339.
		t, perr := time.Parse(time.DateOnly, s)
		if perr != nil {
			if t, perr = time.Parse(time.RFC3339, s); perr != nil {
				err = fmt.Errorf("%w: %s %q is not a date like 2026-06-01 (or an RFC 3339 time)", mail.ErrBadQuery, name, s)
			}
		}
		return t
	}
	tri := func(name string) *bool {
		s := v.Get(name)
		if s == "" || err != nil {
			return nil
		}
		b, perr := strconv.ParseBool(s)
		if perr != nil {
			err = fmt.Errorf("%w: %s %q is not true or false", mail.ErrBadQuery, name, s)
			return nil
		}
		return &b
	}
	num := func(name string, lo, hi int) int {
		s := v.Get(name)
		if s == "" || err != nil {
			return 0
		}
		n, perr := strconv.Atoi(s)
		if perr != nil || n < lo || n > hi {
			err = fmt.Errorf("%w: %s %q is not a number from %d to %d", mail.ErrBadQuery, name, s, lo, hi)
		}
		return n
	}
	q.After, q.Before = day("after"), day("before")
	q.Unread, q.Flagged, q.Attachment = tri("unread"), tri("flagged"), tri("attachments")
	if pm := tri("per_message"); pm != nil {
		q.PerMessage = *pm
	}
	if c := tri("count"); c != nil {
		q.Count = *c
	}
	// related=true|false asks for (or leaves out) the messages only the
	// vectors found, listed apart; absent: the store's default.
	q.Related = tri("related")
	// snippets=false: a listing that prints none (the CLI) saves reading
	// the bodies; the matches and their order are the same.
	if sn := tri("snippets"); sn != nil {
		q.NoSnippets = !*sn
	}
	q.Offset, q.Limit = num("offset", 0, 100000), num("limit", 1, mail.MaxLimit)
	if q.Limit == 0 {
		q.Limit = 30
	}
	return q, err
}

// SearchHit is a search result with the size of its thread, so a list
// collapsed by thread can say how many messages each row stands for.
type SearchHit struct {
	mail.Summary
	ThreadCount int `json:"thread_count"`
}

func (m *Mail) handleSearch(w http.ResponseWriter, r *http.Request) {
	q, err := ParseMailQuery(r.URL.Query())
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "bad_query", err.Error())
		return
	}
	res, err := m.Store.Search(r.Context(), q)
	if err != nil {
		writeMailResult(w, nil, err)
		return
	}
	counts, err := m.threadCounts(r.Context(), res.Messages)
	if err != nil {
		writeMailResult(w, nil, err)
		return
	}
	hits := make([]SearchHit, len(res.Messages))
	for i, s := range res.Messages {
		hits[i] = SearchHit{Summary: s, ThreadCount: max(1, counts[s.ThreadID])}
	}
	out := map[string]any{"messages": hits, "page": res.Page, "mode": res.Mode, "degraded": res.Degraded}
	if len(res.Related) > 0 {
		// Apart from messages: none holds the words, total does not count them.
		rc, err := m.threadCounts(r.Context(), res.Related)
		if err != nil {
			writeMailResult(w, nil, err)
			return
		}
		related := make([]SearchHit, len(res.Related))
		for i, s := range res.Related {
			related[i] = SearchHit{Summary: s, ThreadCount: max(1, rc[s.ThreadID])}
		}
		out["related"] = related
	}
	if res.Total != nil {
		out["total"] = *res.Total
	}
	if res.Note != "" {
		out["note"] = res.Note
	}
	if res.Truncated {
		out["truncated"] = true
	}
	httpjson.Write(w, http.StatusOK, out)
}

func (m *Mail) threadCounts(ctx context.Context, list []mail.Summary) (map[int64]int, error) {
	ids := make([]int64, 0, len(list))
	for _, s := range list {
		ids = append(ids, s.ThreadID)
	}
	return m.Store.ThreadCounts(ctx, ids)
}

func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		httpjson.Error(w, http.StatusBadRequest, "bad_id", fmt.Sprintf("message id %q is not a positive integer", r.PathValue("id")))
		return 0, false
	}
	return id, true
}

func queryInt(w http.ResponseWriter, r *http.Request, name string) (int, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		httpjson.Error(w, http.StatusBadRequest, "bad_query", fmt.Sprintf("%s %q is not a number of 0 or more", name, s))
		return 0, false
	}
	return n, true
}

func (m *Mail) handleRead(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	off, ok := queryInt(w, r, "offset")
	if !ok {
		return
	}
	limit, ok := queryInt(w, r, "limit")
	if !ok {
		return
	}
	msg, err := m.Store.Read(r.Context(), id, off, limit)
	writeMailResult(w, msg, err)
}

func (m *Mail) handleThread(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	off, ok := queryInt(w, r, "offset")
	if !ok {
		return
	}
	limit, ok := queryInt(w, r, "limit")
	if !ok {
		return
	}
	if limit == 0 {
		limit = 50
	}
	tp, err := m.Store.Thread(r.Context(), id, off, limit, 0)
	writeMailResult(w, tp, err)
}

// handleAttachment serves one attachment as a download. Mail content is
// untrusted: it is always sent as an attachment with nosniff and a sandbox
// policy, so an HTML or SVG attachment cannot run script in the UI's origin.
func (m *Mail) handleAttachment(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	idx, err := strconv.Atoi(r.PathValue("index"))
	if err != nil || idx < 0 {
		httpjson.Error(w, http.StatusBadRequest, "bad_index", fmt.Sprintf("attachment index %q is not a number of 0 or more", r.PathValue("index")))
		return
	}
	att, data, err := m.Store.AttachmentData(r.Context(), id, idx)
	if err != nil {
		if errors.Is(err, mail.ErrBlobMissing) {
			httpjson.Error(w, http.StatusNotFound, "not_stored", fmt.Sprintf("attachment %d of message %d was not stored in the mirror", idx, id))
			return
		}
		writeMailResult(w, nil, err)
		return
	}
	name := att.Filename
	if name == "" {
		name = fmt.Sprintf("attachment-%d-%d", id, idx)
	}
	ct := att.ContentType
	if _, _, perr := mime.ParseMediaType(ct); perr != nil || ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, no-store")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func (m *Mail) handleOps(w http.ResponseWriter, r *http.Request) {
	ops, err := m.Journal.List(r.Context(), r.URL.Query().Get("state"), 100)
	writeMailResult(w, map[string]any{"operations": ops}, err)
}

func writeMailResult(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, mail.ErrBadQuery):
		httpjson.Error(w, http.StatusBadRequest, "bad_query", err.Error())
	case err != nil:
		httpjson.Error(w, http.StatusInternalServerError, "internal", err.Error())
	default:
		httpjson.Write(w, http.StatusOK, v)
	}
}

// embedderKnowsMeaning reports whether local-embed's first target is a
// real embedding model. The built-in hashed embedder (the default, or
// "local") knows words, not meaning: its nearest messages without the
// words are noise, so mail search lists related messages only when asked.
func embedderKnowsMeaning(c config.LLMConfig) bool {
	list := llm.TiersFromConfig(c)[llm.LocalEmbed]
	return len(list) > 0 && list[0].Kind != llm.KindLocal
}
