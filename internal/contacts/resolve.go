package contacts

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Correspondent is an address seen in mail (filled by the mail mirror).
type Correspondent struct {
	Address  string
	Name     string
	Sent     int
	Received int
	Last     time.Time
}

// CorrespondentFinder looks up addresses in mail whose name or address
// contains query. Nil means no mail is available.
type CorrespondentFinder func(ctx context.Context, query string, limit int) ([]Correspondent, error)

// Evidence says why a candidate was proposed.
type Evidence struct {
	Card     bool       `json:"card"`            // an address-book card matched
	Books    []string   `json:"books,omitempty"` // the address books holding it
	Mailed   int        `json:"mailed"`          // messages the user sent to the address
	Received int        `json:"received"`        // messages received from it
	Last     *time.Time `json:"last_contact,omitempty"`
	Matched  string     `json:"matched"` // what matched: "full name", "name", "nickname", "mail name"
}

// Candidate is one possible recipient.
type Candidate struct {
	Name     string   `json:"name"`
	Email    string   `json:"email"`
	Others   []string `json:"other_emails,omitempty"`
	Org      string   `json:"org,omitempty"`
	Score    float64  `json:"score"`
	Evidence Evidence `json:"evidence"`
}

// Resolution statuses.
const (
	Unique    = "unique"
	Ambiguous = "ambiguous"
	NotFound  = "none"
)

// Resolution is the answer to "who is X".
type Resolution struct {
	Query      string      `json:"query"`
	Status     string      `json:"status"`
	Candidates []Candidate `json:"candidates"`
	// Note tells the model what to do with the status.
	Note string `json:"note"`
}

// MaxCandidates caps a resolution.
const MaxCandidates = 10

var hintRE = lazyre.New(`(?i)\s+(?:from|at|of|@)\s+`)

// Resolve turns a name as a person would say it ("Marco", "Anna from
// Polimi") into ranked candidate addresses. Contacts and mail
// correspondents are merged by address; a hint after from/at/of must match
// the organisation, the address's domain or the name. More than one
// candidate is Ambiguous: the caller must ask the user, never pick.
func (s *Store) Resolve(ctx context.Context, query string, mail CorrespondentFinder, now time.Time) (Resolution, error) {
	res := Resolution{Query: query}
	q := strings.TrimSpace(query)
	if q == "" || len(q) > 200 {
		return res, fmt.Errorf("%w: give a name (at most 200 characters)", ErrBadQuery)
	}
	if e := NormEmail(q); e != "" {
		// Already an address: report what is known about it.
		c := Candidate{Email: e, Name: e, Evidence: Evidence{Matched: "address"}, Score: 1}
		if ps, err := s.searchCards(ctx, e, 1); err == nil && len(ps) > 0 {
			c.Name, c.Org, c.Evidence.Card, c.Evidence.Books = ps[0].Name, ps[0].Org, true, ps[0].Books
		}
		if mail == nil {
			mail = s.StoredCorrespondents
		}
		if cs, err := mail(ctx, e, 5); err == nil {
			for _, m := range cs {
				if m.Address == e {
					addMail(&c, m)
				}
			}
		}
		res.Status, res.Candidates = Unique, []Candidate{c}
		res.Note = "the query is an address"
		return res, nil
	}
	name, hint := q, ""
	if loc := hintRE.FindStringIndex(q); loc != nil {
		name, hint = strings.TrimSpace(q[:loc[0]]), strings.TrimSpace(q[loc[1]:])
	}
	words := strings.Fields(Fold(name))
	if len(words) == 0 {
		return res, fmt.Errorf("%w: no name in %q", ErrBadQuery, query)
	}
	byEmail := map[string]*Candidate{}
	var cands []*Candidate
	if mail == nil {
		mail = s.StoredCorrespondents // no mail mirror at hand: its copy
	}
	people, err := s.searchCards(ctx, name, MaxResults)
	if err != nil {
		return res, err
	}
	for _, p := range people {
		how, ok := nameMatch(words, append(append([]string{p.Name}, p.OtherName...), p.Nicknames...), p.Name)
		if !ok {
			continue // matched only on organisation or address
		}
		c := &Candidate{Name: p.Name, Org: p.Org, Evidence: Evidence{Card: true, Books: p.Books, Matched: how}}
		if len(p.Emails) > 0 {
			c.Email, c.Others = p.Emails[0], p.Emails[1:]
		}
		cands = append(cands, c)
		for _, e := range p.Emails {
			byEmail[e] = c
		}
	}
	if mail != nil {
		cs, err := mail(ctx, name, 50)
		if err != nil {
			return res, fmt.Errorf("looking up mail correspondents: %w", err)
		}
		for _, m := range cs {
			if c, ok := byEmail[m.Address]; ok {
				if c.Email != m.Address && m.Sent+m.Received > 0 {
					// Prefer the address the user actually mails.
					if c.Evidence.Mailed+c.Evidence.Received < m.Sent+m.Received {
						c.Others = appendNew(removeStr(c.Others, m.Address), c.Email)
						c.Email = m.Address
					}
				}
				addMail(c, m)
				continue
			}
			how, ok := nameMatch(words, []string{m.Name, localPart(m.Address)}, m.Name)
			if !ok {
				continue
			}
			c := &Candidate{Name: m.Name, Email: m.Address, Evidence: Evidence{Matched: "mail " + how}}
			if c.Name == "" {
				c.Name = m.Address
			}
			addMail(c, m)
			cands = append(cands, c)
			byEmail[m.Address] = c
		}
	}
	var out []Candidate
	for _, c := range cands {
		if c.Email == "" {
			continue // a card without an address cannot be mailed
		}
		if hint != "" && !hintMatches(hint, c) {
			continue
		}
		c.Score = score(c, now)
		out = append(out, *c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > MaxCandidates {
		out = out[:MaxCandidates]
	}
	res.Candidates = out
	switch len(out) {
	case 0:
		res.Status, res.Note = NotFound, "no contact or correspondent matches; ask the user for the address"
	case 1:
		res.Status, res.Note = Unique, "one match"
	default:
		res.Status, res.Note = Ambiguous, "several people match: show the candidates to the user and ask which one; do not pick"
	}
	return res, nil
}

func addMail(c *Candidate, m Correspondent) {
	c.Evidence.Mailed += m.Sent
	c.Evidence.Received += m.Received
	if !m.Last.IsZero() && (c.Evidence.Last == nil || m.Last.After(*c.Evidence.Last)) {
		t := m.Last
		c.Evidence.Last = &t
	}
}

func removeStr(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func localPart(addr string) string {
	l, _, _ := strings.Cut(addr, "@")
	return strings.NewReplacer(".", " ", "_", " ", "-", " ").Replace(l)
}

// nameMatch reports how the query words match any of names: every word
// must start a word of one name. primary is the display name: matching it
// exactly is a "full name" match.
func nameMatch(words []string, names []string, primary string) (string, bool) {
	if strings.Join(strings.Fields(Fold(primary)), " ") == strings.Join(words, " ") {
		return "full name", true
	}
	for i, n := range names {
		nw := strings.FieldsFunc(Fold(n), func(r rune) bool { return r == ' ' || r == '-' || r == '.' || r == ',' })
		all := true
		for _, w := range words {
			found := false
			for _, x := range nw {
				if strings.HasPrefix(x, w) {
					found = true
					break
				}
			}
			if !found {
				all = false
				break
			}
		}
		if all {
			if i == 0 {
				return "name", true
			}
			return "other name", true
		}
	}
	return "", false
}

func hintMatches(hint string, c *Candidate) bool {
	h := Fold(hint)
	if strings.Contains(Fold(c.Org), h) || strings.Contains(Fold(c.Name), h) {
		return true
	}
	for _, e := range append([]string{c.Email}, c.Others...) {
		if _, dom, ok := strings.Cut(e, "@"); ok && strings.Contains(dom, strings.ReplaceAll(h, " ", "")) {
			return true
		}
	}
	return false
}

// score ranks candidates: a card and an exact name weigh most, then how
// much mail was exchanged (log scale, sent counting double) and how
// recently.
func score(c *Candidate, now time.Time) float64 {
	s := 0.0
	switch {
	case c.Evidence.Matched == "full name":
		s += 3
	case strings.HasSuffix(c.Evidence.Matched, "name"):
		s += 2
	default:
		s += 1
	}
	if c.Evidence.Card {
		s += 1
	}
	s += math.Log2(1 + float64(2*c.Evidence.Mailed+c.Evidence.Received))
	if c.Evidence.Last != nil {
		switch age := now.Sub(*c.Evidence.Last); {
		case age < 90*24*time.Hour:
			s += 1
		case age < 365*24*time.Hour:
			s += 0.5
		}
	}
	return math.Round(s*100) / 100
}
