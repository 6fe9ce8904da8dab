// Package davmirror keeps a local vdir folder in step with one WebDAV
// collection (a CalDAV calendar or a CardDAV address book), the way
// vdirsyncer does: the folder holds one file per server object and a
// dot-file remembering each object's href and ETag, the collection's ctag
// and its sync-token.
//
// A pass costs as little as the server allows:
//   - one PROPFIND (Depth 0) of getctag and sync-token; when the ctag (or,
//     without a ctag, the sync-token) is what the last pass saw, nothing
//     else is asked;
//   - with a stored sync-token, a sync-collection REPORT (RFC 6578) lists
//     only what changed since; an expired or refused token falls back to a
//     full listing;
//   - otherwise a PROPFIND (Depth 1) lists every object with its ETag.
//
// Either way an object is fetched (GET) only when its ETag differs from
// the stored one or its file is missing.
//
// Discovery stays with the protocol packages (go-webdav's caldav and
// carddav clients); the sync-collection REPORT is written here because
// go-webdav's caldav client has none and its carddav one always asks for
// the card data, which a listing of ETags does not need.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// one WebDAV collection (CalDAV calendar or CardDAV address book) kept as a vdir folder plus a
// dot-file of hrefs, ETags, ctag and sync-token: a pass is one PROPFIND when the ctag is
// unchanged, a sync-collection REPORT (RFC 6578) when a token is stored (full listing when the
// server refuses it), and GETs only of objects whose ETag changed.
package davmirror

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/emersion/go-webdav"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/oauth"
)

// Account is one DAV server login.
type Account struct {
	Name     string
	URL      string // the server's base (or principal) URL
	Username string
	Password string
	// Bearer, when set, signs requests with the OAuth account's access
	// token instead of Basic auth (Google's CalDAV and CardDAV; see
	// bearerTransport).
	Bearer *oauth.Source
	HTTP   *http.Client
}

// Client is the HTTP client with the account's credentials.
func (a Account) Client() webdav.HTTPClient {
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if a.Bearer != nil {
		c := *hc
		host := ""
		if u, err := url.Parse(a.URL); err == nil {
			host = u.Host
		}
		c.Transport = &bearerTransport{host: host, src: a.Bearer, base: hc.Transport}
		return &c
	}
	if a.Username == "" {
		return hc
	}
	return webdav.HTTPClientWithBasicAuth(hc, a.Username, a.Password)
}

// bearerTransport sends the account's bearer token (RFC 6750 §2.1) to the
// account's own host only, so a redirect elsewhere never carries it. A 401
// with error="invalid_token" is refreshed and retried once (by
// oauth.Transport); when the refresh shows the grant dead, the request
// fails with the *oauth.ReconnectError rather than a bare 401, so sync
// status and doctor say to reconnect.
type bearerTransport struct {
	host string
	src  *oauth.Source
	base http.RoundTripper // nil: http.DefaultTransport
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.URL.Host != t.host {
		return base.RoundTrip(req)
	}
	resp, err := (&oauth.Transport{Source: t.src, Base: base}).RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if _, terr := t.src.Token(req.Context()); terr != nil && !oauth.Retryable(terr) {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, terr
	}
	return resp, nil
}

// Kind says what a collection holds.
type Kind struct {
	Ext       string // file extension of mirrored objects, with the dot
	MediaType string // what GET asks for
	StateFile string // the mirror's dot-file
	MaxBytes  int    // the largest object accepted
}

// ICalendar is a CalDAV calendar's kind. The state file name is the one
// mirrors made before this package existed, so they carry over.
var ICalendar = Kind{Ext: ".ics", MediaType: "text/calendar", StateFile: ".hestia-caldav.json", MaxBytes: 8 << 20}

// VCard is a CardDAV address book's kind.
var VCard = Kind{Ext: ".vcf", MediaType: "text/vcard", StateFile: ".hestia-carddav.json", MaxBytes: 8 << 20}

// State is the mirror's memory of the server.
type State struct {
	CTag      string            `json:"ctag,omitempty"`
	SyncToken string            `json:"sync_token,omitempty"`
	Objects   map[string]Object `json:"objects"` // local file name → server object
}

// Object is one server object as last fetched.
type Object struct {
	Href string `json:"href"`
	ETag string `json:"etag"`
}

// LoadState reads the mirror's state; a missing or unreadable file is an
// empty state (the next pass is then a full one).
func LoadState(dir string, k Kind) State {
	st := State{}
	if b, err := os.ReadFile(filepath.Join(dir, k.StateFile)); err == nil {
		_ = json.Unmarshal(b, &st)
	}
	if st.Objects == nil {
		st.Objects = map[string]Object{}
	}
	return st
}

func saveState(dir string, k Kind, st State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, k.StateFile), b)
}

// LocalName maps a server href to the mirror's file name: the last path
// segment, unescaped, without separators or leading dots, ending in the
// kind's extension.
func LocalName(href string, k Kind) string {
	b := path.Base(href)
	if u, err := url.PathUnescape(b); err == nil {
		b = u
	}
	b = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 32 {
			return '_'
		}
		return r
	}, b)
	b = strings.TrimLeft(b, ".")
	if !strings.HasSuffix(strings.ToLower(b), k.Ext) {
		b += k.Ext
	}
	return b
}

// Modes of a pass.
const (
	ModeUnchanged   = "unchanged"   // the ctag/sync-token said nothing changed
	ModeIncremental = "incremental" // sync-collection REPORT
	ModeFull        = "full"        // PROPFIND listing
)

// Stats reports one mirror pass.
type Stats struct {
	Mode      string `json:"mode"`
	Fetched   int    `json:"fetched"`
	Removed   int    `json:"removed"`
	Unchanged int    `json:"unchanged"`
}

// ErrTooLarge marks an object over the kind's size limit.
var ErrTooLarge = errors.New("object too large")

// Mirror brings dir up to date with the collection at colPath.
func Mirror(ctx context.Context, a Account, k Kind, colPath, dir string) (Stats, error) {
	var st Stats
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return st, err
	}
	prev := LoadState(dir, k)
	// A server without these properties (or one refusing the PROPFIND)
	// is mirrored by full listings; a real outage fails the listing too.
	props, _ := CollectionProps(ctx, a, colPath)
	if sameVersion(prev, props) && filesPresent(dir, prev) {
		st.Mode, st.Unchanged = ModeUnchanged, len(prev.Objects)
		return st, nil
	}
	if prev.SyncToken != "" && props.SyncToken != "" {
		ch, err := SyncCollection(ctx, a, colPath, prev.SyncToken)
		if err == nil {
			return applyChanges(ctx, a, k, colPath, dir, prev, ch)
		}
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		// Expired or refused token (RFC 6578 §3.2 valid-sync-token):
		// start over with a full listing.
	}
	return fullSync(ctx, a, k, colPath, dir, prev, props)
}

// sameVersion reports whether the server's collection is the one the
// state was made from. The ctag wins when the server has one.
func sameVersion(prev State, now Props) bool {
	if now.CTag != "" {
		return now.CTag == prev.CTag
	}
	return now.SyncToken != "" && now.SyncToken == prev.SyncToken
}

func filesPresent(dir string, st State) bool {
	for name := range st.Objects {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

func fullSync(ctx context.Context, a Account, k Kind, colPath, dir string, prev State, props Props) (Stats, error) {
	st := Stats{Mode: ModeFull}
	wc, err := webdav.NewClient(a.Client(), a.URL)
	if err != nil {
		return st, err
	}
	infos, err := wc.ReadDir(ctx, colPath, false)
	if err != nil {
		return st, fmt.Errorf("%s: listing %s: %w", a.Name, colPath, err)
	}
	next := State{CTag: props.CTag, SyncToken: props.SyncToken, Objects: map[string]Object{}}
	for _, fi := range infos {
		if fi.IsDir || samePath(fi.Path, colPath) {
			continue
		}
		if err := fetchIfChanged(ctx, a, k, dir, prev, &next, fi.Path, fi.ETag, &st); err != nil {
			return st, err
		}
	}
	for name := range prev.Objects {
		if _, ok := next.Objects[name]; !ok {
			os.Remove(filepath.Join(dir, name))
			st.Removed++
		}
	}
	return st, saveState(dir, k, next)
}

func applyChanges(ctx context.Context, a Account, k Kind, colPath, dir string, prev State, ch Changes) (Stats, error) {
	st := Stats{Mode: ModeIncremental}
	next := State{SyncToken: ch.SyncToken, Objects: map[string]Object{}}
	for name, o := range prev.Objects {
		next.Objects[name] = o
	}
	for _, href := range ch.Deleted {
		name := LocalName(href, k)
		if _, ok := next.Objects[name]; ok {
			delete(next.Objects, name)
			os.Remove(filepath.Join(dir, name))
			st.Removed++
		}
	}
	changed := map[string]bool{}
	for _, o := range ch.Updated {
		name := LocalName(o.Href, k)
		changed[name] = true
		delete(next.Objects, name)
		if err := fetchIfChanged(ctx, a, k, dir, prev, &next, o.Href, o.ETag, &st); err != nil {
			return st, err
		}
	}
	// Objects not reported but missing locally (a file removed by hand)
	// are fetched again.
	for name, o := range prev.Objects {
		if _, ok := next.Objects[name]; !ok || changed[name] {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			delete(next.Objects, name)
			if err := fetchIfChanged(ctx, a, k, dir, State{}, &next, o.Href, "", &st); err != nil {
				return st, err
			}
			continue
		}
		st.Unchanged++
	}
	// The ctag is read again so that the next pass can skip on it; if it
	// moved during this pass the next pass simply syncs again.
	if props, err := CollectionProps(ctx, a, colPath); err == nil && props.SyncToken == ch.SyncToken {
		next.CTag = props.CTag
	}
	return st, saveState(dir, k, next)
}

// fetchIfChanged records href in next, fetching it when its ETag differs
// from prev's or its file is missing.
func fetchIfChanged(ctx context.Context, a Account, k Kind, dir string, prev State, next *State, href, etag string, st *Stats) error {
	name := LocalName(href, k)
	if old, ok := prev.Objects[name]; ok && etag != "" && NormETag(old.ETag) == NormETag(etag) {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			next.Objects[name] = old
			st.Unchanged++
			return nil
		}
	}
	data, got, err := Get(ctx, a, k, href)
	if errors.Is(err, errGone) {
		return nil // deleted between the listing and the GET
	}
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, name), data); err != nil {
		return err
	}
	if got == "" {
		got = etag
	}
	next.Objects[name] = Object{Href: href, ETag: got}
	st.Fetched++
	return nil
}

var errGone = errors.New("object gone")

// Get fetches one object and its ETag.
func Get(ctx context.Context, a Account, k Kind, href string) ([]byte, string, error) {
	resp, err := do(ctx, a, http.MethodGet, href, nil, map[string]string{"Accept": k.MediaType})
	if err != nil {
		return nil, "", fmt.Errorf("%s: GET %s: %w", a.Name, href, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
		return nil, "", fmt.Errorf("%s: GET %s: %w", a.Name, href, errGone)
	}
	if resp.StatusCode >= 300 {
		return nil, "", fmt.Errorf("%s: GET %s: %s", a.Name, href, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(k.MaxBytes)+1))
	if err != nil {
		return nil, "", fmt.Errorf("%s: GET %s: %w", a.Name, href, err)
	}
	if len(data) > k.MaxBytes {
		return nil, "", fmt.Errorf("%s: GET %s: %w: more than %d bytes", a.Name, href, ErrTooLarge, k.MaxBytes)
	}
	return data, resp.Header.Get("ETag"), nil
}

// NormETag compares ETags as PROPFIND (unquoted by go-webdav) and GET
// (quoted header) report them.
func NormETag(e string) string { return strings.Trim(strings.TrimPrefix(e, "W/"), `"`) }

func samePath(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

func writeAtomic(p string, data []byte) error { return atomicfile.Write(p, data, 0o600) }

func do(ctx context.Context, a Account, method, p string, body []byte, hdr map[string]string) (*http.Response, error) {
	u, err := url.Parse(a.URL)
	if err != nil {
		return nil, err
	}
	if ref, err := url.Parse(p); err == nil && ref.IsAbs() {
		u = ref
	} else {
		u.Path, u.RawPath, u.RawQuery = p, "", ""
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return a.Client().Do(req)
}

// Props are a collection's version markers.
type Props struct {
	CTag      string // CalendarServer getctag: changes with any member
	SyncToken string // RFC 6578 sync-token
}

// CollectionProps reads getctag and sync-token (PROPFIND, Depth 0).
// Missing properties are empty.
func CollectionProps(ctx context.Context, a Account, colPath string) (Props, error) {
	const body = `<?xml version="1.0" encoding="utf-8"?>` +
		`<d:propfind xmlns:d="DAV:" xmlns:cs="http://calendarserver.org/ns/"><d:prop><cs:getctag/><d:sync-token/></d:prop></d:propfind>`
	var p Props
	if colPath == "" {
		return p, errors.New("no collection")
	}
	ms, err := xmlRequest(ctx, a, "PROPFIND", colPath, "0", body)
	if err != nil {
		return p, err
	}
	for _, r := range ms.Responses {
		for _, ps := range r.Propstats {
			if !statusOK(ps.Status) {
				continue
			}
			if ps.Prop.CTag != "" {
				p.CTag = strings.TrimSpace(ps.Prop.CTag)
			}
			if ps.Prop.SyncToken != "" {
				p.SyncToken = strings.TrimSpace(ps.Prop.SyncToken)
			}
		}
	}
	return p, nil
}

// Changes is a sync-collection answer.
type Changes struct {
	SyncToken string
	Updated   []Object // href and new ETag
	Deleted   []string // hrefs
}

// SyncCollection asks what changed since token (RFC 6578 §3.2, sync-level
// 1, ETags only). An error means the token cannot be used (or the server
// has no sync-collection); the caller lists the collection instead.
func SyncCollection(ctx context.Context, a Account, colPath, token string) (Changes, error) {
	var esc bytes.Buffer
	if err := xml.EscapeText(&esc, []byte(token)); err != nil {
		return Changes{}, err
	}
	body := `<?xml version="1.0" encoding="utf-8"?>` +
		`<d:sync-collection xmlns:d="DAV:"><d:sync-token>` + esc.String() + `</d:sync-token>` +
		`<d:sync-level>1</d:sync-level><d:prop><d:getetag/></d:prop></d:sync-collection>`
	ms, err := xmlRequest(ctx, a, "REPORT", colPath, "0", body) // RFC 6578 §3.2: Depth 0
	if err != nil {
		return Changes{}, err
	}
	ch := Changes{SyncToken: strings.TrimSpace(ms.SyncToken)}
	if ch.SyncToken == "" {
		return ch, errors.New("sync-collection answer without a sync-token")
	}
	for _, r := range ms.Responses {
		href := hrefPath(r.Href)
		if href == "" || samePath(href, colPath) {
			continue
		}
		if strings.Contains(r.Status, " 404") {
			ch.Deleted = append(ch.Deleted, href)
			continue
		}
		etag := ""
		for _, ps := range r.Propstats {
			if statusOK(ps.Status) && ps.Prop.ETag != "" {
				etag = ps.Prop.ETag
			}
		}
		ch.Updated = append(ch.Updated, Object{Href: href, ETag: etag})
	}
	return ch, nil
}

// hrefPath turns an href (absolute URL or path, percent-encoded) into the
// decoded path go-webdav's listings use.
func hrefPath(h string) string {
	u, err := url.Parse(strings.TrimSpace(h))
	if err != nil {
		return ""
	}
	return u.Path
}

func statusOK(s string) bool { return s == "" || strings.Contains(s, " 200") }

type multistatus struct {
	Responses []struct {
		Href      string `xml:"DAV: href"`
		Status    string `xml:"DAV: status"`
		Propstats []struct {
			Status string `xml:"DAV: status"`
			Prop   struct {
				CTag      string `xml:"http://calendarserver.org/ns/ getctag"`
				SyncToken string `xml:"DAV: sync-token"`
				ETag      string `xml:"DAV: getetag"`
			} `xml:"DAV: prop"`
		} `xml:"DAV: propstat"`
	} `xml:"DAV: response"`
	SyncToken string `xml:"DAV: sync-token"`
}

// maxListing bounds a PROPFIND/REPORT answer.
const maxListing = 64 << 20

func xmlRequest(ctx context.Context, a Account, method, p, depth, body string) (multistatus, error) {
	var ms multistatus
	hdr := map[string]string{"Content-Type": "application/xml; charset=utf-8"}
	if depth != "" {
		hdr["Depth"] = depth
	}
	resp, err := do(ctx, a, method, p, []byte(body), hdr)
	if err != nil {
		return ms, fmt.Errorf("%s: %s %s: %w", a.Name, method, p, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMultiStatus {
		return ms, fmt.Errorf("%s: %s %s: %s", a.Name, method, p, resp.Status)
	}
	if err := xml.NewDecoder(io.LimitReader(resp.Body, maxListing)).Decode(&ms); err != nil {
		return ms, fmt.Errorf("%s: %s %s: reading the answer: %w", a.Name, method, p, err)
	}
	return ms, nil
}
