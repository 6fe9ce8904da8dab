package mail

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Correspondent is one address seen in the mirrored mail with how often
// the user wrote to it and heard from it.
type Correspondent struct {
	Address  string    `json:"address"`
	Name     string    `json:"name,omitempty"`
	Sent     int       `json:"sent"`     // messages the user sent to it (Sent mailboxes)
	Received int       `json:"received"` // messages from it
	Last     time.Time `json:"last"`
}

// correspondentScan bounds how many recent messages one lookup reads.
const correspondentScan = 5000

var addrRE = lazyre.New(`([^<>]*?)\s*<([^<>\s]+@[^<>\s]+)>|([^\s,<>]+@[^\s,<>]+)`)

// splitAddrs reverses joinAddrs ("Name <a@b>, c@d"); a name may itself
// contain a comma, so the list is cut at the addresses, not the commas.
func splitAddrs(s string) [][2]string {
	var out [][2]string
	for _, m := range addrRE.FindAllStringSubmatch(s, -1) {
		if m[2] != "" {
			name := strings.Trim(strings.TrimSpace(m[1]), `,;" `)
			out = append(out, [2]string{name, strings.ToLower(m[2])})
		} else if m[3] != "" {
			out = append(out, [2]string{"", strings.ToLower(m[3])})
		}
	}
	return out
}

// Correspondents finds addresses whose display name or address contains
// query (case-insensitive), counting recent messages sent to them (from a
// mailbox with the sent role) and received from them, newest first by last
// contact. It reads at most the newest 5000 matching messages.
func (s *Store) Correspondents(ctx context.Context, query string, limit int) ([]Correspondent, error) {
	q := strings.ToLower(strings.TrimSpace(query))
	if q == "" {
		return nil, fmt.Errorf("%w: empty correspondent query", ErrBadQuery)
	}
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	return s.correspondents(ctx, q, correspondentScan, limit)
}

// RecentCorrespondents lists every address in the newest scan messages
// (sent to, from the sent mailboxes; received from, elsewhere) for the
// contacts index's "seen in mail" people, newest contact first.
func (s *Store) RecentCorrespondents(ctx context.Context, scan, limit int) ([]Correspondent, error) {
	return s.correspondents(ctx, "", scan, limit)
}

// correspondents counts addresses in the newest scan messages whose
// headers contain q (every message when q is empty).
func (s *Store) correspondents(ctx context.Context, q string, scan, limit int) ([]Correspondent, error) {
	like := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q) + "%"
	rows, err := s.db.QueryContext(ctx, `SELECT m.from_addr, m.to_addr, m.cc_addr, m.date, coalesce(b.role, '')
		FROM messages m LEFT JOIN mailboxes b ON b.id = m.mailbox_id
		WHERE m.deleted_at IS NULL AND (?1 = '%%' OR m.from_addr LIKE ?1 ESCAPE '\' OR m.to_addr LIKE ?1 ESCAPE '\' OR m.cc_addr LIKE ?1 ESCAPE '\')
		ORDER BY m.date DESC LIMIT ?2`, like, scan)
	if err != nil {
		return nil, fmt.Errorf("finding correspondents: %w", err)
	}
	defer rows.Close()
	byAddr := map[string]*Correspondent{}
	note := func(name, addr string, date int64, sent bool) {
		if q != "" && !strings.Contains(strings.ToLower(name), q) && !strings.Contains(addr, q) {
			return
		}
		c := byAddr[addr]
		if c == nil {
			c = &Correspondent{Address: addr}
			byAddr[addr] = c
		}
		if c.Name == "" && name != "" {
			c.Name = name
		}
		if sent {
			c.Sent++
		} else {
			c.Received++
		}
		if t := time.Unix(date, 0).UTC(); t.After(c.Last) {
			c.Last = t
		}
	}
	for rows.Next() {
		var from, to, cc, role string
		var date int64
		if err := rows.Scan(&from, &to, &cc, &date, &role); err != nil {
			return nil, fmt.Errorf("finding correspondents: %w", err)
		}
		if role == "sent" {
			for _, a := range splitAddrs(to + ", " + cc) {
				note(a[0], a[1], date, true)
			}
			continue
		}
		for _, a := range splitAddrs(from) {
			note(a[0], a[1], date, false)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("finding correspondents: %w", err)
	}
	out := make([]Correspondent, 0, len(byAddr))
	for _, c := range byAddr {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Last.Equal(out[j].Last) {
			return out[i].Last.After(out[j].Last)
		}
		return out[i].Address < out[j].Address
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
