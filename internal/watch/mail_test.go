package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail"
)

// mailHarness is a real mail mirror on disk plus a watch engine reading it.
type mailHarness struct {
	*harness
	ms   *mail.Store
	ad   *MailAdapter
	next int
}

func newMailHarness(t *testing.T) *mailHarness {
	t.Helper()
	dir := t.TempDir()
	ms, err := mail.Open(context.Background(), mail.Options{DBPath: filepath.Join(dir, "db", "mail.db"), BlobDir: filepath.Join(dir, "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	h := &harness{vt: newFakeVT(t), c: &clock{t: time.Date(2026, 1, 5, 8, 30, 0, 0, time.UTC)}, path: filepath.Join(dir, "watches.db")}
	m := &mailHarness{harness: h, ms: ms}
	m.ad = &MailAdapter{Store: ms, Now: h.c.Now, MaxAge: 14 * 24 * time.Hour}
	m.reopen(t)
	return m
}

// reopen opens the engine on the same database, as a restarted daemon does.
func (m *mailHarness) reopen(t *testing.T) {
	t.Helper()
	if m.e != nil {
		m.e.Close()
	}
	e, err := Open(context.Background(), m.path, Options{Now: m.c.Now, Adapters: []Adapter{m.ad},
		Deliver: func(ctx context.Context, d Delivery, msg string) error {
			m.mu.Lock()
			m.delivered = append(m.delivered, fmt.Sprintf("%s|%v|%s", d.Event.Type, d.Event.Data["id"], msg))
			m.mu.Unlock()
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	m.e = e
}

// deliver stores one message in the mirror; a repeated messageID is a
// second copy of the same message (another mailbox).
func (m *mailHarness) deliver(t *testing.T, mailbox, messageID, from, subject, body string, date time.Time) {
	t.Helper()
	m.next++
	raw := fmt.Sprintf("Message-ID: <%s>\r\nFrom: %s\r\nTo: me@example.org\r\nSubject: %s\r\nDate: %s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n",
		messageID, from, subject, date.Format(time.RFC1123Z), body)
	res, err := m.ms.Ingest(context.Background(), []mail.Item{{Account: "home", AccountKind: "local", Mailbox: mailbox, Path: fmt.Sprintf("%s/%d", mailbox, m.next), Raw: []byte(raw)}})
	if err != nil || res.Failed > 0 {
		t.Fatalf("ingest %s: %+v %v", messageID, res, err)
	}
}

func (m *mailHarness) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.delivered...)
}

func TestMailWatchFiresOnNewMatchesOnce(t *testing.T) {
	t.Parallel()
	m := newMailHarness(t)
	ctx := context.Background()
	now := m.c.Now()
	// The backlog: a matching message that was there before the watch.
	m.deliver(t, "INBOX", "old-ticket@trenitalia.it", "Trenitalia <noreply@trenitalia.it>", "Il tuo biglietto", "Biglietto Roma Milano", now.Add(-time.Hour))
	m.deliver(t, "INBOX", "hello@example.org", "Ann <ann@example.org>", "Lunch?", "Lunch tomorrow?", now.Add(-time.Hour))
	w, err := m.e.Create(ctx, Spec{Source: "mail", Ref: `{"from":"trenitalia.it","role":"inbox"}`, Instruction: "tell me when a train ticket arrives", ChatID: "c1",
		Rules: []Rule{{ID: "r", Event: "mail.received"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.ExpiresAt.Sub(now); got != 30*24*time.Hour {
		t.Fatalf("default expiry %s", got)
	}
	m.pass(t)
	if got := m.got(); len(got) != 0 {
		t.Fatalf("the backlog fired: %v", got)
	}

	// New mail: one match, one other sender, one match dated a month ago
	// (a backfill, not new mail).
	m.deliver(t, "INBOX", "t1@trenitalia.it", "Trenitalia <noreply@trenitalia.it>", "Biglietto 9544", "Frecciarossa 9544 Roma Milano", now)
	m.deliver(t, "INBOX", "news@example.org", "News <news@example.org>", "Weekly news", "Trenitalia strikes again", now)
	m.deliver(t, "INBOX", "t0@trenitalia.it", "Trenitalia <noreply@trenitalia.it>", "Biglietto vecchio", "old", now.AddDate(0, -1, 0))
	m.pass(t)
	got := m.got()
	if len(got) != 1 || !strings.HasPrefix(got[0], "mail.received|") || !strings.Contains(got[0], "Biglietto 9544") {
		t.Fatalf("delivered %v, want one mail.received for Biglietto 9544", got)
	}
	// Polling again, and a second copy of the same message in another
	// folder, fire nothing more.
	m.deliver(t, "Archive", "t1@trenitalia.it", "Trenitalia <noreply@trenitalia.it>", "Biglietto 9544", "Frecciarossa 9544 Roma Milano", now)
	m.pass(t)
	m.pass(t)
	if got := m.got(); len(got) != 1 {
		t.Fatalf("a message fired twice: %v", got)
	}

	// A restart on the same database keeps the cursor: only mail that
	// arrives afterwards fires, once.
	m.reopen(t)
	m.pass(t)
	if got := m.got(); len(got) != 1 {
		t.Fatalf("a restart fired old mail again: %v", got)
	}
	m.deliver(t, "INBOX", "t2@trenitalia.it", "Trenitalia <noreply@trenitalia.it>", "Biglietto 9545", "Frecciarossa 9545", now)
	m.pass(t)
	m.reopen(t)
	m.pass(t)
	got = m.got()
	if len(got) != 2 || !strings.Contains(got[1], "Biglietto 9545") {
		t.Fatalf("after restart delivered %v", got)
	}
	ws, err := m.e.Get(ctx, w.ID)
	if err != nil || ws.Events != 2 || ws.LastError != "" {
		t.Fatalf("watch after polls: %+v %v", ws, err)
	}
}

func TestMailWatchFreeTextNeedsEveryWord(t *testing.T) {
	t.Parallel()
	m := newMailHarness(t)
	ctx := context.Background()
	now := m.c.Now()
	if _, err := m.e.Create(ctx, Spec{Source: "mail", Ref: "invoice overdue", Instruction: "overdue invoices", ExpiresAt: now.Add(48 * time.Hour),
		Rules: []Rule{{Event: "mail.received", Where: map[string]any{"account": "home"}}}}); err != nil {
		t.Fatal(err)
	}
	m.deliver(t, "INBOX", "a@x", "Bob <bob@x.org>", "Invoice 42", "Your invoice is attached.", now)
	m.deliver(t, "INBOX", "b@x", "Bob <bob@x.org>", "Invoice 43 overdue", "This invoice is overdue.", now)
	m.pass(t)
	got := m.got()
	if len(got) != 1 || !strings.Contains(got[0], "Invoice 43 overdue") {
		t.Fatalf("delivered %v, want only the message with both words", got)
	}
}

func TestMailWatchTakesABoundedBatchPerPoll(t *testing.T) {
	t.Parallel()
	m := newMailHarness(t)
	m.ad.MaxPerPoll = 2
	ctx := context.Background()
	now := m.c.Now()
	if _, err := m.e.Create(ctx, Spec{Source: "mail", Ref: `{"subject":"alert"}`, Instruction: "alerts", Rules: []Rule{{Event: "mail.received"}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		m.deliver(t, "INBOX", fmt.Sprintf("al%d@x", i), "Monitor <mon@x.org>", fmt.Sprintf("alert %d", i), "disk", now)
	}
	m.pass(t)
	if got := m.got(); len(got) != 2 {
		t.Fatalf("first poll delivered %d, want 2: %v", len(got), got)
	}
	m.pass(t)
	m.pass(t)
	got := m.got()
	if len(got) != 5 {
		t.Fatalf("delivered %d, want all 5 once: %v", len(got), got)
	}
	seen := map[string]bool{}
	for i, g := range got {
		if seen[g] {
			t.Fatalf("%s delivered twice", g)
		}
		seen[g] = true
		if !strings.Contains(g, fmt.Sprintf("alert %d", i)) {
			t.Fatalf("delivery %d is %s: not oldest first", i, g)
		}
	}
}

func TestMailWatchBadSearches(t *testing.T) {
	t.Parallel()
	m := newMailHarness(t)
	ctx := context.Background()
	for _, c := range []struct{ ref, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{`{}`, "empty"},
		{`{"form":"ann"}`, `unknown field "form"`},
		{`{"role":"spam"}`, `role "spam"`},
		{`{"from":"a"} {"to":"b"}`, "after its JSON"},
		{`{"min_size":-1}`, "negative"},
		{`{"from":`, "not a JSON object"},
		{"!!! ???", "no words"},
		{`{"query":"--","from":"ann"}`, "no words"},
		{"\xf4", "UTF-8"},
	} {
		_, err := m.e.Create(ctx, Spec{Source: "mail", Ref: c.ref, Instruction: "x", Rules: []Rule{{Event: "mail.received"}}})
		var fe *FieldError
		if err == nil || !errors.As(err, &fe) || fe.Field != "ref" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ref %q: got %v, want a ref error containing %q", c.ref, err, c.want)
		}
	}
	if _, err := m.e.Create(ctx, Spec{Source: "mail", Ref: "x", Instruction: "x", Rules: []Rule{{Event: "mail.sent"}}}); err == nil || !strings.Contains(err.Error(), "mail.received") {
		t.Errorf("unknown event: %v", err)
	}
	ws, _ := m.e.List(ctx, "")
	if len(ws) != 0 {
		t.Fatalf("bad watches were stored: %+v", ws)
	}
}

func TestMailSnapshotAfterRebuildDoesNotReplay(t *testing.T) {
	t.Parallel()
	m := newMailHarness(t)
	prev, _ := json.Marshal(mailSnap{Cursor: 1000})
	m.deliver(t, "INBOX", "a@x", "Bob <bob@x.org>", "alert", "x", m.c.Now())
	cur, err := m.ad.SnapshotSince(context.Background(), `{"subject":"alert"}`, prev)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := m.ad.Events(prev, cur)
	if err != nil || len(evs) != 0 {
		t.Fatalf("a rebuilt mirror replayed: %v %v", evs, err)
	}
	var s mailSnap
	json.Unmarshal(cur, &s)
	if s.Cursor != 1 {
		t.Fatalf("cursor %d, want the mirror's end 1", s.Cursor)
	}
}

func FuzzParseMailSearch(f *testing.F) {
	for _, s := range []string{"invoice overdue", `{"from":"trenitalia.it","role":"inbox"}`, `{"subject":"alert","has_attachment":true,"min_size":10}`,
		`{"form":"x"}`, `{"role":"spam"}`, `{}`, `{"from":"a"} x`, "   "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		s, err := ParseMailSearch(ref)
		if err != nil {
			return
		}
		// An accepted search is never the whole mailbox, and it survives
		// a round trip through its JSON form unchanged.
		raw, _ := json.Marshal(s)
		again, err := ParseMailSearch(string(raw))
		if err != nil {
			t.Fatalf("re-parsing %s: %v", raw, err)
		}
		if b, _ := json.Marshal(again); string(b) != string(raw) {
			t.Fatalf("round trip changed %s to %s", raw, b)
		}
	})
}

// TestMailWatchTakesTheSearchSyntax: a watch's text ref is read like
// `hestia mail search`: from:X matches the sender (it used to be searched
// as the words "from" and "X", and never fired).
func TestMailWatchTakesTheSearchSyntax(t *testing.T) {
	t.Parallel()
	m := newMailHarness(t)
	ctx := context.Background()
	now := m.c.Now()
	if _, err := m.e.Create(ctx, Spec{Source: "mail", Ref: "from:trenitalia.it biglietto", Instruction: "tickets", ExpiresAt: now.Add(48 * time.Hour),
		Rules: []Rule{{Event: "mail.received"}}}); err != nil {
		t.Fatal(err)
	}
	m.deliver(t, "INBOX", "t1@trenitalia.it", "Trenitalia <noreply@trenitalia.it>", "Biglietto 9544", "Frecciarossa 9544", now)
	m.deliver(t, "INBOX", "n@example.org", "News <news@example.org>", "Biglietto news", "from trenitalia.it: strikes", now)
	m.pass(t)
	got := m.got()
	if len(got) != 1 || !strings.Contains(got[0], "Biglietto 9544") {
		t.Fatalf("delivered %v, want only the Trenitalia message", got)
	}
	if _, err := m.e.Create(ctx, Spec{Source: "mail", Ref: "after:soon", Instruction: "x", Rules: []Rule{{Event: "mail.received"}}}); err == nil || !strings.Contains(err.Error(), "after:soon") {
		t.Errorf("bad operator value: %v", err)
	}
}
