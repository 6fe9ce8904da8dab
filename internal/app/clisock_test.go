package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/hestia-dev/hestia/internal/mail"
)

// What the command line asks the daemon on its socket, the API answers:
// dates as the instants the user's local days begin (RFC 3339), and a
// thread page of the size the command asked for.
func TestMailRoutesTakeTheCLIsQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testApp(t, t.TempDir())
	defer a.Close()
	m, err := a.OpenMail(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := "Message-ID: <t1@x>\nFrom: Ana <ana@example.org>\nTo: me@example.org\nSubject: Lisbon dates\nDate: Mon, 5 Jan 2026 23:30:00 +0000\n\nShall we go?\n"
	reply := "Message-ID: <t2@x>\nIn-Reply-To: <t1@x>\nFrom: me@example.org\nTo: Ana <ana@example.org>\nSubject: Re: Lisbon dates\nDate: Tue, 6 Jan 2026 11:00:00 +0000\n\nYes.\n"
	if _, err := m.Store.Ingest(ctx, []mail.Item{
		{Account: "local", Mailbox: "INBOX", Path: "p1", Raw: []byte(first)},
		{Account: "local", Mailbox: "INBOX", Path: "p2", Raw: []byte(reply)},
	}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	m.Routes(mux)
	get := func(path string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var v map[string]any
		json.Unmarshal(rec.Body.Bytes(), &v)
		return rec.Code, v
	}
	// 6 January in UTC+14 runs from 10:00 UTC on the 5th to 10:00 UTC on
	// the 6th: the first message only. As UTC days, the reply.
	local := url.Values{"after": {"2026-01-06T00:00:00+14:00"}, "before": {"2026-01-07T00:00:00+14:00"}, "per_message": {"true"}, "count": {"true"}}
	if code, v := get("/api/mail/search?" + local.Encode()); code != 200 || v["total"] != 1.0 || v["messages"].([]any)[0].(map[string]any)["subject"] != "Lisbon dates" {
		t.Errorf("a local day: %d %v", code, v)
	}
	utc := url.Values{"after": {"2026-01-06"}, "before": {"2026-01-07"}, "per_message": {"true"}, "count": {"true"}}
	if code, v := get("/api/mail/search?" + utc.Encode()); code != 200 || v["total"] != 1.0 || v["messages"].([]any)[0].(map[string]any)["subject"] != "Re: Lisbon dates" {
		t.Errorf("a UTC day: %d %v", code, v)
	}
	// snippets=false (the CLI's listing): the same matches, no snippet.
	if code, v := get("/api/mail/search?q=Lisbon&snippets=true"); code != 200 || v["messages"].([]any)[0].(map[string]any)["snippet"] == "" || v["messages"].([]any)[0].(map[string]any)["snippet"] == nil {
		t.Errorf("with snippets: %d %v", code, v)
	}
	if code, v := get("/api/mail/search?q=Lisbon&snippets=false"); code != 200 || len(v["messages"].([]any)) != 1 || v["messages"].([]any)[0].(map[string]any)["snippet"] != nil && v["messages"].([]any)[0].(map[string]any)["snippet"] != "" {
		t.Errorf("without snippets: %d %v", code, v)
	}
	if code, v := get("/api/mail/search?q=Lisbon&snippets=maybe"); code != 400 {
		t.Errorf("snippets=maybe: %d %v, want 400", code, v)
	}
	if code, v := get("/api/mail/search?after=2026-01-06T00:00:00"); code != 400 {
		t.Errorf("a time without its zone: %d %v, want 400", code, v)
	}
	if code, v := get("/api/mail/messages/1/thread?limit=1"); code != 200 || v["count"] != 2.0 || len(v["messages"].([]any)) != 1 {
		t.Errorf("a thread page of one: %d %v", code, v)
	}
	if code, v := get("/api/mail/messages/1/thread?limit=x"); code != 400 {
		t.Errorf("a thread page of x: %d %v, want 400", code, v)
	}
}
