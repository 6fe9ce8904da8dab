package mail

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/mail/journal"
)

var addrInList = lazyre.New(`[^\s<>,;:"()]+@[^\s<>,;:"()]+`)

// addrSet extracts the normalised set of addresses from a stored address
// header ("Ann <ann@x.org>, bob@y.org").
func addrSet(list string) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range addrInList.FindAllString(strings.ToLower(list), -1) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

func normSet(list []string) []string {
	return addrSet(strings.Join(list, ", "))
}

// normBody compares bodies ignoring line-ending and whitespace differences
// that transfer encodings and mail clients introduce.
func normBody(s string) string { return strings.Join(strings.Fields(s), " ") }

// FindSent implements journal.Finder: live messages of account in a
// Sent-role mailbox dated within [from, to] whose subject, To and Cc sets,
// normalised body (and, for replies, In-Reply-To) all match.
func (s *Store) FindSent(ctx context.Context, account string, exp journal.Expected, from, to time.Time) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT m.id, m.message_id, m.to_addr, m.cc_addr, hestia_body(m.body), m.in_reply_to FROM messages m
		WHERE m.account_id = (SELECT id FROM accounts WHERE name = ?) AND m.deleted_at IS NULL
		AND m.subject = ? AND m.date BETWEEN ? AND ?
		AND EXISTS (SELECT 1 FROM message_paths p JOIN mailboxes b ON b.id = p.mailbox_id WHERE p.message_id = m.id AND b.role = 'sent')
		LIMIT 50`, account, exp.Subject, from.Unix(), to.Unix())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	wantTo, wantCc, wantBody := normSet(exp.To), normSet(exp.Cc), normBody(exp.Body)
	var matches, byID []int64
	for rows.Next() {
		var id int64
		var msgID, toA, ccA, body, irt string
		if err := rows.Scan(&id, &msgID, &toA, &ccA, &body, &irt); err != nil {
			return nil, err
		}
		if !equal(addrSet(toA), wantTo) || !equal(addrSet(ccA), wantCc) || normBody(body) != wantBody {
			continue
		}
		if exp.InReplyTo != "" && irt != exp.InReplyTo {
			continue
		}
		matches = append(matches, id)
		if exp.MessageID != "" && msgID == exp.MessageID {
			byID = append(byID, id)
		}
	}
	// Several content matches (the same note sent twice by hand) are
	// disambiguated by the Message-ID we generated, when the server kept it.
	if len(matches) > 1 && len(byID) == 1 {
		return byID, rows.Err()
	}
	return matches, rows.Err()
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
