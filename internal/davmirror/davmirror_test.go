package davmirror

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
)

// counter counts requests by method.
type counter struct {
	mu sync.Mutex // guards n
	n  map[string]int
	rt http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.Method]++
	c.mu.Unlock()
	return c.rt.RoundTrip(r)
}

// take returns the counts since the last call as "METHOD=n" sorted.
func (c *counter) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for m, n := range c.n {
		out = append(out, m+"="+strconv.Itoa(n))
	}
	sort.Strings(out)
	c.n = map[string]int{}
	return strings.Join(out, " ")
}

func event(uid, summary string) string {
	return "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:" + uid + "\r\nDTSTAMP:20260101T000000Z\r\n" +
		"DTSTART:20260302T093000Z\r\nDTEND:20260302T100000Z\r\nSUMMARY:" + summary + "\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
}

func put(t *testing.T, base, p, body, ctype string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, base+p, strings.NewReader(body))
	req.SetBasicAuth("carol", "x")
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("PUT %s: %v %v", p, err, resp)
	}
	resp.Body.Close()
}

func del(t *testing.T, base, p string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+p, nil)
	req.SetBasicAuth("carol", "x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("DELETE %s: %v %v", p, err, resp)
	}
	resp.Body.Close()
}

func files(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			sum := ""
			for _, l := range strings.Split(string(b), "\r\n") {
				if strings.HasPrefix(l, "SUMMARY:") || strings.HasPrefix(l, "FN:") {
					sum = l[strings.Index(l, ":")+1:]
				}
			}
			out = append(out, e.Name()+"="+sum)
		}
	}
	return strings.Join(out, " ")
}

// TestMirrorCTagAndSyncToken runs passes against Radicale and checks what
// each one asked the server: nothing changed → one PROPFIND and no GET;
// changes → a sync-collection REPORT and GETs of the changed objects only;
// a refused token → a full listing that still fetches nothing unchanged.
func TestMirrorCTagAndSyncToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := davtest.Start(t, "carol", davtest.Collection{Name: "cal", Display: "Cal"})
	put(t, base, "carol/cal/a.ics", event("a", "Alpha"), "text/calendar")
	put(t, base, "carol/cal/b.ics", event("b", "Beta"), "text/calendar")
	cnt := &counter{n: map[string]int{}, rt: http.DefaultTransport}
	acc := Account{Name: "r", URL: base, Username: "carol", Password: "x", HTTP: &http.Client{Transport: cnt}}
	dir := filepath.Join(t.TempDir(), "m")
	pass := func(wantMode, wantReqs string, wantStats Stats) {
		t.Helper()
		st, err := Mirror(ctx, acc, ICalendar, "/carol/cal/", dir)
		if err != nil {
			t.Fatal(err)
		}
		wantStats.Mode = wantMode
		if st != wantStats {
			t.Fatalf("stats %+v, want %+v", st, wantStats)
		}
		if got := cnt.take(); got != wantReqs {
			t.Fatalf("%s pass made %s, want %s", wantMode, got, wantReqs)
		}
	}
	pass(ModeFull, "GET=2 PROPFIND=2", Stats{Fetched: 2})
	if got := files(t, dir); got != "a.ics=Alpha b.ics=Beta" {
		t.Fatalf("mirror %s", got)
	}
	st := LoadState(dir, ICalendar)
	if st.CTag == "" || st.SyncToken == "" {
		t.Fatalf("radicale reported no ctag/sync-token: %+v", st)
	}
	// Nothing changed: only the ctag is read.
	pass(ModeUnchanged, "PROPFIND=1", Stats{Unchanged: 2})
	// Another client changes one, deletes one, adds one.
	put(t, base, "carol/cal/a.ics", event("a", "Alpha 2"), "text/calendar")
	del(t, base, "carol/cal/b.ics")
	put(t, base, "carol/cal/c.ics", event("c", "Gamma"), "text/calendar")
	pass(ModeIncremental, "GET=2 PROPFIND=2 REPORT=1", Stats{Fetched: 2, Removed: 1})
	if got := files(t, dir); got != "a.ics=Alpha 2 c.ics=Gamma" {
		t.Fatalf("mirror after changes %s", got)
	}
	pass(ModeUnchanged, "PROPFIND=1", Stats{Unchanged: 2})
	// A file removed by hand is fetched again though the server did not
	// change.
	os.Remove(filepath.Join(dir, "c.ics"))
	pass(ModeIncremental, "GET=1 PROPFIND=2 REPORT=1", Stats{Fetched: 1, Unchanged: 1})
	// A token the server refuses: a full listing, and still no GET of
	// unchanged objects.
	st = LoadState(dir, ICalendar)
	st.SyncToken, st.CTag = "http://radicale.org/ns/sync/0000000000000000000000000000000000000000000000000000000000000000", "stale"
	if err := saveState(dir, ICalendar, st); err != nil {
		t.Fatal(err)
	}
	pass(ModeFull, "PROPFIND=2 REPORT=1", Stats{Unchanged: 2})
	pass(ModeUnchanged, "PROPFIND=1", Stats{Unchanged: 2})
	if got := files(t, dir); got != "a.ics=Alpha 2 c.ics=Gamma" {
		t.Fatalf("mirror at the end %s", got)
	}
}

func TestLocalName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/u/c/abc.ics":          "abc.ics",
		"/u/c/a%20b.ics":        "a b.ics",
		"/u/c/..%2F..%2Fx":      "_.._x.ics",
		"/u/c/.hidden":          "hidden.ics",
		"/u/c/card":             "card.ics",
		"/u/c/%2e%2e%2fetc.ics": "_etc.ics",
	} {
		if got := LocalName(in, ICalendar); got != want {
			t.Errorf("LocalName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSyncCollectionAnswers reads sync-collection and PROPFIND answers as
// other servers write them: other namespace prefixes, absolute and
// percent-encoded hrefs, a deleted member, the collection itself listed;
// a refused token is an error (the caller then lists the collection).
func TestSyncCollectionAnswers(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == "PROPFIND" && r.Header.Get("Depth") == "0":
			w.WriteHeader(http.StatusMultiStatus)
			io.WriteString(w, `<?xml version="1.0"?><multistatus xmlns="DAV:" xmlns:x1="http://calendarserver.org/ns/">
<response><href>/dav/books/b1/</href><propstat><prop><x1:getctag>"c-42"</x1:getctag><sync-token>tok-2</sync-token></prop><status>HTTP/1.1 200 OK</status></propstat></response></multistatus>`)
		case r.Method == "REPORT" && strings.Contains(string(body), "<d:sync-token>tok-1</d:sync-token>"):
			w.WriteHeader(http.StatusMultiStatus)
			io.WriteString(w, `<?xml version="1.0"?><D:multistatus xmlns:D="DAV:">
<D:response><D:href>/dav/books/b1/</D:href><D:propstat><D:prop><D:getetag>"col"</D:getetag></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>
<D:response><D:href>`+"http://"+r.Host+`/dav/books/b1/a%20b.vcf</D:href><D:propstat><D:prop><D:getetag>"e1"</D:getetag></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>
<D:response><D:href>/dav/books/b1/gone.vcf</D:href><D:status>HTTP/1.1 404 Not Found</D:status></D:response>
<D:sync-token>tok-2</D:sync-token></D:multistatus>`)
		case r.Method == "REPORT":
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<?xml version="1.0"?><error xmlns="DAV:"><valid-sync-token/></error>`)
		default:
			http.Error(w, "unexpected", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	acc := Account{Name: "t", URL: srv.URL}
	p, err := CollectionProps(ctx, acc, "/dav/books/b1/")
	if err != nil || p.CTag != `"c-42"` || p.SyncToken != "tok-2" {
		t.Fatalf("props %+v %v", p, err)
	}
	ch, err := SyncCollection(ctx, acc, "/dav/books/b1/", "tok-1")
	if err != nil {
		t.Fatal(err)
	}
	if ch.SyncToken != "tok-2" || len(ch.Updated) != 1 || ch.Updated[0].Href != "/dav/books/b1/a b.vcf" || ch.Updated[0].ETag != `"e1"` ||
		len(ch.Deleted) != 1 || ch.Deleted[0] != "/dav/books/b1/gone.vcf" {
		t.Fatalf("changes %+v", ch)
	}
	if LocalName(ch.Updated[0].Href, VCard) != "a b.vcf" {
		t.Fatalf("local name %q", LocalName(ch.Updated[0].Href, VCard))
	}
	if _, err := SyncCollection(ctx, acc, "/dav/books/b1/", "expired"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("refused token: %v", err)
	}
}
