package calwrite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/tools"
)

// callKey identifies one tool call: a model that repeats a call (same id,
// same arguments) gets the first result, never a second write. Calls
// without an id (CLI) are never deduplicated.
func callKey(tool string, c tools.Call) string {
	if c.ID == "" {
		return newUID()
	}
	h := sha256.Sum256(append([]byte(tool+"\x00"+c.ChatID+"\x00"+c.ID+"\x00"), c.Args...))
	return hex.EncodeToString(h[:])
}

// Tools returns the write tools. w may be nil (specs only: the security
// suite and availability checks use them); the tools then report
// themselves unavailable.
func Tools(w *Writer) []tools.Tool {
	avail := func(ctx context.Context) error {
		if w == nil {
			return errors.New("calendar writes are not configured")
		}
		ts, err := w.targets(ctx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if !t.ReadOnly {
				return nil
			}
		}
		return errors.New("no writable calendar is configured")
	}
	// Not read-only (policy gates them; taint forces a card once outside
	// content was read) and Egress: CalDAV writes leave the machine and a
	// server may send invitations to attendees.
	base := tools.Spec{ReadOnly: false, Egress: true, MaxResult: 4000}
	create := base
	create.Name, create.Risk, create.Schema = "calendar_create", tools.RiskMedium, json.RawMessage(createSchema)
	create.Description = "Create a calendar event (asks the user to approve). Check availability with calendar_free_slots first. Times are RFC 3339 or local YYYY-MM-DDTHH:MM; default length one hour. Attendees are email addresses (resolve names with resolve_recipient). Journaled and confirmed by reading the event back."
	update := base
	update.Name, update.Risk, update.Schema = "calendar_update", tools.RiskMedium, json.RawMessage(updateSchema)
	update.Description = "Change an event by uid (from calendar_search/calendar_agenda): summary, start (keeps the length), end, location, description. With instance (the occurrence's original start) only that occurrence of a recurring event changes. Asks the user to approve."
	del := base
	del.Name, del.Risk, del.Schema = "calendar_delete", tools.RiskHigh, json.RawMessage(deleteSchema)
	del.Description = "Delete an event by uid, or with instance one occurrence of a recurring event. Asks the user to approve."
	const unconfigured = "calendar writes are not configured"
	return []tools.Tool{
		&tools.Func{S: create, Check: avail, Fn: ToolFunc(create.Name, w, unconfigured, func(ctx context.Context, key string, a CreateArgs) (Op, error) { return w.Create(ctx, key, a) }),
			PreviewF: func(ctx context.Context, raw json.RawMessage) string { return w.previewCreate(ctx, raw) }},
		&tools.Func{S: update, Check: avail, Fn: ToolFunc(update.Name, w, unconfigured, func(ctx context.Context, key string, a UpdateArgs) (Op, error) { return w.Update(ctx, key, a) }),
			PreviewF: func(ctx context.Context, raw json.RawMessage) string { return w.previewUpdate(ctx, raw) }},
		&tools.Func{S: del, Check: avail, Fn: ToolFunc(del.Name, w, unconfigured, func(ctx context.Context, key string, a DeleteArgs) (Op, error) { return w.Delete(ctx, key, a) }),
			PreviewF: func(ctx context.Context, raw json.RawMessage) string { return w.previewDelete(ctx, raw) }},
	}
}

// ToolFunc is the body of a journaled write tool, the calendar's and the
// tasks' ones: it reads the call's arguments into A, runs fn under the
// call's key (a repeated call is the same write, see callKey) and answers
// with the op as JSON, or with the error and, once journaled, the op's
// state. With w nil every call answers unconfigured, as an error.
func ToolFunc[A any](name string, w *Writer, unconfigured string, fn func(ctx context.Context, key string, a A) (Op, error)) func(context.Context, tools.Call) (tools.Result, error) {
	return func(ctx context.Context, c tools.Call) (tools.Result, error) {
		if w == nil {
			return tools.Result{Content: unconfigured, IsError: true}, nil
		}
		var a A
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return tools.Result{Content: fmt.Sprintf("arguments for %s could not be read: %v", name, err), IsError: true}, nil
		}
		op, err := fn(ctx, callKey(name, c), a)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return tools.Result{}, err
			}
			msg := err.Error()
			if op.ID != 0 {
				msg += fmt.Sprintf(" (journal op %d, state %s; it will not be retried automatically)", op.ID, op.State)
			}
			return tools.Result{Content: msg, IsError: true}, nil
		}
		b, _ := json.Marshal(op)
		return tools.Result{Content: string(b), IsError: op.State == StateFailed}, nil
	}
}

func (w *Writer) fmtSpan(s, e time.Time) string {
	s, e = s.In(w.loc), e.In(w.loc)
	if s.Format("2006-01-02") == e.Format("2006-01-02") {
		return s.Format("Mon 2006-01-02 15:04") + "–" + e.Format("15:04")
	}
	return s.Format("Mon 2006-01-02 15:04") + " – " + e.Format("Mon 2006-01-02 15:04")
}

func (w *Writer) conflicts(ctx context.Context, s, e time.Time, skipUID string) string {
	ins, err := w.cal.ConflictsWith(ctx, calendar.Interval{Start: s, End: e}, nil)
	if err != nil {
		return ""
	}
	var names []string
	for _, in := range ins {
		if in.UID != skipUID {
			names = append(names, fmt.Sprintf("%q %s", in.Summary, in.Start.In(w.loc).Format("15:04")))
		}
	}
	if len(names) == 0 {
		return "; no conflicts"
	}
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return "; CONFLICTS with " + strings.Join(names, ", ")
}

func (w *Writer) previewCreate(ctx context.Context, raw json.RawMessage) string {
	if w == nil {
		return ""
	}
	var a CreateArgs
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	f, err := w.prepareCreate(a)
	if err != nil {
		return "invalid: " + err.Error()
	}
	cal := a.Calendar
	if cal == "" {
		if t, err := w.target(ctx, "", ""); err == nil {
			cal = t.Name
		}
	}
	s := fmt.Sprintf("create %q on %s in calendar %q", a.Summary, w.fmtSpan(*f.Start, *f.End), cal)
	if f.RRule != "" {
		s += ", repeating " + f.RRule
	}
	if len(f.Attendees) > 0 {
		s += ", inviting " + strings.Join(f.Attendees, ", ")
	}
	return s + w.conflicts(ctx, *f.Start, *f.End, "")
}

func (w *Writer) describe(ctx context.Context, uid, calName string) string {
	cals, _ := w.cal.CalendarsOf(ctx, uid)
	if len(cals) == 0 {
		return fmt.Sprintf("unknown event %s", uid)
	}
	sum, _ := w.cal.SummaryOf(ctx, uid)
	return fmt.Sprintf("%q (%s) in %s", sum, uid, strings.Join(cals, ", "))
}

func (w *Writer) previewUpdate(ctx context.Context, raw json.RawMessage) string {
	if w == nil {
		return ""
	}
	var a UpdateArgs
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	var parts []string
	if a.Summary != nil {
		parts = append(parts, fmt.Sprintf("summary → %q", *a.Summary))
	}
	if a.Start != "" {
		parts = append(parts, "start → "+a.Start)
	}
	if a.End != "" {
		parts = append(parts, "end → "+a.End)
	}
	if a.Location != nil {
		parts = append(parts, fmt.Sprintf("location → %q", *a.Location))
	}
	if a.Description != nil {
		parts = append(parts, "description changed")
	}
	what := "every occurrence of"
	if a.Instance != "" {
		what = "the occurrence " + a.Instance + " of"
	}
	s := fmt.Sprintf("update %s %s: %s", what, w.describe(ctx, a.UID, a.Calendar), strings.Join(parts, ", "))
	if a.Start != "" {
		if st, err := w.when("start", a.Start); err == nil {
			s += w.conflicts(ctx, st, st.Add(time.Hour), a.UID)
		}
	}
	return s
}

func (w *Writer) previewDelete(ctx context.Context, raw json.RawMessage) string {
	if w == nil {
		return ""
	}
	var a DeleteArgs
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	if a.Instance != "" {
		return fmt.Sprintf("delete the occurrence %s of %s", a.Instance, w.describe(ctx, a.UID, a.Calendar)) + w.copiesNote(ctx, a)
	}
	return "delete " + w.describe(ctx, a.UID, a.Calendar) + " (all occurrences)" + w.copiesNote(ctx, a)
}

// copiesNote tells the card what else a delete removes: the other files
// of the calendar holding versions of the event (for one occurrence, its
// overrides there), which the agenda hides behind the newest version. It
// is empty when there are none.
func (w *Writer) copiesNote(ctx context.Context, a DeleteArgs) string {
	cal := a.Calendar
	if cal == "" {
		cals, err := w.cal.CalendarsOf(ctx, a.UID)
		if err != nil || len(cals) != 1 {
			return ""
		}
		cal = cals[0]
	}
	copies, err := w.cal.CopiesOf(ctx, cal, a.UID)
	if err != nil || len(copies) == 0 {
		return ""
	}
	if a.Instance == "" {
		files := otherFiles(copies, "", nil)
		if len(files) < 2 {
			return ""
		}
		return fmt.Sprintf("; removes all %d copies of it in calendar %q: %s", len(files), cal, fileList(files))
	}
	inst, err := w.when("instance", a.Instance)
	if err != nil {
		return ""
	}
	files := otherFiles(copies, copies[0].File, func(c calendar.EventCopy) bool {
		return !c.RecurrenceID.IsZero() && sameStart(c.RecurrenceID, inst, c.AllDay)
	})
	switch len(files) {
	case 0:
		return ""
	case 1:
		return "; its other copy in calendar " + strconv.Quote(cal) + " is removed too: " + files[0]
	}
	return fmt.Sprintf("; its %d other copies in calendar %q are removed too: %s", len(files), cal, fileList(files))
}

// fileList names files for a card, the first few.
func fileList(files []string) string {
	if len(files) > 5 {
		return strings.Join(files[:5], ", ") + fmt.Sprintf(" and %d more", len(files)-5)
	}
	return strings.Join(files, ", ")
}

const createSchema = `{"type":"object","additionalProperties":false,"required":["summary","start"],"properties":{
"calendar":{"type":"string","maxLength":200},
"summary":{"type":"string","minLength":1,"maxLength":500},
"start":{"type":"string","description":"RFC 3339, or local YYYY-MM-DDTHH:MM, or YYYY-MM-DD with all_day"},
"end":{"type":"string"},
"duration_minutes":{"type":"integer","minimum":1,"maximum":44640},
"all_day":{"type":"boolean"},
"location":{"type":"string","maxLength":500},
"description":{"type":"string","maxLength":4000},
"attendees":{"type":"array","items":{"type":"string","maxLength":254},"maxItems":50},
"rrule":{"type":"string","maxLength":300,"description":"RFC 5545 RRULE value, e.g. FREQ=WEEKLY;BYDAY=MO;COUNT=10"}}}`

const updateSchema = `{"type":"object","additionalProperties":false,"required":["uid"],"properties":{
"uid":{"type":"string","minLength":1,"maxLength":500},
"calendar":{"type":"string","maxLength":200},
"instance":{"type":"string","description":"original start of one occurrence (RFC 3339 or local time)"},
"summary":{"type":"string","minLength":1,"maxLength":500},
"start":{"type":"string"},"end":{"type":"string"},
"location":{"type":"string","maxLength":500},
"description":{"type":"string","maxLength":4000}}}`

const deleteSchema = `{"type":"object","additionalProperties":false,"required":["uid"],"properties":{
"uid":{"type":"string","minLength":1,"maxLength":500},
"calendar":{"type":"string","maxLength":200},
"instance":{"type":"string"}}}`
