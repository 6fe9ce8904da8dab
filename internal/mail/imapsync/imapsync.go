// Package imapsync mirrors IMAP accounts into the mail store incrementally
// (RFC 9051 / 3501): per mailbox it remembers UIDVALIDITY and UIDNEXT,
// fetches only new UIDs, refreshes flags, and removes expunged UIDs. A
// changed UIDVALIDITY invalidates every remembered UID of that mailbox, so
// its copies are dropped and refetched.
package imapsync

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/mailauth"
	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// Account is how to reach one IMAP account.
type Account struct {
	Name     string
	Host     string
	Port     int
	Security string // tls, starttls or none
	Username string
	Password string
	// Tokens, when set, logs in with an OAuth access token (SASL
	// OAUTHBEARER or XOAUTH2) instead of Password.
	Tokens    mailauth.Tokens
	TLSConfig *tls.Config
}

// Syncer syncs accounts into a store.
type Syncer struct {
	Store *mail.Store
	Log   *slog.Logger
	// FetchBatch is how many messages one FETCH asks for (default 50).
	FetchBatch int
	// MaxMessageBytes bounds what one message fetch downloads (default
	// 25 MiB). Larger messages are fetched partially and mirrored with body
	// state partial (or none), which reads report.
	MaxMessageBytes int64
}

// Result counts one account sync.
type Result struct {
	Mailboxes   int `json:"mailboxes"`
	Incremental int `json:"incremental"` // mailboxes synced via CONDSTORE
	Fetched     int `json:"fetched"`
	Flags       int `json:"flags_updated"`
	Removed     int `json:"removed"`
	Reset       int `json:"uidvalidity_resets"`
}

// Dial connects and logs in.
func Dial(ctx context.Context, a Account) (*imapclient.Client, error) {
	addr := net.JoinHostPort(a.Host, fmt.Sprint(a.Port))
	opts := &imapclient.Options{TLSConfig: a.TLSConfig, Dialer: &net.Dialer{Timeout: 30 * time.Second}}
	var (
		c   *imapclient.Client
		err error
	)
	switch a.Security {
	case "tls":
		c, err = imapclient.DialTLS(addr, opts)
	case "starttls":
		c, err = imapclient.DialStartTLS(addr, opts)
	default:
		c, err = imapclient.DialInsecure(addr, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to IMAP %s: %w", addr, err)
	}
	if err := login(ctx, c, a); err != nil {
		c.Close()
		return nil, fmt.Errorf("IMAP login as %s: %w", a.Username, err)
	}
	return c, nil
}

// login authenticates with the password (LOGIN), or with an OAuth token
// through AUTHENTICATE (RFC 3501 §6.2.2) with a refresh and one retry
// when the server refuses it (package mailauth).
func login(ctx context.Context, c *imapclient.Client, a Account) error {
	if a.Tokens == nil {
		return c.Login(a.Username, a.Password).Wait()
	}
	return mailauth.Authenticate(ctx, a.Tokens, mailauth.Login{
		User: a.Username, Host: a.Host, Port: a.Port,
		Offered: c.Caps().AuthMechanisms(),
		Auth:    c.Authenticate,
		Refused: Refused,
		IMAP:    true,
	})
}

// Refused reports whether err is the server's NO to a login (wrong
// password, refused token), not a broken connection.
func Refused(err error) bool {
	var ie *imap.Error
	return errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo
}

var roleAttrs = map[imap.MailboxAttr]string{
	imap.MailboxAttrSent: mail.RoleSent, imap.MailboxAttrDrafts: mail.RoleDrafts, imap.MailboxAttrTrash: mail.RoleTrash,
	imap.MailboxAttrJunk: mail.RoleJunk, imap.MailboxAttrArchive: mail.RoleArchive, imap.MailboxAttrAll: mail.RoleAll,
}

// roleOf prefers SPECIAL-USE attributes (RFC 6154) over the name.
func roleOf(l *imap.ListData) string {
	if strings.EqualFold(l.Mailbox, "INBOX") {
		return mail.RoleInbox
	}
	for _, a := range l.Attrs {
		if r, ok := roleAttrs[a]; ok {
			return r
		}
	}
	return mail.DetectRole(l.Mailbox)
}

// Sync mirrors every selectable mailbox of the account.
func (s *Syncer) Sync(ctx context.Context, a Account) (Result, error) {
	var res Result
	c, err := Dial(ctx, a)
	if err != nil {
		return res, err
	}
	defer c.Close()
	// Closing the connection is how a blocked command observes ctx.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	boxes, err := listMailboxes(c)
	if err != nil {
		return res, err
	}
	for _, b := range boxes {
		if hasAttr(b.Attrs, imap.MailboxAttrNoSelect) || hasAttr(b.Attrs, imap.MailboxAttrNonExistent) {
			continue
		}
		if err := s.syncMailbox(ctx, c, a, b.Mailbox, roleOf(b), &res); err != nil {
			return res, fmt.Errorf("syncing %s: %w", b.Mailbox, err)
		}
		res.Mailboxes++
	}
	c.Logout().Wait()
	return res, nil
}

func hasAttr(attrs []imap.MailboxAttr, want imap.MailboxAttr) bool {
	for _, a := range attrs {
		if strings.EqualFold(string(a), string(want)) {
			return true
		}
	}
	return false
}

// PathOf is the unique path key of one IMAP copy.
func PathOf(account, mailbox string, uidValidity, uid uint32) string {
	return fmt.Sprintf("imap://%s/%s;UIDVALIDITY=%d/;UID=%d", account, mailbox, uidValidity, uid)
}

func (s *Syncer) syncMailbox(ctx context.Context, c *imapclient.Client, a Account, name, role string, res *Result) error {
	condstore := c.Caps().Has(imap.CapCondStore)
	sel, err := c.Select(name, &imap.SelectOptions{ReadOnly: true, CondStore: condstore}).Wait()
	if err != nil {
		return fmt.Errorf("selecting: %w", err)
	}
	st, err := s.Store.MailboxState(ctx, a.Name, name)
	if err != nil {
		return err
	}
	known, err := s.Store.MailboxUIDs(ctx, a.Name, name)
	if err != nil {
		return err
	}
	if st.UIDValidity != 0 && st.UIDValidity != sel.UIDValidity {
		// RFC 9051 §2.3.1.1: old UIDs mean nothing now.
		var paths []string
		for _, e := range known {
			paths = append(paths, e.Path)
		}
		if _, err := s.Store.RemovePaths(ctx, paths); err != nil {
			return err
		}
		known = map[uint32]mail.UIDEntry{}
		st = mail.SyncState{}
		res.Reset++
	}
	// Current UIDs and flags; this is also how expunges are found. With
	// CONDSTORE (RFC 7162) and a remembered MODSEQ, only UIDs (UID SEARCH
	// ALL) and the flags changed since then travel, not every flag.
	server := map[uint32]parse.Flags{}
	sizes := map[uint32]int64{}
	incremental := condstore && st.ModSeq != 0 && sel.HighestModSeq != 0
	if incremental {
		res.Incremental++
	}
	switch {
	case sel.NumMessages == 0:
	case incremental:
		data, err := c.UIDSearch(&imap.SearchCriteria{}, nil).Wait()
		if err != nil {
			return fmt.Errorf("listing UIDs: %w", err)
		}
		var fresh imap.UIDSet
		for _, uid := range data.AllUIDs() {
			if e, ok := known[uint32(uid)]; ok {
				server[uint32(uid)] = e.Flags
			} else {
				fresh.AddNum(uid)
			}
		}
		if sel.HighestModSeq != st.ModSeq {
			changed, err := c.Fetch(imap.UIDSet{imap.UIDRange{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, Flags: true, ChangedSince: st.ModSeq}).Collect()
			if err != nil {
				return fmt.Errorf("fetching changed flags: %w", err)
			}
			for _, m := range changed {
				if _, ok := server[uint32(m.UID)]; ok {
					server[uint32(m.UID)] = flagsOf(m.Flags)
				}
			}
		}
		if len(fresh) > 0 {
			msgs, err := c.Fetch(fresh, &imap.FetchOptions{UID: true, Flags: true, RFC822Size: true}).Collect()
			if err != nil {
				return fmt.Errorf("fetching new UIDs: %w", err)
			}
			for _, m := range msgs {
				server[uint32(m.UID)] = flagsOf(m.Flags)
				sizes[uint32(m.UID)] = m.RFC822Size
			}
		}
	default:
		msgs, err := c.Fetch(imap.UIDSet{imap.UIDRange{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, Flags: true, RFC822Size: true}).Collect()
		if err != nil {
			return fmt.Errorf("fetching flags: %w", err)
		}
		for _, m := range msgs {
			server[uint32(m.UID)] = flagsOf(m.Flags)
			sizes[uint32(m.UID)] = m.RFC822Size
		}
	}
	var gone []string
	for uid, e := range known {
		f, ok := server[uid]
		if !ok {
			gone = append(gone, e.Path)
			continue
		}
		if f != e.Flags {
			if err := s.Store.SetFlags(ctx, e.Path, f); err != nil {
				return err
			}
			res.Flags++
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		if _, err := s.Store.RemovePaths(ctx, gone); err != nil {
			return err
		}
		res.Removed += len(gone)
	}
	limit := s.MaxMessageBytes
	if limit <= 0 {
		limit = 25 << 20
	}
	var fresh, large []imap.UID
	for uid := range server {
		if _, ok := known[uid]; !ok {
			if sizes[uid] > limit {
				large = append(large, imap.UID(uid))
			} else {
				fresh = append(fresh, imap.UID(uid))
			}
		}
	}
	for _, uid := range large {
		n, err := s.fetch(ctx, c, a, name, role, sel.UIDValidity, []imap.UID{uid}, limit)
		res.Fetched += n
		if err != nil {
			return err
		}
	}
	// Newest first, so recent mail is searchable early in a long backfill.
	sort.Slice(fresh, func(i, j int) bool { return fresh[i] > fresh[j] })
	batch := s.FetchBatch
	if batch <= 0 {
		batch = 50
	}
	for start := 0; start < len(fresh); start += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := s.fetch(ctx, c, a, name, role, sel.UIDValidity, fresh[start:min(len(fresh), start+batch)], 0)
		res.Fetched += n
		if err != nil {
			return err
		}
	}
	return s.Store.SetMailboxState(ctx, a.Name, "imap", name, role, mail.SyncState{UIDValidity: sel.UIDValidity, UIDNext: uint32(sel.UIDNext), ModSeq: sel.HighestModSeq})
}

// fetch downloads uids; partial > 0 fetches only the first partial bytes
// of each (RFC 9051 §6.4.5 BODY[]<0.n>) and marks the copies partial.
func (s *Syncer) fetch(ctx context.Context, c *imapclient.Client, a Account, name, role string, validity uint32, uids []imap.UID, partial int64) (int, error) {
	sec := &imap.FetchItemBodySection{Peek: true}
	if partial > 0 {
		sec.Partial = &imap.SectionPartial{Offset: 0, Size: partial}
	}
	msgs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
		UID: true, Flags: true, InternalDate: true, RFC822Size: true,
		BodySection: []*imap.FetchItemBodySection{sec},
	}).Collect()
	if err != nil {
		return 0, fmt.Errorf("fetching messages: %w", err)
	}
	items := make([]mail.Item, 0, len(msgs))
	for _, m := range msgs {
		var raw []byte
		for _, sec := range m.BodySection {
			raw = sec.Bytes
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		items = append(items, mail.Item{
			Account: a.Name, AccountKind: "imap", Mailbox: name, Role: role,
			Path: PathOf(a.Name, name, validity, uint32(m.UID)), UID: uint32(m.UID),
			Mtime: m.InternalDate.Unix(), Size: m.RFC822Size, Raw: raw, Flags: flagsOf(m.Flags),
			FallbackDate: m.InternalDate, Partial: partial > 0,
		})
	}
	r, err := s.Store.Ingest(ctx, items)
	for _, e := range r.Errors {
		if s.Log != nil {
			s.Log.Warn("imapParse", "account", a.Name, "mailbox", name, "err", e)
		}
	}
	return r.Added + r.Updated, err
}

func flagsOf(fs []imap.Flag) parse.Flags {
	var f parse.Flags
	for _, fl := range fs {
		switch strings.ToLower(string(fl)) {
		case `\seen`:
			f.Seen = true
		case `\answered`:
			f.Answered = true
		case `\flagged`:
			f.Flagged = true
		case `\draft`:
			f.Draft = true
		case `\deleted`:
			f.Deleted = true
		case "$junk", "junk":
			f.Junk = true
		}
	}
	f.Deleted, f.Junk = false, false // not tracked per message in the mirror
	return f
}

// listMailboxes lists every mailbox, with RFC 6154 special-use attributes
// when the server offers them (they name the Sent, Trash, … roles).
func listMailboxes(c *imapclient.Client) ([]*imap.ListData, error) {
	var lopts *imap.ListOptions
	if c.Caps().Has(imap.CapSpecialUse) {
		lopts = &imap.ListOptions{ReturnSpecialUse: true}
	}
	boxes, err := c.List("", "*", lopts).Collect()
	if err != nil {
		return nil, fmt.Errorf("listing mailboxes: %w", err)
	}
	return boxes, nil
}

// AppendSent files a copy of a sent message in the account's Sent mailbox
// (the mailbox with the \Sent attribute, else one named like Sent).
func AppendSent(ctx context.Context, a Account, raw []byte) error {
	c, err := Dial(ctx, a)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	boxes, err := listMailboxes(c)
	if err != nil {
		return err
	}
	target := ""
	for _, b := range boxes {
		if roleOf(b) == mail.RoleSent {
			target = b.Mailbox
			if hasAttr(b.Attrs, imap.MailboxAttrSent) {
				break
			}
		}
	}
	if target == "" {
		return fmt.Errorf("account %s has no Sent mailbox", a.Name)
	}
	cmd := c.Append(target, int64(len(raw)), &imap.AppendOptions{Flags: []imap.Flag{imap.FlagSeen}, Time: time.Now()})
	if _, err := cmd.Write(raw); err != nil {
		return fmt.Errorf("appending to %s: %w", target, err)
	}
	if err := cmd.Close(); err != nil {
		return fmt.Errorf("appending to %s: %w", target, err)
	}
	if _, err := cmd.Wait(); err != nil {
		return fmt.Errorf("appending to %s: %w", target, err)
	}
	c.Logout().Wait()
	return nil
}
