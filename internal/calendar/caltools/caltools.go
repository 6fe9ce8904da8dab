// Package caltools exposes the calendar to the agent: calendar_search,
// calendar_agenda and calendar_free_slots (read-only, low risk). Event text
// comes from other people's invitations, so every result is marked
// untrusted content.
package caltools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Limits for the agent, tighter than the store's.
const (
	AgendaMax        = 200
	SearchMax        = 25
	descriptionChars = 500
)

// Deps are what the tools work with.
type Deps struct {
	Store *calendar.Store
	Now   func() time.Time
	// Loc is the user's zone: dates without a zone are read in it.
	Loc   *time.Location
	Hours calendar.WorkingHours
}

func (d Deps) loc() *time.Location {
	if d.Loc == nil {
		return d.Store.Floating()
	}
	return d.Loc
}

// window reads from/to with defaults: from now (or today) for days.
func (d Deps) window(from, to string, days int) (time.Time, time.Time, error) {
	now := d.Now()
	f, t := now, time.Time{}
	var err error
	if from != "" {
		if f, err = calendar.ParseWhen(from, now, d.loc()); err != nil {
			return f, t, err
		}
	}
	if to != "" {
		if t, err = calendar.ParseWhen(to, now, d.loc()); err != nil {
			return f, t, err
		}
	} else {
		t = f.AddDate(0, 0, days)
	}
	return f, t, nil
}

// AgendaArgs are calendar_agenda's arguments.
type AgendaArgs struct {
	From      string   `json:"from,omitempty"`
	To        string   `json:"to,omitempty"`
	Calendars []string `json:"calendars,omitempty"`
	Limit     int      `json:"limit,omitempty"`
}

// Agenda runs calendar_agenda.
func (d Deps) Agenda(ctx context.Context, a AgendaArgs) (calendar.Agenda, error) {
	return d.AgendaUpTo(ctx, a, AgendaMax)
}

// AgendaUpTo is Agenda with another cap (the web UI shows more than the
// model is given).
func (d Deps) AgendaUpTo(ctx context.Context, a AgendaArgs, max int) (calendar.Agenda, error) {
	f, t, err := d.window(a.From, a.To, 7)
	if err != nil {
		return calendar.Agenda{}, err
	}
	if a.Limit <= 0 || a.Limit > max {
		a.Limit = max
	}
	ag, err := d.Store.Agenda(ctx, calendar.Query{From: f, To: t, Calendars: a.Calendars, Max: a.Limit})
	trim(ag.Instances)
	return ag, err
}

func trim(ins []calendar.Instance) {
	for i := range ins {
		if r := []rune(ins[i].Description); len(r) > descriptionChars {
			ins[i].Description = string(r[:descriptionChars]) + "…"
		}
	}
}

// SearchArgs are calendar_search's arguments.
type SearchArgs struct {
	Query     string   `json:"query,omitempty"`
	From      string   `json:"from,omitempty"`
	To        string   `json:"to,omitempty"`
	Calendars []string `json:"calendars,omitempty"`
	Attendee  string   `json:"attendee,omitempty"`
	Limit     int      `json:"limit,omitempty"`
}

// SearchResult is calendar_search's answer.
type SearchResult struct {
	Events []calendar.Instance `json:"events"`
}

// Search runs calendar_search.
func (d Deps) Search(ctx context.Context, a SearchArgs) (SearchResult, error) {
	var f, t time.Time
	var err error
	if a.From != "" || a.To != "" {
		if f, t, err = d.window(a.From, a.To, 366); err != nil {
			return SearchResult{}, err
		}
	}
	if a.Limit <= 0 || a.Limit > SearchMax {
		a.Limit = SearchMax
	}
	ev, err := d.Store.Search(ctx, calendar.SearchQuery{Text: a.Query, From: f, To: t, Calendars: a.Calendars, Attendee: a.Attendee, Limit: a.Limit})
	trim(ev)
	return SearchResult{Events: ev}, err
}

// FreeArgs are calendar_free_slots's arguments.
type FreeArgs struct {
	From       string   `json:"from,omitempty"`
	To         string   `json:"to,omitempty"`
	Calendars  []string `json:"calendars,omitempty"`
	MinMinutes int      `json:"min_minutes,omitempty"`
	DayStart   string   `json:"day_start,omitempty"`
	DayEnd     string   `json:"day_end,omitempty"`
	Weekdays   []string `json:"weekdays,omitempty"`
}

// Free runs calendar_free_slots.
func (d Deps) Free(ctx context.Context, a FreeArgs) (calendar.FreeResult, error) {
	f, t, err := d.window(a.From, a.To, 7)
	if err != nil {
		return calendar.FreeResult{}, err
	}
	h := d.Hours
	if a.DayStart != "" {
		if h.Start, err = calendar.ParseClock(a.DayStart); err != nil {
			return calendar.FreeResult{}, err
		}
	}
	if a.DayEnd != "" {
		if h.End, err = calendar.ParseClock(a.DayEnd); err != nil {
			return calendar.FreeResult{}, err
		}
	}
	if len(a.Weekdays) > 0 {
		if h.Days, err = calendar.ParseWeekdays(a.Weekdays); err != nil {
			return calendar.FreeResult{}, err
		}
	}
	if t.Sub(f) > 62*24*time.Hour {
		return calendar.FreeResult{}, fmt.Errorf("%w: ask for at most 62 days of free slots", calendar.ErrBadQuery)
	}
	return d.Store.FreeSlots(ctx, calendar.FreeQuery{From: f, To: t, Calendars: a.Calendars,
		MinLength: time.Duration(a.MinMinutes) * time.Minute, Hours: h, Location: d.loc()})
}

// Tools returns the read tools bound to d.
//
// Their output stays UntrustedOutput (decided for issue 33): a user's own
// calendar is not only their own writing — CalDAV servers (Google, iCloud,
// Fastmail) file other people's invitations into it with the sender's title,
// location and description, and subscribed calendars are remote outright.
// The store does not record which event came from whom, so every event is
// wrapped for the model; the web card unwraps it and says "given to the
// assistant as outside content" rather than calling the calendar untrusted.
func Tools(d Deps) []tools.Tool {
	read := tools.Spec{Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, UntrustedOutput: true, MaxResult: 30000}
	return []tools.Tool{
		Tool(WithSpec(read, "calendar_agenda", "List the user's calendar events between from and to (default: the next 7 days), recurring events expanded, sorted by start. Times are RFC 3339 or dates (YYYY-MM-DD, in the user's zone).", agendaSchema), nil, d.Agenda),
		Tool(WithSpec(read, "calendar_search", "Search calendar events by words (summary, description, location, attendees), attendee, calendar and optional window. Recurring events are shown at their next occurrence.", searchSchema), nil, d.Search),
		Tool(WithSpec(read, "calendar_free_slots", "Find free time: busy events of all (or the named) calendars merged, within working hours (day_start/day_end like 09:00, weekdays like mon), gaps of at least min_minutes (default 30). Use it to answer 'am I free…' and before proposing a meeting.", freeSchema), nil, d.Free),
	}
}

// WithSpec fills a base spec.
func WithSpec(base tools.Spec, name, desc string, schema string) tools.Spec {
	base.Name, base.Description, base.Schema = name, desc, json.RawMessage(schema)
	return base
}

// Tool adapts a typed function to tools.Tool. Domain errors become error
// results the model can act on; only cancellation is a Go error.
func Tool[A, R any](spec tools.Spec, check func(context.Context) error, fn func(context.Context, A) (R, error)) tools.Tool {
	return &tools.Func{
		S:     spec,
		Check: check,
		Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			var a A
			if err := json.Unmarshal(c.Args, &a); err != nil {
				return tools.Result{Content: fmt.Sprintf("arguments for %s could not be read: %v", spec.Name, err), IsError: true}, nil
			}
			r, err := fn(ctx, a)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return tools.Result{}, err
				}
				return tools.Result{Content: err.Error(), IsError: true}, nil
			}
			b, err := json.Marshal(r)
			if err != nil {
				return tools.Result{}, err
			}
			return tools.Result{Content: tools.Cap(string(b), spec.MaxResult)}, nil
		},
	}
}

const agendaSchema = `{"type":"object","additionalProperties":false,"properties":{
"from":{"type":"string","description":"RFC 3339 time or YYYY-MM-DD; default now"},
"to":{"type":"string","description":"RFC 3339 time or YYYY-MM-DD; default from + 7 days"},
"calendars":{"type":"array","items":{"type":"string"},"maxItems":20},
"limit":{"type":"integer","minimum":1,"maximum":200}}}`

const searchSchema = `{"type":"object","additionalProperties":false,"properties":{
"query":{"type":"string","maxLength":300},
"from":{"type":"string"},"to":{"type":"string"},
"calendars":{"type":"array","items":{"type":"string"},"maxItems":20},
"attendee":{"type":"string","maxLength":200},
"limit":{"type":"integer","minimum":1,"maximum":25}}}`

const freeSchema = `{"type":"object","additionalProperties":false,"properties":{
"from":{"type":"string"},"to":{"type":"string"},
"calendars":{"type":"array","items":{"type":"string"},"maxItems":20},
"min_minutes":{"type":"integer","minimum":5,"maximum":1440},
"day_start":{"type":"string","description":"HH:MM"},"day_end":{"type":"string","description":"HH:MM"},
"weekdays":{"type":"array","items":{"type":"string","enum":["mon","tue","wed","thu","fri","sat","sun"]},"maxItems":7}}}`
