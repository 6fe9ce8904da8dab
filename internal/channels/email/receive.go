package email

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// Bounds on what the receiver downloads.
const (
	// maxFetchBytes is read of each message to classify it: headers and
	// text fit; a large attachment is only described.
	maxFetchBytes = 2 << 20
	// maxVoiceBytes bounds the download of a voice note's message.
	maxVoiceBytes = 25 << 20
	// fetchBatch is how many whole messages one FETCH asks for;
	// headerBatch how many messages' recipient headers.
	fetchBatch  = 20
	headerBatch = 200
	// maxIdle restarts IDLE before servers drop it (RFC 2177: 29 minutes).
	maxIdle = 25 * time.Minute
)

// dialIMAP connects and logs in; h (optional) receives unsolicited
// mailbox data such as EXISTS during IDLE.
func (a *Adapter) dialIMAP(ctx context.Context, h *imapclient.UnilateralDataHandler) (*imapclient.Client, error) {
	s := a.cfg.IMAP
	opts := &imapclient.Options{TLSConfig: s.tlsConfig(), Dialer: &net.Dialer{Timeout: a.cfg.Timeout}, UnilateralDataHandler: h}
	type result struct {
		c   *imapclient.Client
		err error
	}
	done := make(chan result, 1)
	// imapclient dials without a ctx: dial in the background so a
	// shutdown does not wait for a slow server.
	go func() {
		var r result
		switch s.Security {
		case "tls":
			r.c, r.err = imapclient.DialTLS(s.addr(), opts)
		case "starttls":
			r.c, r.err = imapclient.DialStartTLS(s.addr(), opts)
		default:
			r.c, r.err = imapclient.DialInsecure(s.addr(), opts)
		}
		if r.err == nil {
			if err := guard(r.c, a.cfg.Timeout, r.c.Login(a.cfg.Username, a.cfg.Password).Wait); err != nil {
				r.c.Close()
				r.c, r.err = nil, &hinted{fmt.Errorf("IMAP login as %s: %w", a.cfg.Username, err), "channels.email.username and password"}
			}
		} else {
			r.err = &hinted{fmt.Errorf("connecting to IMAP %s: %w", s.addr(), r.err), "channels.email.imap_host, imap_port and imap_security"}
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Receive implements channels.Platform: it watches the mailbox until ctx
// ends, handing each message for the channel to h once and marking it
// handled after h returns.
func (a *Adapter) Receive(ctx context.Context, h channels.Handler) (err error) {
	defer func() {
		// A broken server reply can panic inside the IMAP library; the
		// relay calls Receive again after a backoff.
		if p := recover(); p != nil {
			err = fmt.Errorf("email receive: %v", p)
		}
		if ctx.Err() != nil {
			err = nil
		}
	}()
	kick := make(chan struct{}, 1)
	c, err := a.dialIMAP(ctx, &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				select {
				case kick <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	var sel *imap.SelectData
	if err := guard(c, a.cfg.Timeout, func() (err error) { sel, err = c.Select(a.cfg.Mailbox, nil).Wait(); return err }); err != nil {
		return fmt.Errorf("selecting %s: %w", a.cfg.Mailbox, err)
	}
	if a.cfg.DoneMailbox != "" {
		// Created once; "already exists" is the usual answer.
		if err := guard(c, a.cfg.Timeout, c.Create(a.cfg.DoneMailbox, nil).Wait); err != nil {
			a.log.Debug("creating the done mailbox", "mailbox", a.cfg.DoneMailbox, "err", err)
		}
	}
	idle := c.Caps().Has(imap.CapIdle) && !a.cfg.NoIdle
	a.log.Info("email channel watching", "mailbox", a.cfg.Mailbox, "idle", idle)
	r := &scanner{a: a, c: c, h: h, validity: sel.UIDValidity}
	for {
		if err := r.scan(ctx); err != nil {
			return err
		}
		if err := a.wait(ctx, c, idle, kick); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// wait returns when new mail may have arrived: EXISTS during IDLE, or the
// poll interval.
func (a *Adapter) wait(ctx context.Context, c *imapclient.Client, idle bool, kick chan struct{}) error {
	interval := a.cfg.PollInterval
	if idle && interval > maxIdle {
		interval = maxIdle
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	if !idle {
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}
	// An EXISTS that arrived before IDLE started is still in kick.
	cmd, err := c.Idle()
	if err != nil {
		return fmt.Errorf("starting IDLE: %w", err)
	}
	select {
	case <-kick:
	case <-t.C:
	case <-ctx.Done():
	case <-c.Closed():
	}
	if err := guard(c, a.cfg.Timeout, func() error {
		if err := cmd.Close(); err != nil {
			return err
		}
		return cmd.Wait()
	}); err != nil {
		return fmt.Errorf("ending IDLE: %w", err)
	}
	return nil
}

// guard runs one IMAP exchange, closing the connection if it takes longer
// than d: the client library waits for a silent peer indefinitely, and a
// closed connection makes Receive return so the relay reconnects.
func guard(c *imapclient.Client, d time.Duration, fn func() error) error {
	var fired atomic.Bool
	t := time.AfterFunc(d, func() { fired.Store(true); c.Close() })
	defer t.Stop()
	err := fn()
	if err != nil && fired.Load() {
		// The closed connection reads as "unexpected EOF"; say why.
		return fmt.Errorf("the IMAP server did not answer within %s: %w", d, err)
	}
	return err
}

// session runs fn on a connection of its own, ended by ctx or after limit.
func (a *Adapter) session(ctx context.Context, limit time.Duration, fn func(c *imapclient.Client) error) error {
	c, err := a.dialIMAP(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := guard(c, limit, func() error { return fn(c) }); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return err
	}
	guard(c, a.cfg.Timeout, c.Logout().Wait)
	return nil
}

// scanner reads one selected mailbox.
type scanner struct {
	a        *Adapter
	c        *imapclient.Client
	h        channels.Handler
	validity uint32
	// after is the highest UID looked at on this connection: ignored
	// messages (not for the channel) stay unseen, and are not fetched
	// again until the next connection.
	after imap.UID
}

// scan handles every new unseen message addressed to the channel, in two
// steps: the recipient headers of every new unseen message (small, and
// independent of how a server implements substring SEARCH), then the
// whole of those addressed to the channel.
func (s *scanner) scan(ctx context.Context) error {
	a := s.a
	crit := &imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen, imap.FlagDeleted}}
	if s.after > 0 {
		crit.UID = []imap.UIDSet{{imap.UIDRange{Start: s.after + 1, Stop: 0}}}
	}
	var res *imap.SearchData
	err := guard(s.c, s.a.cfg.Timeout, func() (err error) { res, err = s.c.UIDSearch(crit, nil).Wait(); return err })
	if err != nil {
		return fmt.Errorf("searching %s: %w", a.cfg.Mailbox, err)
	}
	var uids []imap.UID
	for _, u := range uidsOf(res) {
		// "N:*" always matches the last message, even below N.
		if u > s.after {
			uids = append(uids, u)
		}
	}
	uids = a.unreadable.without(s.validity, uids)
	for len(uids) > 0 && ctx.Err() == nil {
		n := min(len(uids), headerBatch)
		if a.unreadable.suspect(s.validity, uids[0]) {
			n = 1 // one at a time through what failed before
		}
		batch := uids[:n]
		uids = uids[n:]
		mine, err := s.addressed(batch)
		if err != nil {
			a.unreadable.failed(a.log, s.validity, batch)
			return err
		}
		// Those not for the channel were read well enough.
		a.unreadable.read(s.validity, slices.DeleteFunc(slices.Clone(batch), func(id imap.UID) bool { return slices.Contains(mine, id) }))
		for len(mine) > 0 && ctx.Err() == nil {
			k := min(len(mine), fetchBatch)
			if a.unreadable.suspect(s.validity, mine[0]) {
				k = 1
			}
			if err := s.fetchAndHandle(ctx, mine[:k]); err != nil {
				if ctx.Err() == nil {
					a.unreadable.failed(a.log, s.validity, mine[:k])
				}
				return err
			}
			a.unreadable.read(s.validity, mine[:k])
			mine = mine[k:]
		}
		if ctx.Err() == nil {
			// Messages of this batch not for the channel (or expunged
			// meanwhile) are not looked at again on this connection.
			s.after = max(s.after, batch[len(batch)-1])
		}
	}
	return nil
}

// recipientFields are the headers that say whom a message is for.
var recipientFields = []string{"To", "Cc", "Delivered-To", "X-Original-To"}

// addressed returns the UIDs in batch whose recipient headers name the
// dedicated address (classify checks again on the whole message).
func (s *scanner) addressed(batch []imap.UID) ([]imap.UID, error) {
	sec := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: recipientFields, Peek: true}
	var msgs []*imapclient.FetchMessageBuffer
	err := guard(s.c, s.a.cfg.Timeout, func() (err error) {
		msgs, err = s.c.Fetch(imap.UIDSetNum(batch...), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{sec}}).Collect()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fetching recipients from %s: %w", s.a.cfg.Mailbox, err)
	}
	var out []imap.UID
	for _, m := range msgs {
		h := readHeader(m.FindBodySection(sec))
		for _, f := range recipientFields {
			if s.a.anyOurs(h[strings.ToLower(f)]) {
				out = append(out, m.UID)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// fetchAndHandle downloads and handles messages in UID order.
func (s *scanner) fetchAndHandle(ctx context.Context, uids []imap.UID) error {
	var msgs []*imapclient.FetchMessageBuffer
	// Up to fetchBatch × maxFetchBytes: more time than one command.
	err := guard(s.c, 5*s.a.cfg.Timeout, func() (err error) {
		msgs, err = s.c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
			UID: true, InternalDate: true, RFC822Size: true, BodyStructure: &imap.FetchItemBodyStructure{Extended: true},
			BodySection: []*imap.FetchItemBodySection{{Peek: true, Partial: &imap.SectionPartial{Size: maxFetchBytes}}},
		}).Collect()
		return err
	})
	if err != nil {
		return fmt.Errorf("fetching from %s: %w", s.a.cfg.Mailbox, err)
	}
	slices.SortFunc(msgs, func(x, y *imapclient.FetchMessageBuffer) int { return cmp.Compare(x.UID, y.UID) })
	for _, m := range msgs {
		if err := s.handle(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func uidsOf(res *imap.SearchData) []imap.UID {
	if res == nil || res.All == nil {
		return nil
	}
	set, ok := res.All.(imap.UIDSet)
	if !ok {
		return nil
	}
	uids, ok := set.Nums()
	if !ok {
		// A dynamic set ("*") in a search reply is a server bug.
		return nil
	}
	return uids
}

// handle classifies one message, delivers it, and marks it handled.
func (s *scanner) handle(ctx context.Context, m *imapclient.FetchMessageBuffer) error {
	a := s.a
	var raw []byte
	if len(m.BodySection) > 0 {
		raw = m.BodySection[0].Bytes
	}
	in := a.classify(raw, m.InternalDate, s.fallbackID(m.UID))
	log := a.log.With("uid", uint32(m.UID))
	switch in.disp {
	case ignore:
		return nil
	case drop:
		log.Info("email message skipped", "reason", in.why)
	case deliver:
		u := in.update
		if in.voice != nil {
			v := *in.voice
			if m.RFC822Size > 0 && (v.Size <= 0 || m.RFC822Size < v.Size) {
				v.Size = m.RFC822Size
			}
			v.Fetch = s.voiceFetcher(m.UID, in.audioIndex)
			u.Voice = &v
		}
		for _, f := range filesOf(m.BodyStructure, in.voice != nil) {
			u.Attachments = append(u.Attachments, channels.Attachment{Name: f.name, Mime: f.mime, Size: f.size, Fetch: s.partFetcher(m.UID, f)})
		}
		if !strings.HasPrefix(u.Sender, unverifiedPrefix) {
			log.Info("email message received", "id", u.ID, "sender", u.Sender, "proof", in.why)
		} else {
			log.Warn("email message without proof of its sender", "id", u.ID, "sender", u.Sender, "reason", in.why)
		}
		s.h(ctx, u)
	}
	if ctx.Err() != nil {
		// Handled or not, the relay's deduplication covers a redelivery.
		return ctx.Err()
	}
	return s.markHandled(m.UID)
}

// markHandled flags a message \Seen and moves it to the done mailbox.
func (s *scanner) markHandled(uid imap.UID) error {
	set := imap.UIDSetNum(uid)
	store := s.c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}, nil)
	if err := guard(s.c, s.a.cfg.Timeout, store.Close); err != nil {
		return fmt.Errorf("marking message %d seen: %w", uid, err)
	}
	if box := s.a.cfg.DoneMailbox; box != "" {
		if err := guard(s.c, s.a.cfg.Timeout, func() error { _, err := s.c.Move(set, box).Wait(); return err }); err != nil {
			return fmt.Errorf("moving message %d to %s: %w", uid, box, err)
		}
	}
	return nil
}

// fallbackID names a message without a Message-ID by its place in the
// mailbox, shaped like a Message-ID so a reply can cite it.
func (s *scanner) fallbackID(uid imap.UID) string {
	h := fnv.New32a()
	h.Write([]byte(s.a.cfg.Mailbox))
	return fmt.Sprintf("<%d.%d.%08x@imap.invalid>", s.validity, uid, h.Sum32())
}

// voiceFetcher downloads a voice note on its own connection: the relay
// may call it while this one is busy, or after.
func (s *scanner) voiceFetcher(uid imap.UID, index int) func(ctx context.Context) ([]byte, error) {
	a, validity := s.a, s.validity
	return func(ctx context.Context) ([]byte, error) {
		var raw []byte
		err := a.session(ctx, 5*a.cfg.Timeout, func(c *imapclient.Client) error {
			sel, err := c.Select(a.cfg.Mailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
			if err != nil {
				return fmt.Errorf("selecting %s: %w", a.cfg.Mailbox, err)
			}
			if sel.UIDValidity != validity {
				return errors.New("the voice note's mailbox changed (UIDVALIDITY) before it was fetched")
			}
			msgs, err := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{{Peek: true, Partial: &imap.SectionPartial{Size: maxVoiceBytes}}}}).Collect()
			if err != nil {
				return fmt.Errorf("fetching the voice note's message: %w", err)
			}
			if len(msgs) == 0 || len(msgs[0].BodySection) == 0 {
				return errors.New("the voice note's message is no longer in the mailbox")
			}
			raw = msgs[0].BodySection[0].Bytes
			return nil
		})
		if err != nil {
			return nil, err
		}
		p, err := parse.Parse(raw, parse.Options{MaxAttachmentBytes: maxVoiceBytes})
		if err != nil {
			return nil, fmt.Errorf("reading the voice note's message: %w", err)
		}
		if index < 0 || index >= len(p.Attachments) || p.Attachments[index].Data == nil {
			return nil, errors.New("the voice note is missing or larger than 25 MB")
		}
		return p.Attachments[index].Data, nil
	}
}

// unreadable tracks messages whose fetching ends the IMAP session (a
// Dovecot that cannot open a message file answers a FETCH of it by
// disconnecting), so one bad message does not stop the channel for good:
// the UIDs of a failed command become suspects, fetched one at a time
// after the relay starts Receive again; a suspect that fails alone
// unreadableTries times is skipped, with a warning, and stays unseen on
// the server. Kept per adapter in memory: a restart of the daemon tries
// again. A network failure ends the session before the fetch (the
// reconnection's SEARCH fails first), so it is not counted against a
// message.
type unreadable struct {
	mu       sync.Mutex
	validity uint32
	suspects map[imap.UID]int // failed alone this many times (0: in a failed batch)
	skipped  map[imap.UID]bool
}

// unreadableTries is how often a message must end the session alone
// before it is skipped.
const unreadableTries = 3

// reset forgets everything when the mailbox's UIDs were renumbered.
func (u *unreadable) reset(validity uint32) {
	if u.validity != validity || u.suspects == nil {
		u.validity, u.suspects, u.skipped = validity, map[imap.UID]int{}, map[imap.UID]bool{}
	}
}

// without is uids less the skipped ones.
func (u *unreadable) without(validity uint32, uids []imap.UID) []imap.UID {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reset(validity)
	if len(u.skipped) == 0 {
		return uids
	}
	return slices.DeleteFunc(uids, func(id imap.UID) bool { return u.skipped[id] })
}

func (u *unreadable) suspect(validity uint32, uid imap.UID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reset(validity)
	_, ok := u.suspects[uid]
	return ok
}

// failed notes a command on uids that ended with an error.
func (u *unreadable) failed(log *slog.Logger, validity uint32, uids []imap.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reset(validity)
	if len(uids) > 1 {
		for _, id := range uids {
			if _, ok := u.suspects[id]; !ok {
				u.suspects[id] = 0
			}
		}
		return
	}
	id := uids[0]
	u.suspects[id]++
	if u.suspects[id] >= unreadableTries {
		delete(u.suspects, id)
		u.skipped[id] = true
		log.Warn("email message skipped: fetching it ended the IMAP session every time (the server cannot read it; see its log); it stays unseen there",
			"uid", uint32(id), "tries", unreadableTries)
	}
}

// read clears uids that were fetched.
func (u *unreadable) read(validity uint32, uids []imap.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reset(validity)
	for _, id := range uids {
		delete(u.suspects, id)
	}
}
