package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/parse"
)

func TestMailPageRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testApp(t, t.TempDir())
	defer a.Close()
	m, err := a.OpenMail(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := "Message-ID: <t1@x>\nFrom: Ana <ana@example.org>\nTo: me@example.org\nSubject: Lisbon dates\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nShall we go 14 to 17 March?\n"
	reply := "Message-ID: <t2@x>\nIn-Reply-To: <t1@x>\nReferences: <t1@x>\nFrom: me@example.org\nTo: Ana <ana@example.org>\nSubject: Re: Lisbon dates\nDate: Tue, 6 Jan 2026 10:00:00 +0000\n\nYes, book it.\n"
	withFile := "Message-ID: <f1@x>\nFrom: Bank <bank@example.com>\nTo: me@example.org\nSubject: Statement\nDate: Wed, 7 Jan 2026 10:00:00 +0000\n" +
		"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=BB\n\n--BB\nContent-Type: text/plain\n\nYour statement is attached.\n" +
		"--BB\nContent-Type: text/html\nContent-Disposition: attachment; filename=\"statement.html\"\n\n<script>alert(1)</script>\n--BB--\n"
	items := []mail.Item{
		{Account: "local", Mailbox: "INBOX", Path: "p1", Raw: []byte(first)},
		{Account: "local", Mailbox: "Sent", Path: "p2", Raw: []byte(reply), Flags: parse.Flags{Seen: true}},
		{Account: "local", Mailbox: "INBOX", Path: "p3", Raw: []byte(withFile), Flags: parse.Flags{Seen: true}},
	}
	if _, err := m.Store.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	m.Routes(mux)
	get := func(path string) (*httptest.ResponseRecorder, map[string]any) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var v map[string]any
		json.Unmarshal(rec.Body.Bytes(), &v)
		return rec, v
	}
	errMsg := func(v map[string]any) string {
		e, _ := v["error"].(map[string]any)
		s, _ := e["message"].(string)
		return s
	}

	rec, v := get("/api/mail/mailboxes")
	if rec.Code != 200 || v["total"].(float64) != 3 {
		t.Fatalf("mailboxes: %d %v", rec.Code, v)
	}
	boxes := map[string][2]float64{}
	for _, b := range v["mailboxes"].([]any) {
		o := b.(map[string]any)
		boxes[o["name"].(string)] = [2]float64{o["messages"].(float64), o["unread"].(float64)}
	}
	if boxes["INBOX"] != [2]float64{2, 1} || boxes["Sent"] != [2]float64{1, 0} {
		t.Errorf("mailbox counts (messages, unread): %v", boxes)
	}

	// Collapsed by thread: the two Lisbon messages are one row that says 2.
	rec, v = get("/api/mail/search")
	if rec.Code != 200 {
		t.Fatalf("browse: %d %v", rec.Code, v)
	}
	rows := v["messages"].([]any)
	if len(rows) != 2 {
		t.Fatalf("browse rows = %d, want 2 threads: %v", len(rows), rows)
	}
	counts := map[string]float64{}
	for _, r := range rows {
		o := r.(map[string]any)
		counts[o["subject"].(string)] = o["thread_count"].(float64)
	}
	if counts["Re: Lisbon dates"] != 2 || counts["Statement"] != 1 {
		t.Errorf("thread counts: %v", counts)
	}
	if _, v = get("/api/mail/search?unread=true"); len(v["messages"].([]any)) != 1 || v["messages"].([]any)[0].(map[string]any)["subject"] != "Lisbon dates" {
		t.Errorf("unread filter: %v", v)
	}
	if _, v = get("/api/mail/search?attachments=true"); len(v["messages"].([]any)) != 1 {
		t.Errorf("attachment filter: %v", v)
	}
	if _, v = get("/api/mail/search?attachment_name=statement&count=true"); len(v["messages"].([]any)) != 1 || v["total"] != 1.0 {
		t.Errorf("attachment name filter with a count: %v", v)
	}
	if _, v = get("/api/mail/search?per_message=true&mailbox=INBOX"); len(v["messages"].([]any)) != 2 {
		t.Errorf("per-message INBOX: %v", v)
	}

	for path, want := range map[string]string{
		"/api/mail/search?unread=maybe":                       `unread "maybe" is not true or false`,
		"/api/mail/search?after=5%2F1%2F2026":                 `after "5/1/2026" is not a date`,
		"/api/mail/search?limit=1000":                         `limit "1000" is not a number from 1 to 100`,
		"/api/mail/search?form=ana":                           `unknown parameter "form"`,
		"/api/mail/search?sort=name":                          `sort "name" is not date or size`,
		"/api/mail/search?role=spamfolder":                    `role "spamfolder"`,
		"/api/mail/search?count=yes":                          `count "yes"`,
		"/api/mail/messages/1?offset=-4":                      `offset "-4"`,
		"/api/mail/messages/0":                                `message id "0"`,
		"/api/mail/messages/3/attachments/x":                  `attachment index "x"`,
		"/api/mail/search?after=2026-02-01&before=2026-01-01": "is not after",
	} {
		rec, v := get(path)
		if rec.Code != 400 || !strings.Contains(errMsg(v), want) {
			t.Errorf("%s: %d %q, want 400 naming %q", path, rec.Code, errMsg(v), want)
		}
	}

	rec, v = get("/api/mail/messages/3")
	atts, _ := v["attachments"].([]any)
	if rec.Code != 200 || len(atts) != 1 {
		t.Fatalf("read with attachment: %d %v", rec.Code, v)
	}
	rec, _ = get("/api/mail/messages/3/attachments/0")
	if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), "<script>alert(1)</script>") {
		t.Fatalf("attachment: %d %q", rec.Code, rec.Body.String())
	}
	h := rec.Header()
	if !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") || !strings.Contains(h.Get("Content-Disposition"), "statement.html") ||
		h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("an HTML attachment must download, never render: %v", h)
	}
	if rec, _ = get("/api/mail/messages/3/attachments/1"); rec.Code != 404 {
		t.Errorf("missing attachment index: %d", rec.Code)
	}
	if rec, _ = get("/api/mail/messages/99/attachments/0"); rec.Code != 404 {
		t.Errorf("attachment of a missing message: %d", rec.Code)
	}
	rec, v = get("/api/mail/messages/1/thread")
	if rec.Code != 200 || v["count"].(float64) != 2 || len(v["messages"].([]any)) != 2 {
		t.Errorf("thread: %d %v", rec.Code, v)
	}
}
