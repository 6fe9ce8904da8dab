package mail

import (
	"fmt"
	"strings"
	"time"
)

// ParseQuery reads the search syntax `hestia mail search` and mail
// watches share: free words plus field operators, ANDed —
//
//	from:anna@example.org to:me cc:x subject:"roof quote" body:invoice
//	account:work mailbox:INBOX role:inbox attachment:pdf
//	after:2026-01-05 before:2026-02-01 (local midnight in loc)
//	is:unread is:read is:flagged has:attachment
//
// A value may be double-quoted to hold spaces. A word with a colon that
// is not an operator (a URL, "re:") stays free text. Errors name the
// operator and its bad value.
func ParseQuery(s string, loc *time.Location) (Query, error) {
	var q Query
	var words []string
	toks, err := queryTokens(s)
	if err != nil {
		return q, err
	}
	yes, no := true, false
	for _, t := range toks {
		key, val, ok := strings.Cut(string(t), ":")
		if !ok { // a quoted phrase starts with '"', so it is never an operator
			words = append(words, string(t))
			continue
		}
		key = strings.ToLower(key)
		field := map[string]*string{"from": &q.From, "to": &q.To, "cc": &q.Cc, "subject": &q.Subject, "body": &q.Body,
			"account": &q.Account, "mailbox": &q.Mailbox, "role": &q.Role, "attachment": &q.AttachmentName}[key]
		switch {
		case field != nil:
			if val == "" {
				return q, fmt.Errorf("%w: %s: needs a value", ErrBadQuery, key)
			}
			*field = val
		case key == "after" || key == "before":
			d, err := time.ParseInLocation("2006-01-02", val, loc)
			if err != nil {
				return q, fmt.Errorf("%w: %s:%s is not a date YYYY-MM-DD", ErrBadQuery, key, val)
			}
			if key == "after" {
				q.After = d
			} else {
				q.Before = d
			}
		case key == "is" || key == "has":
			switch strings.ToLower(key + ":" + val) {
			case "is:unread":
				q.Unread = &yes
			case "is:read":
				q.Unread = &no
			case "is:flagged":
				q.Flagged = &yes
			case "has:attachment":
				q.Attachment = &yes
			default:
				return q, fmt.Errorf("%w: %s:%s is not one of is:unread, is:read, is:flagged, has:attachment", ErrBadQuery, key, val)
			}
		default:
			words = append(words, string(t))
		}
	}
	q.Text = strings.Join(words, " ")
	return q, nil
}

// queryToken is one whitespace-separated token with its quotes removed.
type queryToken string

// queryTokens splits s on spaces outside double quotes. A token that is
// quoted as a whole stays one free-text phrase, quotes kept, so the
// full-text search still reads it as a phrase.
func queryTokens(s string) ([]queryToken, error) {
	var out []queryToken
	var b strings.Builder
	inQuote, whole := false, false
	flush := func() {
		if b.Len() > 0 {
			out = append(out, queryToken(b.String()))
		}
		b.Reset()
		whole = false
	}
	for _, r := range s {
		switch {
		case r == '"':
			if !inQuote && b.Len() == 0 {
				whole = true
			}
			if whole {
				b.WriteRune(r) // a phrase keeps its quotes for the full-text search
			}
			inQuote = !inQuote
		case !inQuote && (r == ' ' || r == '\t' || r == '\n'):
			flush()
		default:
			b.WriteRune(r)
		}
	}
	if inQuote {
		return nil, fmt.Errorf("%w: unclosed quote in %q", ErrBadQuery, s)
	}
	flush()
	return out, nil
}
