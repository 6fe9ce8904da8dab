package watch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Previewer is an Adapter that can show what a reference matches now,
// before a watch is saved (`hestia watch add --dry-run`, the web form).
type Previewer interface {
	Preview(ctx context.Context, ref string, limit int) (Preview, error)
}

// Preview is what a watch's reference matches at this moment. Matching
// messages that are already there never fire: only later arrivals do.
type Preview struct {
	Source  string    `json:"source"`
	Ref     string    `json:"ref"`
	Matches []MailHit `json:"matches"`
	// Total counts every current match (Matches holds the newest).
	Total int    `json:"total"`
	Note  string `json:"note"`
}

// MaxPreview bounds the matches a preview lists.
const MaxPreview = 50

// Preview implements Previewer: the newest messages the saved search
// matches now, with the same rules as a firing (partial free-text hits do
// not count).
func (m *MailAdapter) Preview(ctx context.Context, ref string, limit int) (Preview, error) {
	s, err := ParseMailSearch(ref)
	if err != nil {
		return Preview{}, &FieldError{Field: "ref", Msg: err.Error()}
	}
	if m.Store == nil {
		return Preview{}, errors.New("the mail mirror is not open")
	}
	if limit <= 0 || limit > MaxPreview {
		limit = 10
	}
	q := s.query()
	q.PerMessage, q.NoVectors, q.Limit, q.Count = true, true, limit, true
	res, err := m.Store.Search(ctx, q)
	if err != nil {
		return Preview{}, fmt.Errorf("searching the mail mirror: %w", err)
	}
	p := Preview{Source: "mail", Ref: ref, Matches: []MailHit{},
		Note: "messages already here never fire; the watch fires for matching mail that arrives after it is saved"}
	for _, h := range res.Messages {
		if h.Partial {
			continue
		}
		p.Matches = append(p.Matches, MailHit{ID: h.ID, ThreadID: h.ThreadID, Subject: clipStr(h.Subject, 300), From: clipStr(h.From, 300),
			Date: h.Date.UTC(), Account: h.Account, Mailbox: h.Mailbox, Attach: h.Attach, Snippet: clipStr(h.Snippet, 200)})
	}
	p.Total = len(p.Matches)
	if res.Total != nil {
		p.Total = *res.Total
	}
	return p, nil
}

// Preview shows what a watch on source/ref would match now. Only sources
// whose adapter is a Previewer (mail) have one; others are refused naming
// the field.
func (e *Engine) Preview(ctx context.Context, source, ref string, limit int) (Preview, error) {
	ad, ok := e.adapters[source]
	if !ok {
		return Preview{}, fieldErr("source", "%q is not a watch source (one of %s)", source, strings.Join(e.Sources(), ", "))
	}
	pv, ok := ad.(Previewer)
	if !ok {
		return Preview{}, fieldErr("source", "%s watches have no preview (only mail watches list what their search matches)", source)
	}
	return pv.Preview(ctx, ref, limit)
}

// handlePreview serves POST /api/watches/preview {source, ref, limit}.
func (e *Engine) handlePreview(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Source string `json:"source"`
		Ref    string `json:"ref"`
		Limit  int    `json:"limit"`
	}
	if err := httpjson.Decode(w, r, &b); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	p, err := e.Preview(r.Context(), b.Source, b.Ref, b.Limit)
	write(w, r, http.StatusOK, p, err)
}

var _ Previewer = (*MailAdapter)(nil)
