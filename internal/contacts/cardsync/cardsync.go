// Package cardsync mirrors CardDAV address books (RFC 6352) into local
// vdir folders of .vcf files, which the contacts index then reads like any
// other address book. Discovery uses go-webdav's carddav client (current
// user principal → addressbook-home-set → address books); the mirror
// itself is package davmirror's (ctag, sync-token, ETags), so a pass over
// an unchanged book is one PROPFIND.
//
// The mirror is read-only: Hestia has no contact-writing tool, so nothing
// here ever changes the server.
package cardsync

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/emersion/go-webdav"
	"github.com/emersion/go-webdav/carddav"

	"github.com/hestia-dev/hestia/internal/davmirror"
)

// Book is one address book on the server.
type Book struct {
	Path string `json:"path"` // server path, ending in /
	Name string `json:"name"` // display name (or the last path segment)
}

// Discover lists the account's address books.
func Discover(ctx context.Context, a davmirror.Account) ([]Book, error) {
	c, err := carddav.NewClient(a.Client(), a.URL)
	if err != nil {
		return nil, fmt.Errorf("carddav %s: %w", a.Name, err)
	}
	wc, err := webdav.NewClient(a.Client(), a.URL)
	if err != nil {
		return nil, fmt.Errorf("carddav %s: %w", a.Name, err)
	}
	principal, err := wc.FindCurrentUserPrincipal(ctx)
	if err != nil {
		return nil, fmt.Errorf("carddav %s: finding the principal: %w", a.Name, err)
	}
	home, err := c.FindAddressBookHomeSet(ctx, principal)
	if err != nil {
		return nil, fmt.Errorf("carddav %s: finding the address book home: %w", a.Name, err)
	}
	books, err := c.FindAddressBooks(ctx, home)
	if err != nil {
		return nil, fmt.Errorf("carddav %s: listing address books: %w", a.Name, err)
	}
	out := make([]Book, 0, len(books))
	for _, b := range books {
		p := b.Path
		if !strings.HasSuffix(p, "/") {
			p += "/"
		}
		name := b.Name
		if name == "" {
			name = path.Base(strings.TrimSuffix(p, "/"))
		}
		out = append(out, Book{Path: p, Name: name})
	}
	return out, nil
}

// Mirror brings dir up to date with the book.
func Mirror(ctx context.Context, a davmirror.Account, b Book, dir string) (davmirror.Stats, error) {
	st, err := davmirror.Mirror(ctx, a, davmirror.VCard, b.Path, dir)
	if err != nil {
		return st, fmt.Errorf("carddav %w", err)
	}
	return st, nil
}

// FolderName is the mirror folder's name for a book: its last path
// segment with separators and dots replaced, so it is one safe segment.
func FolderName(b Book) string {
	base := path.Base(strings.TrimSuffix(b.Path, "/"))
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 32 || r == '.' {
			return '_'
		}
		return r
	}, base)
}
