package mail

import (
	"errors"
	"testing"
	"time"
)

func TestParseQuery(t *testing.T) {
	t.Parallel()
	loc := time.UTC
	q, err := ParseQuery(`from:anna@example.org roof "solar panel" subject:"quote for roof" after:2026-01-05 is:unread has:attachment https://x.org/a`, loc)
	if err != nil {
		t.Fatal(err)
	}
	if q.From != "anna@example.org" || q.Subject != "quote for roof" || q.Text != `roof "solar panel" https://x.org/a` ||
		!q.After.Equal(time.Date(2026, 1, 5, 0, 0, 0, 0, loc)) || q.Unread == nil || !*q.Unread || q.Attachment == nil {
		t.Errorf("parsed %+v", q)
	}
	for _, bad := range []string{`from:`, `after:yesterday`, `is:maybe`, `subject:"open`} {
		if _, err := ParseQuery(bad, loc); !errors.Is(err, ErrBadQuery) {
			t.Errorf("ParseQuery(%q) = %v, want ErrBadQuery", bad, err)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{`from:a b`, `"x y" is:read`, `subject:"a b" before:2026-01-01`, `re: hi`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuery(s, time.UTC)
		if err != nil && !errors.Is(err, ErrBadQuery) {
			t.Fatalf("error not ErrBadQuery: %v", err)
		}
		_ = q
	})
}
