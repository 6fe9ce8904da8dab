package imapsync

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/emersion/go-imap/v2"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

var pathRE = lazyre.New(`^imap://([^/]+)/(.+);UIDVALIDITY=(\d+)/;UID=(\d+)$`)

// ParsePath splits a PathOf key into its parts.
func ParsePath(p string) (account, mailbox string, uidValidity, uid uint32, err error) {
	m := pathRE.FindStringSubmatch(p)
	if m == nil {
		return "", "", 0, 0, fmt.Errorf("%q is not an IMAP message path", p)
	}
	v, _ := strconv.ParseUint(m[3], 10, 32)
	u, _ := strconv.ParseUint(m[4], 10, 32)
	return m[1], m[2], uint32(v), uint32(u), nil
}

// ErrGone means the server no longer has that copy (expunged, or the
// mailbox's UIDVALIDITY changed).
var ErrGone = errors.New("message is no longer on the server")

// FetchRaw downloads one message live, for reads of copies the mirror
// holds only partially. Nothing is written to the mirror.
func FetchRaw(ctx context.Context, a Account, path string, maxBytes int64) ([]byte, error) {
	_, mailbox, validity, uid, err := ParsePath(path)
	if err != nil {
		return nil, err
	}
	c, err := Dial(ctx, a)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	sel, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		return nil, fmt.Errorf("selecting %s: %w", mailbox, err)
	}
	if sel.UIDValidity != validity {
		return nil, ErrGone
	}
	sec := &imap.FetchItemBodySection{Peek: true}
	if maxBytes > 0 {
		sec.Partial = &imap.SectionPartial{Size: maxBytes}
	}
	msgs, err := c.Fetch(imap.UIDSetNum(imap.UID(uid)), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{sec}}).Collect()
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", path, err)
	}
	if len(msgs) == 0 || len(msgs[0].BodySection) == 0 {
		return nil, ErrGone
	}
	c.Logout().Wait()
	return msgs[0].BodySection[0].Bytes, nil
}
