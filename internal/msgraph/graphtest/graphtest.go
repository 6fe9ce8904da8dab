// Package graphtest is an in-process fake of the Microsoft Graph endpoints
// Hestia's Microsoft 365 mirrors use, for tests:
//
//   - GET /me/calendars, /me/contactFolders (paged);
//   - GET /me/calendars/{id}/calendarView/delta (startDateTime,
//     endDateTime; then $skiptoken pages and a $deltatoken round) with
//     single instances, occurrences and exceptions of series, and
//     @removed entries for what left;
//   - GET /me/contactFolders/{id}/contacts/delta, likewise;
//   - GET /me/events/{id}, GET /me/events/{id}/instances;
//   - POST /me/calendars/{id}/events (transactionId makes a retry return
//     the first event), PATCH and DELETE /me/events/{id} with If-Match
//     (412 when the change key moved); an occurrence patched becomes an
//     exception, one deleted is cancelled.
//
// Pages hold Prefer: odata.maxpagesize items (PageSize otherwise); times
// are answered in Prefer: outlook.timezone (UTC otherwise). Tests steer it:
// Throttle answers the next requests 429 with a Retry-After, ExpireTokens
// makes every delta and skip token 410 Gone, AddRawEvent serves an entry
// verbatim (malformed JSON), and the Add/Update/Delete/Cancel/Move
// methods change the mailbox behind the client's back. Recurrences are
// expanded by the fake's own plain code (recur.go).
package graphtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the service root clients use as their base URL
	// (http://127.0.0.1:port/v1.0).
	URL string
	srv *httptest.Server

	mu sync.Mutex // guards everything below
	// token is the bearer token requests must carry, unless authorize
	// (set by SetAuthorizer) accepts theirs.
	token     string
	authorize func(token string) bool
	pageSize  int
	seq       int
	now       func() time.Time

	calendars []*calendar
	folders   []*folder
	items     map[string]*item // events by id: singles and series masters
	contacts  map[string]*Contact
	raw       map[string][]rawEntry // calendar id → entries served verbatim

	rounds  map[string]*round // delta tokens → the state they were made from
	pending map[string]*pendingPages
	expired map[string]bool

	throttle struct {
		n          int
		retryAfter string
	}
	throttled int
	log       []string
	// partialExceptions lists exceptions in the delta as briefly as
	// occurrences (SetPartialExceptions).
	partialExceptions bool
}

type calendar struct {
	id, name string
	canEdit  bool
}

type folder struct{ id, name string }

// item is a single event or a series (its master plus what changed).
type item struct {
	cal string
	ev  *Event
	// patternKey is the change key occurrences carry: it moves when the
	// master itself is changed.
	patternKey string
	exceptions map[int64]*Event // by original start (Unix)
	cancelled  map[int64]bool
}

type rawEntry struct {
	id, data string
}

// round is a delta token's snapshot: id → change key of what the
// collection held.
type round struct {
	kind     string // "events" or "contacts"
	coll     string
	from, to time.Time
	seen     map[string]string
}

type pendingPages struct {
	pages [][]json.RawMessage
	next  int
	delta string
	base  string
}

// New starts a fake serving token as the one valid bearer token.
func New(token string) *Server {
	s := &Server{token: token, pageSize: 10, now: time.Now, items: map[string]*item{}, contacts: map[string]*Contact{},
		raw: map[string][]rawEntry{}, rounds: map[string]*round{}, pending: map[string]*pendingPages{}, expired: map[string]bool{}}
	s.srv = httptest.NewServer(s.routes())
	s.URL = s.srv.URL + "/v1.0"
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetToken changes the valid bearer token (the old one gets 401).
func (s *Server) SetToken(t string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = t
}

// SetAuthorizer makes the fake accept the bearer tokens ok accepts (an
// OAuth provider's introspection, say) besides its own.
func (s *Server) SetAuthorizer(ok func(token string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorize = ok
}

// SetPartialExceptions makes the calendar view's delta list exceptions
// with their id, series, type, start and end only, as it lists
// occurrences: a client must read them whole.
func (s *Server) SetPartialExceptions(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partialExceptions = on
}

// SetPageSize sets the page size used when a request asks for none.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// Throttle answers the next n requests 429 Too Many Requests with
// Retry-After: retryAfter (omitted when empty).
func (s *Server) Throttle(n int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle.n, s.throttle.retryAfter = n, retryAfter
}

// Throttled counts the 429 answers given.
func (s *Server) Throttled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.throttled
}

// ExpireTokens makes every delta and skip token handed out so far answer
// 410 Gone (syncStateNotFound).
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.rounds {
		s.expired[t] = true
	}
	for t := range s.pending {
		s.expired[t] = true
	}
}

// Requests returns the requests served so far ("GET /v1.0/me/calendars").
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *Server) nextKey() string {
	s.seq++
	return "ck" + strconv.Itoa(s.seq)
}

func (s *Server) newID(prefix string) string {
	s.seq++
	// Real ids are long base64 strings; '=' and '-' make clients escape.
	return prefix + "AAMk-" + strconv.Itoa(s.seq) + "="
}

// AddCalendar adds a calendar and returns its id.
func (s *Server) AddCalendar(name string, canEdit bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &calendar{id: s.newID("cal"), name: name, canEdit: canEdit}
	s.calendars = append(s.calendars, c)
	return c.id
}

// AddContactFolder adds a contact folder and returns its id.
func (s *Server) AddContactFolder(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &folder{id: s.newID("fld"), name: name}
	s.folders = append(s.folders, f)
	return f.id
}

// AddEvent stores ev in calendar cal (a series when it has a recurrence)
// and returns its id.
func (s *Server) AddEvent(cal string, ev Event) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addEvent(cal, ev).ev.ID
}

func (s *Server) addEvent(cal string, ev Event) *item {
	e := ev
	e.ID = s.newID("evt")
	if e.ICalUID == "" {
		sum := sha256.Sum256([]byte(e.ID))
		e.ICalUID = "040000008200E00074C5B7101A82E008" + strings.ToUpper(hex.EncodeToString(sum[:12]))
	}
	e.Type = "singleInstance"
	if e.Recurrence != nil {
		e.Type = "seriesMaster"
	}
	e.ChangeKey = s.nextKey()
	e.LastModifiedDateTime = s.now().UTC().Format(time.RFC3339)
	it := &item{cal: cal, ev: &e, patternKey: e.ChangeKey, exceptions: map[int64]*Event{}, cancelled: map[int64]bool{}}
	s.items[e.ID] = it
	return it
}

// AddRawEvent serves data verbatim as an entry of calendar cal's delta
// (to test malformed JSON); id names it in the snapshot.
func (s *Server) AddRawEvent(cal, id, data string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw[cal] = append(s.raw[cal], rawEntry{id: id, data: data})
}

// UpdateEvent changes a single event or a series master (its occurrences
// change with it).
func (s *Server) UpdateEvent(id string, change func(*Event)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[id]
	change(it.ev)
	it.ev.ChangeKey = s.nextKey()
	it.patternKey = it.ev.ChangeKey
	it.ev.LastModifiedDateTime = s.now().UTC().Format(time.RFC3339)
}

// DeleteEvent removes a single event or a whole series.
func (s *Server) DeleteEvent(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, id)
}

// CancelOccurrence cancels the occurrence of series master that was to
// start at originalStart.
func (s *Server) CancelOccurrence(master string, originalStart time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[master]
	k := originalStart.Unix()
	it.cancelled[k] = true
	delete(it.exceptions, k)
	it.ev.ChangeKey = s.nextKey()
}

// MoveOccurrence turns the occurrence of master at originalStart into an
// exception running from start to end, with change applied (may be nil).
func (s *Server) MoveOccurrence(master string, originalStart, start, end time.Time, change func(*Event)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[master]
	ex := s.occurrence(it, originalStart)
	zone := it.ev.Start.TimeZone
	ex.Start, ex.End = At(start, zone), At(end, zone)
	if change != nil {
		change(ex)
	}
	ex.Type, ex.ChangeKey = "exception", s.nextKey()
	it.exceptions[originalStart.Unix()] = ex
	it.ev.ChangeKey = s.nextKey()
}

// AddContact stores c in folder fld and returns its id.
func (s *Server) AddContact(fld string, c Contact) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.ID = s.newID("con")
	c.ParentFolderID = fld
	c.ChangeKey = s.nextKey()
	c.LastModifiedDateTime = s.now().UTC().Format(time.RFC3339)
	s.contacts[c.ID] = &c
	return c.ID
}

// UpdateContact changes a contact.
func (s *Server) UpdateContact(id string, change func(*Contact)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.contacts[id]
	change(c)
	c.ChangeKey = s.nextKey()
}

// DeleteContact removes a contact.
func (s *Server) DeleteContact(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.contacts, id)
}

// Event returns the stored event (a copy), for assertions.
func (s *Server) Event(id string) (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[id]
	if !ok {
		return Event{}, false
	}
	return *it.ev, true
}

// Events lists the ids of calendar cal's singles and masters, sorted.
func (s *Server) Events(cal string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, it := range s.items {
		if it.cal == cal {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// seriesZone is the zone a series recurs in: the range's, else its
// start's.
func seriesZone(m *Event) *time.Location {
	if m.Recurrence != nil && m.Recurrence.Range.RecurrenceTimeZone != "" {
		return loadZone(m.Recurrence.Range.RecurrenceTimeZone)
	}
	if m.OriginalStartTimeZone != "" {
		return loadZone(m.OriginalStartTimeZone)
	}
	return loadZone(m.Start.TimeZone)
}

// occurrenceID is the id of a series' occurrence: stable, derived from
// the master and the original start, like Graph's.
func occurrenceID(master string, originalStart time.Time) string {
	return master + "-OCC-" + originalStart.UTC().Format("20060102T150405")
}

// occurrence builds the occurrence of it at originalStart (not stored).
func (s *Server) occurrence(it *item, originalStart time.Time) *Event {
	m := it.ev
	st, _ := m.Start.instant()
	en, _ := m.End.instant()
	o := *m
	o.ID = occurrenceID(m.ID, originalStart)
	o.Type, o.SeriesMasterID, o.Recurrence = "occurrence", m.ID, nil
	o.ChangeKey = it.patternKey
	if m.IsAllDay {
		// An all-day occurrence is the same dates, not the same instant.
		y, mo, d := originalStart.In(seriesZone(m)).Date()
		o.Start = Day(y, mo, d, m.Start.TimeZone)
		o.End = DateTimeTimeZone{DateTime: time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Add(en.Sub(st)).Format(localLayout), TimeZone: m.End.TimeZone}
	} else {
		o.Start, o.End = At(originalStart, m.Start.TimeZone), At(originalStart.Add(en.Sub(st)), m.End.TimeZone)
	}
	o.OriginalStart = originalStart.UTC().Format(time.RFC3339)
	return &o
}

// instances lists the occurrences and exceptions of a series overlapping
// [from, to).
func (s *Server) instances(it *item, from, to time.Time) []*Event {
	m := it.ev
	st, err := m.Start.instant()
	if err != nil {
		return nil
	}
	en, _ := m.End.instant()
	var out []*Event
	for _, os := range occurrences(m.Recurrence, st, seriesZone(m), to) {
		k := os.Unix()
		if it.cancelled[k] {
			continue
		}
		ev := it.exceptions[k]
		if ev == nil {
			ev = s.occurrence(it, os)
		} else {
			c := *ev
			ev = &c
		}
		es, _ := ev.Start.instant()
		ee, _ := ev.End.instant()
		if ev.Type == "occurrence" {
			es, ee = os, os.Add(en.Sub(st))
		}
		if ee.After(from) && es.Before(to) {
			out = append(out, ev)
		}
	}
	return out
}

// view lists calendar cal's entries overlapping [from, to): singles,
// occurrences and exceptions, as Graph's calendarView does.
func (s *Server) view(cal string, from, to time.Time) []*Event {
	var out []*Event
	for _, it := range s.items {
		if it.cal != cal {
			continue
		}
		if it.ev.Recurrence != nil {
			out = append(out, s.instances(it, from, to)...)
			continue
		}
		st, err1 := it.ev.Start.instant()
		en, err2 := it.ev.End.instant()
		if err1 != nil || err2 != nil {
			continue
		}
		if en.After(from) && st.Before(to) {
			c := *it.ev
			out = append(out, &c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// render writes ev as JSON in zone tz (the Prefer'd zone).
func render(ev *Event, tz string) json.RawMessage {
	c := *ev
	c.ETag = `W/"` + c.ChangeKey + `"`
	if !c.IsAllDay {
		if t, err := c.Start.instant(); err == nil {
			c.Start = At(t, tz)
		}
		if t, err := c.End.instant(); err == nil {
			c.End = At(t, tz)
		}
	} else {
		c.Start.TimeZone, c.End.TimeZone = tz, tz
	}
	b, _ := json.Marshal(c)
	return b
}

// renderDelta is an entry of the calendar view's delta: like Graph's, an
// occurrence carries its id, series, type, start and end only.
func (s *Server) renderDelta(ev *Event, tz string) json.RawMessage {
	full := render(ev, tz)
	if ev.Type != "occurrence" && (ev.Type != "exception" || !s.partialExceptions) {
		return full
	}
	var all map[string]json.RawMessage
	json.Unmarshal(full, &all)
	short := map[string]json.RawMessage{}
	for _, k := range []string{"@odata.etag", "id", "seriesMasterId", "type", "start", "end"} {
		short[k] = all[k]
	}
	b, _ := json.Marshal(short)
	return b
}

func renderContact(c *Contact) json.RawMessage {
	x := *c
	x.ETag = `W/"` + x.ChangeKey + `"`
	b, _ := json.Marshal(x)
	return b
}

// ---- HTTP ----

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1.0/me/calendars", s.listCalendars)
	mux.HandleFunc("GET /v1.0/me/calendars/{cal}/calendarView/delta", s.eventsDelta)
	mux.HandleFunc("POST /v1.0/me/calendars/{cal}/events", s.createEvent)
	mux.HandleFunc("GET /v1.0/me/events/{id}", s.getEvent)
	mux.HandleFunc("GET /v1.0/me/events/{id}/instances", s.listInstances)
	mux.HandleFunc("PATCH /v1.0/me/events/{id}", s.patchEvent)
	mux.HandleFunc("DELETE /v1.0/me/events/{id}", s.deleteEvent)
	mux.HandleFunc("GET /v1.0/me/contactFolders", s.listFolders)
	mux.HandleFunc("GET /v1.0/me/contactFolders/{fld}", s.getFolder)
	mux.HandleFunc("GET /v1.0/me/contactFolders/{fld}/contacts/delta", s.contactsDelta)
	mux.HandleFunc("GET /v1.0/pages/{token}", s.nextPage)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.Method+" "+r.URL.Path)
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		authorize := s.authorize
		if tok != s.token && (authorize == nil || tok == "" || !authorize(tok)) {
			s.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			apiError(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "Access token is empty or invalid.")
			return
		}
		if s.throttle.n > 0 {
			s.throttle.n--
			s.throttled++
			if s.throttle.retryAfter != "" {
				w.Header().Set("Retry-After", s.throttle.retryAfter)
			}
			s.mu.Unlock()
			apiError(w, http.StatusTooManyRequests, "TooManyRequests", "Application is over its MailboxConcurrency limit.")
			return
		}
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// prefer reads the Prefer header: the zone and the page size asked for.
func (s *Server) prefer(r *http.Request) (tz string, size int) {
	tz, size = "UTC", s.pageSize
	for _, part := range strings.Split(r.Header.Get("Prefer"), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		v = strings.Trim(v, `"`)
		switch k {
		case "outlook.timezone":
			tz = v
		case "odata.maxpagesize":
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				size = n
			}
		}
	}
	return tz, size
}

// paginate answers the first page of items and keeps the rest behind
// $skiptoken links; delta, when not empty, is the round's closing link.
func (s *Server) paginate(w http.ResponseWriter, r *http.Request, items []json.RawMessage, size int, delta string) {
	if items == nil {
		items = []json.RawMessage{}
	}
	var pages [][]json.RawMessage
	for len(items) > size {
		pages = append(pages, items[:size])
		items = items[size:]
	}
	pages = append(pages, items)
	p := &pendingPages{pages: pages, delta: delta, base: "http://" + r.Host + "/v1.0"}
	s.servePage(w, p)
}

func (s *Server) servePage(w http.ResponseWriter, p *pendingPages) {
	body := map[string]any{"value": p.pages[p.next]}
	p.next++
	if p.next < len(p.pages) {
		s.seq++
		tok := "skip" + strconv.Itoa(s.seq)
		s.pending[tok] = p
		body["@odata.nextLink"] = p.base + "/pages/" + tok + "?$skiptoken=" + tok
	} else if p.delta != "" {
		body["@odata.deltaLink"] = p.delta
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) nextPage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := r.PathValue("token")
	p, ok := s.pending[tok]
	if !ok || s.expired[tok] {
		apiError(w, http.StatusGone, "syncStateNotFound", "The sync state generation is not found.")
		return
	}
	delete(s.pending, tok)
	s.servePage(w, p)
}

func (s *Server) listCalendars(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, size := s.prefer(r)
	var out []json.RawMessage
	for i, c := range s.calendars {
		b, _ := json.Marshal(map[string]any{"id": c.id, "name": c.name, "canEdit": c.canEdit, "isDefaultCalendar": i == 0, "hexColor": ""})
		out = append(out, b)
	}
	s.paginate(w, r, out, size, "")
}

func (s *Server) listFolders(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, size := s.prefer(r)
	var out []json.RawMessage
	for _, f := range s.folders {
		b, _ := json.Marshal(map[string]any{"id": f.id, "displayName": f.name})
		out = append(out, b)
	}
	s.paginate(w, r, out, size, "")
}

// getFolder answers one folder; "contacts" names the default one (the
// first added), as Graph's well-known folder name does.
func (s *Server) getFolder(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("fld")
	for i, f := range s.folders {
		if f.id == id || (id == "contacts" && i == 0) {
			writeJSON(w, http.StatusOK, map[string]any{"id": f.id, "displayName": f.name})
			return
		}
	}
	apiError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
}

func (s *Server) calendar(id string) *calendar {
	for _, c := range s.calendars {
		if c.id == id {
			return c
		}
	}
	return nil
}

func (s *Server) hasFolder(id string) bool {
	for _, f := range s.folders {
		if f.id == id {
			return true
		}
	}
	return false
}

// startRound reads the round a delta request continues, or the window of
// a new one; ok is false when an error was answered.
func (s *Server) startRound(w http.ResponseWriter, r *http.Request, kind, coll string) (rd *round, ok bool) {
	q := r.URL.Query()
	if tok := q.Get("$deltatoken"); tok != "" {
		prev, found := s.rounds[tok]
		if !found || s.expired[tok] || prev.coll != coll {
			apiError(w, http.StatusGone, "syncStateNotFound", "The sync state generation is not found.")
			return nil, false
		}
		return prev, true
	}
	rd = &round{kind: kind, coll: coll, seen: map[string]string{}}
	if kind == "events" {
		from, err1 := time.Parse(time.RFC3339, q.Get("startDateTime"))
		to, err2 := time.Parse(time.RFC3339, q.Get("endDateTime"))
		if err1 != nil || err2 != nil || !to.After(from) {
			apiError(w, http.StatusBadRequest, "ErrorInvalidParameter", "startDateTime and endDateTime are required.")
			return nil, false
		}
		rd.from, rd.to = from, to
	}
	return rd, true
}

// finishRound answers the changes since prev (everything for a new
// round) and hands out the next round's token.
func (s *Server) finishRound(w http.ResponseWriter, r *http.Request, prev *round, now map[string]string, bodies map[string]json.RawMessage, path string) {
	_, size := s.prefer(r)
	var ids []string
	for id := range now {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []json.RawMessage
	for _, id := range ids {
		if ck, ok := prev.seen[id]; !ok || ck != now[id] {
			out = append(out, bodies[id])
		}
	}
	var gone []string
	for id := range prev.seen {
		if _, ok := now[id]; !ok {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		b, _ := json.Marshal(map[string]any{"id": id, "@removed": map[string]string{"reason": "deleted"}})
		out = append(out, b)
	}
	s.seq++
	tok := "delta" + strconv.Itoa(s.seq)
	s.rounds[tok] = &round{kind: prev.kind, coll: prev.coll, from: prev.from, to: prev.to, seen: now}
	s.paginate(w, r, out, size, "http://"+r.Host+"/v1.0"+path+"?$deltatoken="+tok)
}

func (s *Server) eventsDelta(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cal := r.PathValue("cal")
	if s.calendar(cal) == nil {
		apiError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	prev, ok := s.startRound(w, r, "events", cal)
	if !ok {
		return
	}
	tz, _ := s.prefer(r)
	now, bodies := map[string]string{}, map[string]json.RawMessage{}
	for _, ev := range s.view(cal, prev.from, prev.to) {
		now[ev.ID], bodies[ev.ID] = ev.ChangeKey, s.renderDelta(ev, tz)
	}
	for _, e := range s.raw[cal] {
		now[e.id], bodies[e.id] = "raw", json.RawMessage(e.data)
	}
	s.finishRound(w, r, prev, now, bodies, "/me/calendars/"+url.PathEscape(cal)+"/calendarView/delta")
}

func (s *Server) contactsDelta(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fld := r.PathValue("fld")
	if !s.hasFolder(fld) {
		apiError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	prev, ok := s.startRound(w, r, "contacts", fld)
	if !ok {
		return
	}
	now, bodies := map[string]string{}, map[string]json.RawMessage{}
	for id, c := range s.contacts {
		if c.ParentFolderID == fld {
			now[id], bodies[id] = c.ChangeKey, renderContact(c)
		}
	}
	for _, e := range s.raw[fld] {
		now[e.id], bodies[e.id] = "raw", json.RawMessage(e.data)
	}
	s.finishRound(w, r, prev, now, bodies, "/me/contactFolders/"+url.PathEscape(fld)+"/contacts/delta")
}

// find resolves an event id: a single or master (it, nil), or an
// occurrence or exception of a series (it, the instance).
func (s *Server) find(id string) (*item, *Event) {
	if it, ok := s.items[id]; ok {
		return it, nil
	}
	master, stamp, ok := strings.Cut(id, "-OCC-")
	if !ok {
		return nil, nil
	}
	it, ok := s.items[master]
	if !ok || it.ev.Recurrence == nil {
		return nil, nil
	}
	t, err := time.Parse("20060102T150405", stamp)
	if err != nil || it.cancelled[t.Unix()] {
		return nil, nil
	}
	if ex, ok := it.exceptions[t.Unix()]; ok {
		return it, ex
	}
	st, _ := it.ev.Start.instant()
	for _, o := range occurrences(it.ev.Recurrence, st, seriesZone(it.ev), t.Add(time.Second)) {
		if o.Equal(t) {
			return it, s.occurrence(it, t)
		}
	}
	return nil, nil
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, inst := s.find(r.PathValue("id"))
	if it == nil {
		apiError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	tz, _ := s.prefer(r)
	ev := it.ev
	if inst != nil {
		ev = inst
	}
	w.Header().Set("ETag", `W/"`+ev.ChangeKey+`"`)
	writeJSON(w, http.StatusOK, render(ev, tz))
}

func (s *Server) listInstances(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[r.PathValue("id")]
	if !ok || it.ev.Recurrence == nil {
		apiError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	from, err1 := time.Parse(time.RFC3339, r.URL.Query().Get("startDateTime"))
	to, err2 := time.Parse(time.RFC3339, r.URL.Query().Get("endDateTime"))
	if err1 != nil || err2 != nil {
		apiError(w, http.StatusBadRequest, "ErrorInvalidParameter", "startDateTime and endDateTime are required.")
		return
	}
	tz, size := s.prefer(r)
	var out []json.RawMessage
	for _, ev := range s.instances(it, from, to) {
		out = append(out, render(ev, tz))
	}
	s.paginate(w, r, out, size, "")
}

func (s *Server) createEvent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cal := s.calendar(r.PathValue("cal"))
	if cal == nil {
		apiError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	if !cal.canEdit {
		apiError(w, http.StatusForbidden, "ErrorAccessDenied", "Access is denied. Check credentials and try again.")
		return
	}
	var ev Event
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20)).Decode(&ev); err != nil {
		apiError(w, http.StatusBadRequest, "RequestBodyRead", err.Error())
		return
	}
	if _, err := ev.Start.instant(); err != nil {
		apiError(w, http.StatusBadRequest, "ErrorInvalidRequest", "start is required")
		return
	}
	tz, _ := s.prefer(r)
	if ev.TransactionID != "" {
		for _, it := range s.items {
			if it.ev.TransactionID == ev.TransactionID {
				writeJSON(w, http.StatusCreated, render(it.ev, tz))
				return
			}
		}
	}
	if ev.OriginalStartTimeZone == "" {
		ev.OriginalStartTimeZone, ev.OriginalEndTimeZone = ev.Start.TimeZone, ev.End.TimeZone
	}
	it := s.addEvent(cal.id, ev)
	writeJSON(w, http.StatusCreated, render(it.ev, tz))
}

// matches checks If-Match against a change key; a missing header matches.
func matches(r *http.Request, changeKey string) bool {
	h := r.Header.Get("If-Match")
	if h == "" || h == "*" {
		return true
	}
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(h), "W/"), `"`) == changeKey
}

func (s *Server) patchEvent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, inst := s.find(r.PathValue("id"))
	if it == nil {
		apiError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	if c := s.calendar(it.cal); c != nil && !c.canEdit {
		apiError(w, http.StatusForbidden, "ErrorAccessDenied", "Access is denied. Check credentials and try again.")
		return
	}
	target := it.ev
	if inst != nil {
		target = inst
	}
	if !matches(r, target.ChangeKey) {
		apiError(w, http.StatusPreconditionFailed, "ErrorIrresolvableConflict", "The send or update operation could not be performed because the change key passed in the request does not match the current change key for the item.")
		return
	}
	var patch map[string]json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20)).Decode(&patch); err != nil {
		apiError(w, http.StatusBadRequest, "RequestBodyRead", err.Error())
		return
	}
	updated := *target
	b, _ := json.Marshal(updated)
	var merged map[string]json.RawMessage
	json.Unmarshal(b, &merged)
	for k, v := range patch {
		switch k {
		case "id", "iCalUId", "type", "changeKey", "seriesMasterId", "originalStart", "transactionId":
			continue // read-only
		}
		merged[k] = v
	}
	b, _ = json.Marshal(merged)
	var next Event
	if err := json.Unmarshal(b, &next); err != nil {
		apiError(w, http.StatusBadRequest, "ErrorInvalidRequest", err.Error())
		return
	}
	if _, err := next.Start.instant(); err != nil {
		apiError(w, http.StatusBadRequest, "ErrorInvalidRequest", err.Error())
		return
	}
	next.ChangeKey = s.nextKey()
	next.LastModifiedDateTime = s.now().UTC().Format(time.RFC3339)
	tz, _ := s.prefer(r)
	if inst != nil {
		next.Type = "exception"
		os, _ := time.Parse(time.RFC3339, inst.OriginalStart)
		it.exceptions[os.Unix()] = &next
		it.ev.ChangeKey = s.nextKey() // the master holds its exceptions
		writeJSON(w, http.StatusOK, render(&next, tz))
		return
	}
	*it.ev = next
	it.patternKey = next.ChangeKey
	writeJSON(w, http.StatusOK, render(it.ev, tz))
}

func (s *Server) deleteEvent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, inst := s.find(r.PathValue("id"))
	if it == nil {
		apiError(w, http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	if c := s.calendar(it.cal); c != nil && !c.canEdit {
		apiError(w, http.StatusForbidden, "ErrorAccessDenied", "Access is denied. Check credentials and try again.")
		return
	}
	target := it.ev
	if inst != nil {
		target = inst
	}
	if !matches(r, target.ChangeKey) {
		apiError(w, http.StatusPreconditionFailed, "ErrorIrresolvableConflict", "The change key does not match.")
		return
	}
	if inst == nil {
		delete(s.items, it.ev.ID)
	} else {
		os, _ := time.Parse(time.RFC3339, inst.OriginalStart)
		it.cancelled[os.Unix()] = true
		delete(it.exceptions, os.Unix())
		it.ev.ChangeKey = s.nextKey()
	}
	w.WriteHeader(http.StatusNoContent)
}

// String describes the fake's content (for failing tests).
func (s *Server) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("graphtest: %d calendars, %d events, %d contacts", len(s.calendars), len(s.items), len(s.contacts))
}
