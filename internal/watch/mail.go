package watch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/search"
)

// MailSearch is the saved search a mail watch holds as its ref: a JSON
// object with these fields (ANDed, as in mail_search), or text in the
// syntax of `hestia mail search` (mail.ParseQuery: `from:anna@… roof`).
type MailSearch struct {
	Query          string    `json:"query,omitempty"`
	Account        string    `json:"account,omitempty"`
	Mailbox        string    `json:"mailbox,omitempty"`
	Role           string    `json:"role,omitempty"`
	From           string    `json:"from,omitempty"`
	To             string    `json:"to,omitempty"`
	Cc             string    `json:"cc,omitempty"`
	Subject        string    `json:"subject,omitempty"`
	Body           string    `json:"body,omitempty"`
	AttachmentName string    `json:"attachment_name,omitempty"`
	Attachment     *bool     `json:"has_attachment,omitempty"`
	Flagged        *bool     `json:"flagged,omitempty"`
	MinSize        int64     `json:"min_size,omitempty"`
	MaxSize        int64     `json:"max_size,omitempty"`
	Unread         *bool     `json:"unread,omitempty"`
	After          time.Time `json:"after,omitzero"`
	Before         time.Time `json:"before,omitzero"`
}

// ParseMailSearch reads a mail watch's ref. Errors name the field.
func ParseMailSearch(ref string) (MailSearch, error) {
	var s MailSearch
	ref = strings.TrimSpace(ref)
	if len(ref) > 2000 {
		return s, fmt.Errorf("the mail search is %d bytes, at most 2000", len(ref))
	}
	if !utf8.ValidString(ref) {
		return s, errors.New("the mail search is not valid UTF-8")
	}
	if !strings.HasPrefix(ref, "{") {
		// The one parser the CLI's search uses, so `from:anna@…` means
		// the sender here too (it used to be searched as words).
		q, err := mail.ParseQuery(ref, time.Local)
		if err != nil {
			return s, fmt.Errorf("the mail search: %w", err)
		}
		s = MailSearch{Query: q.Text, Account: q.Account, Mailbox: q.Mailbox, Role: q.Role, From: q.From, To: q.To, Cc: q.Cc,
			Subject: q.Subject, Body: q.Body, AttachmentName: q.AttachmentName, Attachment: q.Attachment, Flagged: q.Flagged,
			Unread: q.Unread, After: q.After, Before: q.Before}
	} else {
		dec := json.NewDecoder(strings.NewReader(ref))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return s, fmt.Errorf("the mail search is not a JSON object of query, account, mailbox, role, from, to, cc, subject, body, attachment_name, has_attachment, flagged, min_size, max_size: %v", err)
		}
		if dec.More() {
			return s, errors.New("the mail search has text after its JSON object")
		}
	}
	q := s.query()
	if q.Text != "" && search.MatchAll(q.Text) == "" {
		// Search would ignore it and browse every message.
		return s, fmt.Errorf("query %q has no words to search for", q.Text)
	}
	if q.Text == "" && q.Account == "" && q.Mailbox == "" && q.Role == "" && q.From == "" && q.To == "" && q.Cc == "" &&
		q.Subject == "" && q.Body == "" && q.AttachmentName == "" && q.Attachment == nil && q.Flagged == nil && q.MinSize == 0 && q.MaxSize == 0 &&
		q.Unread == nil && q.After.IsZero() && q.Before.IsZero() {
		return s, errors.New("the mail search is empty: give at least one of query, from, to, subject, mailbox, role, … (a watch on every message is refused)")
	}
	switch s.Role {
	case "", mail.RoleInbox, mail.RoleSent, mail.RoleDrafts, mail.RoleTrash, mail.RoleJunk, mail.RoleArchive, mail.RoleAll:
	default:
		return s, fmt.Errorf("role %q is not one of inbox, sent, drafts, trash, junk, archive, all", s.Role)
	}
	if s.MinSize < 0 || s.MaxSize < 0 {
		return s, errors.New("min_size and max_size must not be negative")
	}
	return s, nil
}

func (s MailSearch) query() mail.Query {
	return mail.Query{Text: strings.TrimSpace(s.Query), Account: s.Account, Mailbox: s.Mailbox, Role: s.Role, From: s.From, To: s.To, Cc: s.Cc,
		Subject: s.Subject, Body: s.Body, AttachmentName: s.AttachmentName, Attachment: s.Attachment, Flagged: s.Flagged,
		MinSize: s.MinSize, MaxSize: s.MaxSize, Unread: s.Unread, After: s.After, Before: s.Before}
}

// MailAdapter watches the local mail mirror for newly arrived messages
// matching a saved search. Its snapshot carries a cursor (the newest
// message id already considered), so only mail that reached the mirror
// after the watch began can fire, each message once; the cursor is stored
// with the watch, which makes it survive restarts.
type MailAdapter struct {
	Store *mail.Store
	Now   func() time.Time
	// MaxAge skips arrivals dated older than this (a first sync of an old
	// mailbox is a backfill, not new mail); zero keeps every arrival.
	MaxAge time.Duration
	// MaxPerPoll bounds the matches taken in one poll (default 500); the
	// cursor then stops at the last one taken and the rest follow.
	MaxPerPoll int
}

// MailHit is one newly arrived matching message in a snapshot.
type MailHit struct {
	ID       int64     `json:"id"`
	ThreadID int64     `json:"thread_id"`
	Subject  string    `json:"subject"`
	From     string    `json:"from"`
	Date     time.Time `json:"date"`
	Account  string    `json:"account,omitempty"`
	Mailbox  string    `json:"mailbox,omitempty"`
	Attach   bool      `json:"has_attachments,omitempty"`
	Snippet  string    `json:"snippet,omitempty"`
}

type mailSnap struct {
	// Cursor is the newest mirror id this snapshot considered.
	Cursor int64     `json:"cursor"`
	New    []MailHit `json:"new,omitempty"`
}

// Name implements Adapter.
func (*MailAdapter) Name() string { return "mail" }

// EventTypes implements Adapter.
func (*MailAdapter) EventTypes() []string { return []string{"mail.received"} }

// Validate implements Adapter.
func (*MailAdapter) Validate(ref string) error {
	_, err := ParseMailSearch(ref)
	return err
}

// Snapshot implements Adapter: the first snapshot only sets the cursor, so
// the existing backlog never fires.
func (m *MailAdapter) Snapshot(ctx context.Context, ref string) (json.RawMessage, error) {
	return m.SnapshotSince(ctx, ref, nil)
}

// SnapshotSince implements Incremental: the matching messages that reached
// the mirror after prev's cursor.
func (m *MailAdapter) SnapshotSince(ctx context.Context, ref string, prev json.RawMessage) (json.RawMessage, error) {
	s, err := ParseMailSearch(ref)
	if err != nil {
		return nil, err
	}
	if m.Store == nil {
		return nil, errors.New("the mail mirror is not open")
	}
	maxID, err := m.Store.MaxID(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the mail mirror: %w", err)
	}
	var p mailSnap
	if prev == nil {
		return json.Marshal(mailSnap{Cursor: maxID})
	}
	if err := json.Unmarshal(prev, &p); err != nil {
		return nil, fmt.Errorf("reading the previous mail snapshot: %w", err)
	}
	if maxID < p.Cursor {
		// The mirror was rebuilt and its ids restarted: start again from
		// its current end rather than replaying it.
		return json.Marshal(mailSnap{Cursor: maxID})
	}
	if maxID == p.Cursor {
		return json.Marshal(mailSnap{Cursor: maxID})
	}
	limit := m.MaxPerPoll
	if limit <= 0 {
		limit = 500
	}
	q := s.query()
	q.AfterID, q.UpToID = p.Cursor, maxID
	q.PerMessage, q.NoVectors, q.Limit = true, true, mail.MaxLimit
	var hits []MailHit
	cur := mailSnap{Cursor: maxID}
	var oldest time.Time
	if m.MaxAge > 0 {
		now := time.Now
		if m.Now != nil {
			now = m.Now
		}
		oldest = now().Add(-m.MaxAge)
	}
	for {
		res, err := m.Store.Search(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("searching new mail: %w", err)
		}
		for _, h := range res.Messages {
			// Partial hits hold only some of the words: not a match.
			if h.Partial || (!oldest.IsZero() && !h.Date.IsZero() && h.Date.Before(oldest)) {
				continue
			}
			hits = append(hits, MailHit{ID: h.ID, ThreadID: h.ThreadID, Subject: clipStr(h.Subject, 300), From: clipStr(h.From, 300), Date: h.Date.UTC(),
				Account: h.Account, Mailbox: h.Mailbox, Attach: h.Attach, Snippet: clipStr(h.Snippet, 200)})
		}
		if res.Page.Next == 0 || len(hits) >= limit {
			break
		}
		q.Offset = res.Page.Next
	}
	// Events go out oldest arrival first; when there were more than the
	// limit, the cursor stops at the last one taken so the rest follow.
	sortHits(hits)
	if len(hits) > limit {
		hits = hits[:limit]
		cur.Cursor = hits[len(hits)-1].ID
	}
	cur.New = hits
	return json.Marshal(cur)
}

func sortHits(h []MailHit) {
	slices.SortFunc(h, func(a, b MailHit) int { return cmp.Compare(a.ID, b.ID) })
}

// Events implements Adapter: one mail.received per new match, keyed by
// the mirror's message id (copies of one message share it), so a message
// fires once however often it is seen.
func (*MailAdapter) Events(prev, cur json.RawMessage) ([]Event, error) {
	var a, b mailSnap
	if err := json.Unmarshal(prev, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(cur, &b); err != nil {
		return nil, err
	}
	var out []Event
	for _, h := range b.New {
		if h.ID <= a.Cursor {
			continue
		}
		from := h.From
		if from == "" {
			from = "an unknown sender"
		}
		out = append(out, Event{Type: "mail.received", Key: fmt.Sprintf("mail:%d", h.ID),
			Data: map[string]any{"id": h.ID, "thread_id": h.ThreadID, "subject": h.Subject, "from": h.From, "date": h.Date.Format(time.RFC3339),
				"account": h.Account, "mailbox": h.Mailbox, "has_attachments": h.Attach, "snippet": h.Snippet},
			Text: fmt.Sprintf("New mail from %s: %q (message %d).", from, h.Subject, h.ID)})
	}
	return out, nil
}

// DefaultExpiry implements Adapter: a mail watch lasts 30 days unless the
// user says otherwise.
func (*MailAdapter) DefaultExpiry(json.RawMessage) time.Duration { return 30 * 24 * time.Hour }

// Terminal implements Adapter: a mailbox never ends.
func (*MailAdapter) Terminal(json.RawMessage) bool { return false }
