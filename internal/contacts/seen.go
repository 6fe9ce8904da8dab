package contacts

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// MailStats is what the mail mirror shows of a person's addresses.
type MailStats struct {
	Sent     int        `json:"sent"`     // messages the user sent to them
	Received int        `json:"received"` // messages received from them
	Last     *time.Time `json:"last_contact,omitempty"`
}

// MaxCorrespondents bounds the stored copy of the mail's correspondents.
const MaxCorrespondents = 20000

// RefreshCorrespondents replaces the stored "seen in mail" people with cs
// (addresses normalised, duplicates summed). They live in contacts.db
// only: no address book is ever written.
func (s *Store) RefreshCorrespondents(ctx context.Context, cs []Correspondent) (int, error) {
	byAddr := map[string]*Correspondent{}
	var order []string
	for _, c := range cs {
		addr := NormEmail(c.Address)
		if addr == "" {
			continue
		}
		have := byAddr[addr]
		if have == nil {
			if len(order) == MaxCorrespondents {
				continue
			}
			have = &Correspondent{Address: addr}
			byAddr[addr] = have
			order = append(order, addr)
		}
		if have.Name == "" {
			have.Name = clean(c.Name)
		}
		have.Sent += c.Sent
		have.Received += c.Received
		if c.Last.After(have.Last) {
			have.Last = c.Last
		}
	}
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM correspondents`); err != nil {
			return fmt.Errorf("clearing correspondents: %w", err)
		}
		for _, addr := range order {
			c := byAddr[addr]
			var last int64
			if !c.Last.IsZero() {
				last = c.Last.Unix()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO correspondents(address, name, sent, received, last) VALUES (?, ?, ?, ?, ?)`,
				c.Address, c.Name, c.Sent, c.Received, last); err != nil {
				return fmt.Errorf("storing correspondent %s: %w", c.Address, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(order), nil
}

// CountCorrespondents is how many people seen in mail are stored.
func (s *Store) CountCorrespondents(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM correspondents`).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting correspondents: %w", err)
	}
	return n, nil
}

// StoredCorrespondents finds stored correspondents whose name or address
// words start with every word of query (a CorrespondentFinder over
// contacts.db, for when the mail mirror is not at hand), most mailed first.
func (s *Store) StoredCorrespondents(ctx context.Context, query string, limit int) ([]Correspondent, error) {
	match := prefixMatch(query)
	if match == "" {
		return nil, fmt.Errorf("%w: give a name or an address", ErrBadQuery)
	}
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	rows, err := s.db.QueryContext(ctx, `SELECT c.address, c.name, c.sent, c.received, c.last
		FROM correspondents c JOIN correspondents_fts f ON f.rowid = c.id
		WHERE correspondents_fts MATCH ? ORDER BY 2 * c.sent + c.received DESC, c.last DESC, c.address LIMIT ?`, match, limit)
	if err != nil {
		return nil, fmt.Errorf("searching correspondents: %w", err)
	}
	defer rows.Close()
	var out []Correspondent
	for rows.Next() {
		var c Correspondent
		var last int64
		if err := rows.Scan(&c.Address, &c.Name, &c.Sent, &c.Received, &last); err != nil {
			return nil, fmt.Errorf("searching correspondents: %w", err)
		}
		if last != 0 {
			c.Last = time.Unix(last, 0).UTC()
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// mailStats sums the stored correspondents' counts over addrs; nil when
// none of them was seen in mail.
func (s *Store) mailStats(ctx context.Context, addrs []string) (*MailStats, error) {
	var ms MailStats
	seen := false
	for _, a := range addrs {
		var sent, recv int
		var last int64
		err := s.db.QueryRowContext(ctx, `SELECT sent, received, last FROM correspondents WHERE address = ?`, a).Scan(&sent, &recv, &last)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading correspondent %s: %w", a, err)
		}
		seen = true
		ms.Sent += sent
		ms.Received += recv
		if last != 0 {
			if t := time.Unix(last, 0).UTC(); ms.Last == nil || t.After(*ms.Last) {
				ms.Last = &t
			}
		}
	}
	if !seen {
		return nil, nil
	}
	return &ms, nil
}

// automatedRE matches local parts of senders nobody writes to.
var automatedRE = lazyre.New(`^(no-?reply|do-?not-?reply|mailer-daemon|postmaster|bounces?|notifications?|notify|newsletter|news|alerts?|updates?|info|marketing)([+._-].*)?$`)

// automated reports whether an address only ever wrote to the user from a
// machine (a no-reply or notification sender): such senders are not
// offered as people unless the user has written to them.
func automated(c Correspondent) bool {
	if c.Sent > 0 {
		return false
	}
	local, _, _ := strings.Cut(c.Address, "@")
	return automatedRE.MatchString(local)
}

// seenInMail adds, after the people found on cards, the correspondents
// matching text: one whose address is on a card brings that card's
// person; the others become "seen in mail" people (no card, no book),
// most mailed first.
func (s *Store) seenInMail(ctx context.Context, text string, people []Person, limit int) ([]Person, error) {
	have := map[string]bool{}
	for _, p := range people {
		for _, e := range p.Emails {
			have[e] = true
		}
	}
	cs, err := s.StoredCorrespondents(ctx, text, 100)
	if err != nil {
		return people, err
	}
	var viaCard []int64
	var mailOnly []Person
	for _, c := range cs {
		if have[c.Address] || automated(c) {
			continue
		}
		ids, err := s.cardIDs(ctx, `SELECT card_id FROM card_keys WHERE key = ? LIMIT 20`, "e:"+c.Address)
		if err != nil {
			return people, err
		}
		if len(ids) > 0 {
			viaCard = append(viaCard, ids...)
			continue
		}
		have[c.Address] = true
		name := c.Name
		if name == "" {
			name = c.Address
		}
		p := Person{Name: name, Emails: []string{c.Address}, Books: []string{}, SeenInMail: true,
			Mail: &MailStats{Sent: c.Sent, Received: c.Received}}
		if !c.Last.IsZero() {
			t := c.Last
			p.Mail.Last = &t
		}
		mailOnly = append(mailOnly, p)
	}
	if len(viaCard) > 0 {
		more, err := s.people(ctx, viaCard)
		if err != nil {
			return people, err
		}
		for _, p := range more {
			if len(p.Emails) > 0 && have[p.Emails[0]] {
				continue
			}
			for _, e := range p.Emails {
				have[e] = true
			}
			people = append(people, p)
		}
	}
	sort.SliceStable(mailOnly, func(i, j int) bool {
		wi := 2*mailOnly[i].Mail.Sent + mailOnly[i].Mail.Received
		wj := 2*mailOnly[j].Mail.Sent + mailOnly[j].Mail.Received
		return wi > wj
	})
	people = append(people, mailOnly...)
	if len(people) > limit {
		people = people[:limit]
	}
	return people, nil
}
