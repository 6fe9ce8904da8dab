// Package davsync mirrors CalDAV calendars into local vdir folders (the
// vdirsyncer model: the folder is then indexed like any other vdir) and
// writes back to the server with conditional requests (If-None-Match: *
// for creates, If-Match: ETag for updates and deletes, RFC 4791 §5.3.2,
// RFC 7232).
//
// Discovery and listing use github.com/emersion/go-webdav; writes are
// plain HTTP requests because that client does not send the conditional
// headers.
package davsync

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/emersion/go-webdav/caldav"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
)

// Account is one CalDAV server login.
type Account struct {
	Name     string
	URL      string // the server's base (or principal) URL
	Username string
	Password string
	HTTP     *http.Client
}

func (a Account) client() webdav.HTTPClient {
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if a.Username == "" {
		return hc
	}
	return webdav.HTTPClientWithBasicAuth(hc, a.Username, a.Password)
}

// Collection is one calendar on the server.
type Collection struct {
	Path string `json:"path"` // server path, ending in /
	Name string `json:"name"` // display name (or the last path segment)
}

// Discover lists the account's calendars that hold events.
func Discover(ctx context.Context, a Account) ([]Collection, error) {
	c, err := caldav.NewClient(a.client(), a.URL)
	if err != nil {
		return nil, fmt.Errorf("caldav %s: %w", a.Name, err)
	}
	wc, err := webdav.NewClient(a.client(), a.URL)
	if err != nil {
		return nil, fmt.Errorf("caldav %s: %w", a.Name, err)
	}
	principal, err := wc.FindCurrentUserPrincipal(ctx)
	if err != nil {
		return nil, fmt.Errorf("caldav %s: finding the principal: %w", a.Name, err)
	}
	home, err := c.FindCalendarHomeSet(ctx, principal)
	if err != nil {
		return nil, fmt.Errorf("caldav %s: finding the calendar home: %w", a.Name, err)
	}
	cals, err := c.FindCalendars(ctx, home)
	if err != nil {
		return nil, fmt.Errorf("caldav %s: listing calendars: %w", a.Name, err)
	}
	var out []Collection
	for _, k := range cals {
		if len(k.SupportedComponentSet) > 0 && !contains(k.SupportedComponentSet, "VEVENT") {
			continue
		}
		name := k.Name
		if name == "" {
			name = path.Base(strings.TrimSuffix(k.Path, "/"))
		}
		p := k.Path
		if !strings.HasSuffix(p, "/") {
			p += "/"
		}
		out = append(out, Collection{Path: p, Name: name})
	}
	return out, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// state is the mirror's memory of the server: local file name → server
// href and ETag. It lives in the mirror folder as a dot-file, which the
// vdir index ignores.
type state struct {
	Objects map[string]object `json:"objects"`
}

type object struct {
	Href string `json:"href"`
	ETag string `json:"etag"`
}

const stateFile = ".hestia-caldav.json"

func loadState(dir string) state {
	st := state{Objects: map[string]object{}}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err == nil {
		_ = json.Unmarshal(b, &st)
	}
	if st.Objects == nil {
		st.Objects = map[string]object{}
	}
	return st
}

func saveState(dir string, st state) error {
	b, _ := json.Marshal(st)
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// localName maps a server href to the mirror's file name.
func localName(href string) string {
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
	if !strings.HasSuffix(strings.ToLower(b), ".ics") {
		b += ".ics"
	}
	return b
}

// Stats reports one mirror pass.
type Stats struct {
	Fetched   int `json:"fetched"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
}

// Mirror brings dir up to date with the collection: objects whose ETag
// changed are fetched, objects gone from the server are removed. Only the
// listing (one PROPFIND) is paid when nothing changed.
func Mirror(ctx context.Context, a Account, col Collection, dir string) (Stats, error) {
	var st Stats
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return st, err
	}
	wc, err := webdav.NewClient(a.client(), a.URL)
	if err != nil {
		return st, err
	}
	infos, err := wc.ReadDir(ctx, col.Path, false)
	if err != nil {
		return st, fmt.Errorf("caldav %s: listing %s: %w", a.Name, col.Path, err)
	}
	prev := loadState(dir)
	next := state{Objects: map[string]object{}}
	be := Backend{Account: a, Collection: col.Path}
	for _, fi := range infos {
		if fi.IsDir || strings.TrimSuffix(fi.Path, "/") == strings.TrimSuffix(col.Path, "/") {
			continue
		}
		name := localName(fi.Path)
		if old, ok := prev.Objects[name]; ok && normETag(old.ETag) == normETag(fi.ETag) && fi.ETag != "" {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				next.Objects[name] = old
				st.Unchanged++
				continue
			}
		}
		data, etag, err := be.fetch(ctx, fi.Path)
		if err != nil {
			return st, err
		}
		if err := writeAtomic(filepath.Join(dir, name), data); err != nil {
			return st, err
		}
		next.Objects[name] = object{Href: fi.Path, ETag: etag}
		st.Fetched++
	}
	for name := range prev.Objects {
		if _, ok := next.Objects[name]; !ok {
			os.Remove(filepath.Join(dir, name))
			st.Removed++
		}
	}
	return st, saveState(dir, next)
}

// normETag compares ETags as PROPFIND (unquoted by the client library)
// and GET (quoted header) report them.
func normETag(e string) string { return strings.Trim(strings.TrimPrefix(e, "W/"), `"`) }

func writeAtomic(p string, data []byte) error {
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// Backend writes one collection on the server (calwrite.Backend). Hrefs
// are the mirror's file names; the server href is found in the mirror's
// state, or is the collection path plus the name for new objects.
type Backend struct {
	Account    Account
	Collection string
	// Dir is the mirror folder (for href lookups); may be empty.
	Dir string
}

func (b Backend) serverPath(href string) string {
	if b.Dir != "" {
		if o, ok := loadState(b.Dir).Objects[href]; ok {
			return o.Href
		}
	}
	return b.Collection + url.PathEscape(href)
}

func (b Backend) do(ctx context.Context, method, p string, body []byte, hdr map[string]string) (*http.Response, []byte, error) {
	u, err := url.Parse(b.Account.URL)
	if err != nil {
		return nil, nil, err
	}
	u.Path, u.RawPath = p, ""
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "text/calendar; charset=utf-8")
	}
	resp, err := b.Account.client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, calendar.MaxFileBytes+1))
	if err != nil {
		return resp, nil, err
	}
	if len(data) > calendar.MaxFileBytes {
		return resp, nil, fmt.Errorf("%s %s: response larger than %d bytes", method, p, calendar.MaxFileBytes)
	}
	return resp, data, nil
}

// statusErr classifies a response: 412 is a conflict, 404 not found, other
// 4xx a refusal (nothing was stored), anything else leaves the outcome
// unknown.
func statusErr(method, p string, resp *http.Response) error {
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusPreconditionFailed:
		return fmt.Errorf("%s %s: %w", method, p, calwrite.ErrConflict)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%s %s: %w", method, p, calwrite.ErrNotFound)
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%s %s: the server refused (%s): %w", method, p, resp.Status, calwrite.ErrRefused)
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != 408 && resp.StatusCode != 429:
		return fmt.Errorf("%s %s: %s: %w", method, p, resp.Status, calwrite.ErrRefused)
	}
	return fmt.Errorf("%s %s: %s", method, p, resp.Status)
}

func (b Backend) fetch(ctx context.Context, p string) ([]byte, string, error) {
	resp, data, err := b.do(ctx, http.MethodGet, p, nil, map[string]string{"Accept": "text/calendar"})
	if err != nil {
		return nil, "", err
	}
	if err := statusErr("GET", p, resp); err != nil {
		return nil, "", err
	}
	return data, resp.Header.Get("ETag"), nil
}

// Get implements calwrite.Backend.
func (b Backend) Get(ctx context.Context, href string) (calwrite.Object, error) {
	data, etag, err := b.fetch(ctx, b.serverPath(href))
	if err != nil {
		return calwrite.Object{}, err
	}
	return calwrite.Object{Href: href, ETag: etag, Data: data}, nil
}

func (b Backend) put(ctx context.Context, href string, data []byte, cond map[string]string) (string, error) {
	p := b.serverPath(href)
	resp, _, err := b.do(ctx, http.MethodPut, p, data, cond)
	if err != nil {
		return "", err
	}
	if err := statusErr("PUT", p, resp); err != nil {
		return "", err
	}
	if etag := resp.Header.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		return etag, nil
	}
	// No strong ETag in the answer: read it back.
	_, etag, err := b.fetch(ctx, p)
	return etag, err
}

// Create implements calwrite.Backend (If-None-Match: *).
func (b Backend) Create(ctx context.Context, href string, data []byte) (string, error) {
	return b.put(ctx, href, data, map[string]string{"If-None-Match": "*"})
}

// Update implements calwrite.Backend (If-Match).
func (b Backend) Update(ctx context.Context, href string, data []byte, etag string) (string, error) {
	if etag == "" {
		return "", errors.New("no ETag to update against")
	}
	return b.put(ctx, href, data, map[string]string{"If-Match": etag})
}

// Delete implements calwrite.Backend (If-Match).
func (b Backend) Delete(ctx context.Context, href, etag string) error {
	p := b.serverPath(href)
	resp, _, err := b.do(ctx, http.MethodDelete, p, nil, map[string]string{"If-Match": etag})
	if err != nil {
		return err
	}
	return statusErr("DELETE", p, resp)
}
