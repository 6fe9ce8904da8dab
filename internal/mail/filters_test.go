package mail

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// pageAll walks every page of q and returns the ids in order.
func pageAll(t *testing.T, s *Store, q Query) []int64 {
	t.Helper()
	q.Limit = MaxLimit
	var ids []int64
	for pages := 0; ; pages++ {
		r, err := s.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if r.Truncated {
			t.Fatalf("%+v: truncated", q)
		}
		for _, m := range r.Messages {
			ids = append(ids, m.ID)
		}
		if r.Page.Next == 0 {
			return ids
		}
		q.Offset = r.Page.Next
		if pages > 100 {
			t.Fatal("paging does not end")
		}
	}
}

func count(t *testing.T, s *Store, q Query) int {
	t.Helper()
	q.Count = true
	r, err := s.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if r.Total == nil {
		t.Fatalf("%+v: no total", q)
	}
	return *r.Total
}

// TestFiltersAreNotTruncated: 700 messages from one sender, 400 of them to
// one recipient in one mailbox. Every filter combination must see all of
// them, not the newest 500 of one filter intersected with the others.
func TestFiltersAreNotTruncated(t *testing.T) {
	t.Parallel()
	s := openStore(t, nil)
	var items []Item
	for i := 0; i < 700; i++ {
		to, box := "someone@else.org", "INBOX"
		if i%7 < 4 {
			to, box = "Target Person <target@x.org>", "Lists/dev"
		}
		date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour).Format(time.RFC1123Z)
		items = append(items, Item{Account: "a", Mailbox: box, Path: fmt.Sprint(i),
			Raw: []byte(msg(fmt.Sprintf("m%d@x", i), "Bulk Sender <sender@big.org>", to, fmt.Sprintf("note %d", i), date, "weekly zeta report"))})
	}
	if _, err := s.Ingest(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		q    Query
		want int
	}{
		{"from", Query{From: "sender@big"}, 700},
		{"to + mailbox", Query{To: "target@x", Mailbox: "Lists/dev"}, 400},
		{"from + to", Query{From: "sender@big", To: "target"}, 400},
		{"to + other mailbox", Query{To: "target@x", Mailbox: "INBOX"}, 0},
		{"text + from", Query{Text: "zeta", From: "big.org"}, 700},
		{"short from", Query{From: "bi", To: "x.o"}, 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := c.q
			q.PerMessage = true
			if n := count(t, s, q); n != c.want {
				t.Errorf("total = %d, want %d", n, c.want)
			}
			ids := pageAll(t, s, q)
			seen := map[int64]bool{}
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("id %d twice", id)
				}
				seen[id] = true
			}
			if len(ids) != c.want {
				t.Errorf("paged %d results, want %d", len(ids), c.want)
			}
		})
	}
}

// TestPhrasesAndPartialMatches: quoted phrases match as phrases, any-word
// hits rank after every all-word hit and say so, counts are exact past 50.
func TestPhrasesAndPartialMatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	items := []Item{
		{Path: "p1", Raw: []byte(msg("p1@x", "a@x.org", "b@x.org", "shop", d, "my brothers add store credit every week"))},
		{Path: "p2", Raw: []byte(msg("p2@x", "a@x.org", "b@x.org", "shop", d, "store the brothers list and add it"))},
		{Path: "p3", Raw: []byte(msg("p3@x", "a@x.org", "b@x.org", "shop", d, "add brothers store"))},
		{Path: "q1", Raw: []byte(msg("q1@x", "c@x.org", "b@x.org", "greek", d, "alpha and beta together"))},
		{Path: "q2", Raw: []byte(msg("q2@x", "c@x.org", "b@x.org", "greek", d, strings50("alpha ")))},
		{Path: "q3", Raw: []byte(msg("q3@x", "c@x.org", "b@x.org", "greek", d, "only beta here"))},
	}
	for i := 0; i < 120; i++ {
		items = append(items, Item{Path: fmt.Sprint("z", i), Raw: []byte(msg(fmt.Sprintf("z%d@x", i), "z@x.org", "b@x.org", fmt.Sprint("zed ", i), d, "the omega word"))})
	}
	for i := range items {
		items[i].Account, items[i].Mailbox = "a", "INBOX"
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	r, err := s.Search(ctx, Query{Text: `"brothers add store"`, PerMessage: true, Count: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Messages) != 1 || *r.Total != 1 || r.Messages[0].Partial {
		t.Errorf("phrase: %d results, total %v", len(r.Messages), *r.Total)
	}
	if n := count(t, s, Query{Text: "brothers add store"}); n != 3 {
		t.Errorf("unquoted words: total %d, want 3", n)
	}

	r, err = s.Search(ctx, Query{Text: "alpha beta", PerMessage: true, Limit: 10, Count: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Messages) != 3 || *r.Total != 1 {
		t.Fatalf("alpha beta: %d results, total %d", len(r.Messages), *r.Total)
	}
	if r.Messages[0].Partial || !r.Messages[1].Partial || !r.Messages[2].Partial || r.Note == "" {
		t.Errorf("partial marks: %+v note %q", r.Messages, r.Note)
	}
	if r.Messages[0].Snippet == "" || r.Messages[0].ID == r.Messages[1].ID {
		t.Errorf("first result %+v", r.Messages[0])
	}
	// A full match is never pushed out of the first page by partial ones.
	r, _ = s.Search(ctx, Query{Text: "alpha beta", Limit: 1, PerMessage: true})
	if len(r.Messages) != 1 || r.Messages[0].Partial || r.Page.Next != 1 {
		t.Errorf("first page: %+v next %d", r.Messages, r.Page.Next)
	}

	if n := count(t, s, Query{Text: "omega"}); n != 120 {
		t.Errorf("count omega = %d, want 120", n)
	}
	if ids := pageAll(t, s, Query{Text: "omega", PerMessage: true}); len(ids) != 120 {
		t.Errorf("paged omega = %d, want 120", len(ids))
	}
}

func strings50(w string) string {
	out := ""
	for i := 0; i < 50; i++ {
		out += w
	}
	return out
}

// TestFilterAccentsShortValuesAttachmentNames: filters fold accents, work
// with one or two characters, and attachment names are searchable.
func TestFilterAccentsShortValuesAttachmentNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	att := "Message-ID: <att@x>\nFrom: b@x.org\nTo: me@x.org\nSubject: the report\nDate: " + d + "\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nsee attached\n--B\nContent-Type: application/pdf; name=\"Quarterly Résumé.pdf\"\nContent-Disposition: attachment; filename=\"Quarterly Résumé.pdf\"\n\n%PDF\n--B--\n"
	items := []Item{
		{Path: "1", Raw: []byte(msg("1@x", "José Müller <jose@café.example>", "me@x.org", "Crème brûlée recipe", d, "Ça va? Déjà vu."))},
		{Path: "2", Raw: []byte(msg("2@x", "Al <al@x.org>", "me@x.org", "Go", d, "short"))},
		{Path: "3", Raw: []byte(att)},
		{Path: "4", Raw: []byte(msg("4@x", "Zoe <zoe@x.org>", "me@x.org", "Solar panels", d, "a banana for the nab on the roof"))},
	}
	for i := range items {
		items[i].Account, items[i].Mailbox = "a", "INBOX"
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		q    Query
		want string
	}{
		{Query{Subject: "creme brulee"}, "Crème brûlée recipe"},
		{Query{From: "jose muller"}, "Crème brûlée recipe"},
		{Query{From: "MÜLLER"}, "Crème brûlée recipe"},
		{Query{Body: "deja vu"}, "Crème brûlée recipe"},
		{Query{Subject: "Go"}, "Go"},
		{Query{From: "al"}, "Go"},
		{Query{AttachmentName: "quarterly"}, "the report"},
		{Query{AttachmentName: ".pdf", Text: "attached"}, "the report"},
		{Query{AttachmentName: "nothing"}, ""},
		// The trigram index only narrows: a value whose trigrams all occur
		// in the message, but not together or not in that field, is no match.
		{Query{Body: "banab"}, ""},
		{Query{Subject: "roof"}, ""},
		{Query{Body: "roof"}, "Solar panels"},
		{Query{Body: "BANANA FOR"}, "Solar panels"},
		{Query{Subject: "panels", Body: "the nab"}, "Solar panels"},
		{Query{Subject: "panels", Body: "the nib"}, ""},
	}
	for _, c := range cases {
		r, err := s.Search(ctx, c.q)
		if err != nil {
			t.Fatalf("%+v: %v", c.q, err)
		}
		var got []string
		for _, m := range r.Messages {
			got = append(got, m.Subject)
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("%+v: got %q, want %q", c.q, got, c.want)
		}
	}
}
