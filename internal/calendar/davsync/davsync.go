// Package davsync mirrors CalDAV calendars into local vdir folders (the
// vdirsyncer model, through package davmirror: ctag, sync-token and
// ETags; the folder is then indexed like any other vdir) and
// writes back to the server with conditional requests (If-None-Match: *
// for creates, If-Match: ETag for updates and deletes, RFC 4791 §5.3.2,
// RFC 7232).
//
// Discovery and listing use github.com/emersion/go-webdav; writes are
// plain HTTP requests because that client does not send the conditional
// headers.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `calendar/davsync/davtest` too:
//
// CalDAV accounts (`[[calendar.caldav]]`) mirrored into vdir folders under
// `DATA/calendar/caldav/<account>/<collection>` (discovery via go-webdav, mirroring via
// `davmirror`) and indexed like any vdir; writes go to the server with `If-None-Match: *` /
// `If-Match` and are confirmed by GET; the Radicale starter the tests use.
package davsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/emersion/go-webdav"
	"github.com/emersion/go-webdav/caldav"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/davmirror"
)

// Account is one CalDAV server login.
type Account = davmirror.Account

// Collection is one calendar on the server.
type Collection struct {
	Path string `json:"path"` // server path, ending in /
	Name string `json:"name"` // display name (or the last path segment)
}

// Discover lists the account's calendars that hold events or to-dos (a
// task list such as an iCloud Reminders list or a Nextcloud task-only
// calendar supports VTODO alone).
func Discover(ctx context.Context, a Account) ([]Collection, error) {
	c, err := caldav.NewClient(a.Client(), a.URL)
	if err != nil {
		return nil, fmt.Errorf("caldav %s: %w", a.Name, err)
	}
	wc, err := webdav.NewClient(a.Client(), a.URL)
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
		if len(k.SupportedComponentSet) > 0 && !contains(k.SupportedComponentSet, "VEVENT") && !contains(k.SupportedComponentSet, "VTODO") {
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

// Stats reports one mirror pass.
type Stats = davmirror.Stats

// Mirror brings dir up to date with the collection: skipped after one
// PROPFIND when the ctag is unchanged, incremental by sync-token where the
// server supports it, else a listing with per-object ETags; only objects
// whose ETag changed are fetched (package davmirror).
func Mirror(ctx context.Context, a Account, col Collection, dir string) (Stats, error) {
	st, err := davmirror.Mirror(ctx, a, davmirror.ICalendar, col.Path, dir)
	if err != nil {
		return st, fmt.Errorf("caldav %w", err)
	}
	return st, nil
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
		if o, ok := davmirror.LoadState(b.Dir, davmirror.ICalendar).Objects[href]; ok {
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
	resp, err := b.Account.Client().Do(req)
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
