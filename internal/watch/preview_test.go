package watch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A mail watch's preview lists the messages its search (in the CLI's
// syntax) matches now, over the API too; other sources and bad searches
// are refused naming the field.
func TestMailPreviewListsCurrentMatches(t *testing.T) {
	t.Parallel()
	m := newMailHarness(t)
	ctx := context.Background()
	now := m.c.Now()
	m.deliver(t, "INBOX", "t1@trenitalia.it", "Trenitalia <noreply@trenitalia.it>", "Biglietto 9544", "Frecciarossa 9544", now)
	m.deliver(t, "INBOX", "n@example.org", "News <news@example.org>", "Biglietto news", "from trenitalia.it: strikes", now)
	p, err := m.e.Preview(ctx, "mail", "from:trenitalia.it biglietto", 10)
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != 1 || len(p.Matches) != 1 || p.Matches[0].Subject != "Biglietto 9544" || !strings.Contains(p.Note, "never fire") {
		t.Fatalf("preview = %+v", p)
	}
	for _, tc := range []struct{ source, ref, want string }{
		{"mail", "after:soon", "ref:"},
		{"mail", "", "ref:"},
		{"fax", "x", `source: "fax" is not a watch source`},
	} {
		if _, err := m.e.Preview(ctx, tc.source, tc.ref, 10); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Preview(%q, %q) = %v, want %q", tc.source, tc.ref, err, tc.want)
		}
	}
	mux := http.NewServeMux()
	m.e.Routes(mux)
	post := func(body string) (int, string) {
		req := httptest.NewRequest("POST", "/api/watches/preview", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := post(`{"source":"mail","ref":"subject:biglietto"}`)
	var got Preview
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || got.Total != 2 {
		t.Fatalf("POST preview = %d %s", code, body)
	}
	if code, body := post(`{"source":"mail","ref":"after:soon"}`); code != 400 || !strings.Contains(body, "after:soon") {
		t.Errorf("bad search = %d %s", code, body)
	}
}

// A watch's delivery list is validated and stored; the default is empty.
func TestWatchDeliverStored(t *testing.T) {
	t.Parallel()
	m := newMailHarness(t)
	ctx := context.Background()
	exp := m.c.Now().Add(48 * 3600e9)
	w, err := m.e.Create(ctx, Spec{Source: "mail", Ref: "from:anna@example.org", Instruction: "tell me", ExpiresAt: exp,
		Rules: []Rule{{Event: "mail.received"}}, Deliver: []string{"telegram", "inbox"}})
	if err != nil || strings.Join(w.Deliver, ",") != "inbox,telegram" {
		t.Fatalf("create = %+v, %v", w.Deliver, err)
	}
	if _, err := m.e.Create(ctx, Spec{Source: "mail", Ref: "from:anna@example.org", Instruction: "tell me", ExpiresAt: exp,
		Rules: []Rule{{Event: "mail.received"}}, Deliver: []string{"sms"}}); err == nil || !strings.Contains(err.Error(), `deliver: "sms"`) {
		t.Fatalf("bad deliver: %v", err)
	}
	m.reopen(t)
	if w, err = m.e.Get(ctx, w.ID); err != nil || strings.Join(w.Deliver, ",") != "inbox,telegram" {
		t.Fatalf("after reopen: %+v, %v", w.Deliver, err)
	}
}
