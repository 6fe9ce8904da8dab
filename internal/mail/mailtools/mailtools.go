// Package mailtools exposes the mail connector to the agent as tools:
// mail_search, mail_read and mail_thread (allowed), mail_save_attachment
// (gated like write_file: it writes outside bytes, into a folder the path
// policy permits for writing) and mail_send, mail_reply and mail_schedule
// (gated: they send mail, so they are not read-only, are egress, and go
// through the write journal).
//
// Results are compact and capped so the model never receives an archive,
// and every result that carries message content is marked untrusted.
package mailtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/journal"
	"github.com/hestia-dev/hestia/internal/mail/parse"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Page limits for the agent (tighter than the store's own).
const (
	SearchDefault  = 8
	SearchMax      = 12
	ReadDefault    = 4000
	ReadMax        = 8000
	ThreadDefault  = 6
	ThreadMax      = 12
	threadSnippet  = 300
	maxAttachBytes = 50 << 20
)

// Deps are what the tools work with. Journal, Sender and Accounts may be
// empty: the sending tools then report themselves unavailable.
type Deps struct {
	Store   *mail.Store
	Journal *journal.Journal
	Sender  journal.Sender
	// Accounts maps send-capable account names to their From address.
	Accounts       map[string]string
	DefaultAccount string
	Paths          *pathpolicy.Policy
	Now            func() time.Time
	// Live, when set, fetches one copy of a message from its server (an
	// IMAP path); reads use it when the mirrored body is unusable.
	Live func(ctx context.Context, path string) ([]byte, error)
}

// minUsableBody is the trimmed length below which a non-full mirrored
// body is considered unusable and a live read is tried.
const minUsableBody = 20

// SearchArgs are mail_search's arguments.
type SearchArgs struct {
	Query         string `json:"query,omitempty"`
	Account       string `json:"account,omitempty"`
	Mailbox       string `json:"mailbox,omitempty"`
	Role          string `json:"role,omitempty"`
	From          string `json:"from,omitempty"`
	To            string `json:"to,omitempty"`
	Cc            string `json:"cc,omitempty"`
	Subject       string `json:"subject_contains,omitempty"`
	Body          string `json:"body_contains,omitempty"`
	AttachName    string `json:"attachment_name,omitempty"`
	Count         bool   `json:"count,omitempty"`
	After         string `json:"after,omitempty"`
	Before        string `json:"before,omitempty"`
	Unread        *bool  `json:"unread,omitempty"`
	Flagged       *bool  `json:"flagged,omitempty"`
	HasAttachment *bool  `json:"has_attachment,omitempty"`
	MinSize       int64  `json:"min_size,omitempty"`
	MaxSize       int64  `json:"max_size,omitempty"`
	Sort          string `json:"sort,omitempty"`
	PerMessage    bool   `json:"per_message,omitempty"`
	Offset        int    `json:"offset,omitempty"`
	Limit         int    `json:"limit,omitempty"`
}

func parseDay(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, l := range []string{time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(l, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q is not a date like 2026-06-01", field, v)
}

// Search runs mail_search.
func (d Deps) Search(ctx context.Context, a SearchArgs) (mail.Result, error) {
	after, err := parseDay("after", a.After)
	if err != nil {
		return mail.Result{}, err
	}
	before, err := parseDay("before", a.Before)
	if err != nil {
		return mail.Result{}, err
	}
	if a.Limit <= 0 {
		a.Limit = SearchDefault
	}
	a.Limit = min(a.Limit, SearchMax)
	return d.Store.Search(ctx, mail.Query{
		Text: a.Query, Account: a.Account, Mailbox: a.Mailbox, Role: a.Role, From: a.From, To: a.To, Cc: a.Cc,
		Subject: a.Subject, Body: a.Body, AttachmentName: a.AttachName, Count: a.Count, After: after, Before: before, Unread: a.Unread, Flagged: a.Flagged,
		Attachment: a.HasAttachment, MinSize: a.MinSize, MaxSize: a.MaxSize, Sort: a.Sort, PerMessage: a.PerMessage,
		Offset: a.Offset, Limit: a.Limit,
	})
}

// ReadArgs are mail_read's arguments.
type ReadArgs struct {
	ID     int64 `json:"id"`
	Offset int   `json:"offset,omitempty"`
	Limit  int   `json:"limit,omitempty"`
}

// Read runs mail_read. A non-full body too short to be useful is fetched
// live when possible; the live text is used only if it is longer, is never
// written to the mirror, and any failure falls back to the mirrored body.
func (d Deps) Read(ctx context.Context, a ReadArgs) (mail.Message, error) {
	if a.Limit <= 0 {
		a.Limit = ReadDefault
	}
	a.Limit = min(a.Limit, ReadMax)
	m, err := d.Store.Read(ctx, a.ID, a.Offset, a.Limit)
	if err != nil || m.BodyState == mail.BodyFull || d.Live == nil || a.Offset > 0 {
		return m, err
	}
	mirrored, err := d.Store.Read(ctx, a.ID, 0, mail.MaxBodyChars)
	if err != nil || len(strings.TrimSpace(mirrored.Body)) >= minUsableBody {
		return m, nil
	}
	paths, err := d.Store.Paths(ctx, a.ID)
	if err != nil {
		return m, nil
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "imap://") {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		raw, err := d.Live(lctx, p)
		cancel()
		if err != nil {
			continue
		}
		pm, err := parse.Parse(raw, parse.Options{})
		if err != nil || len([]rune(strings.TrimSpace(pm.Text))) <= len([]rune(strings.TrimSpace(mirrored.Body))) {
			continue
		}
		r := []rune(pm.Text)
		m.BodyLength = len(r)
		m.Body = string(r[:min(len(r), a.Limit)])
		m.NextOffset = 0
		m.Live = true
		return m, nil
	}
	return m, nil
}

// ThreadArgs are mail_thread's arguments.
type ThreadArgs struct {
	ID     int64 `json:"id"`
	Offset int   `json:"offset,omitempty"`
	Limit  int   `json:"limit,omitempty"`
}

// Thread runs mail_thread: newest messages first.
func (d Deps) Thread(ctx context.Context, a ThreadArgs) (mail.ThreadPage, error) {
	if a.Limit <= 0 {
		a.Limit = ThreadDefault
	}
	return d.Store.Thread(ctx, a.ID, a.Offset, min(a.Limit, ThreadMax), threadSnippet)
}

// SaveArgs are mail_save_attachment's arguments.
type SaveArgs struct {
	ID     int64  `json:"id"`
	Index  int    `json:"index"`
	Folder string `json:"folder"`
}

// SaveResult says where the attachment went.
type SaveResult struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

var unsafeName = lazyre.New(`[^\p{L}\p{N}._ -]+`)

// SafeFilename reduces an attachment's declared name to one harmless path
// component: no directories, no leading dots, bounded length.
func SafeFilename(name string, index int) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.TrimLeft(unsafeName.ReplaceAllString(name, "_"), ". ")
	if r := []rune(name); len(r) > 120 {
		name = string(r[len(r)-120:])
	}
	if name == "" || name == "_" {
		name = fmt.Sprintf("attachment-%d", index)
	}
	return name
}

// SaveAttachment runs mail_save_attachment. The file is created, never
// overwritten: an existing name gets a numbered suffix.
func (d Deps) SaveAttachment(ctx context.Context, a SaveArgs) (SaveResult, error) {
	if d.Paths == nil {
		return SaveResult{}, errors.New("no path policy configured")
	}
	if strings.TrimSpace(a.Folder) == "" {
		return SaveResult{}, errors.New("folder is required")
	}
	att, data, err := d.Store.AttachmentData(ctx, a.ID, a.Index)
	if err != nil {
		return SaveResult{}, err
	}
	dir, err := d.Paths.ResolveForWrite(a.Folder)
	if err != nil {
		return SaveResult{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return SaveResult{}, fmt.Errorf("creating %s: %w", dir, err)
	}
	name := SafeFilename(att.Filename, a.Index)
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 0; i < 100; i++ {
		cand := name
		if i > 0 {
			cand = fmt.Sprintf("%s (%d)%s", stem, i, ext)
		}
		p, err := d.Paths.ResolveForWrite(filepath.Join(dir, cand))
		if err != nil {
			return SaveResult{}, err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return SaveResult{}, fmt.Errorf("saving attachment: %w", err)
		}
		_, werr := f.Write(data)
		cerr := f.Close()
		if werr != nil || cerr != nil {
			os.Remove(p)
			return SaveResult{}, fmt.Errorf("saving attachment: %w", errors.Join(werr, cerr))
		}
		return SaveResult{Path: p, Size: int64(len(data))}, nil
	}
	return SaveResult{}, fmt.Errorf("too many files named like %s in %s", name, dir)
}

// SendArgs are mail_send's and mail_schedule's arguments.
type SendArgs struct {
	Account string   `json:"account,omitempty"`
	To      []string `json:"to"`
	Cc      []string `json:"cc,omitempty"`
	Bcc     []string `json:"bcc,omitempty"`
	Subject string   `json:"subject"`
	Body    string   `json:"body"`
	SendAt  string   `json:"send_at,omitempty"` // mail_schedule only, RFC 3339
}

func (d Deps) account(name string) (string, string, error) {
	if name == "" {
		name = d.DefaultAccount
	}
	from, ok := d.Accounts[name]
	if !ok {
		return "", "", fmt.Errorf("no send-capable mail account %q", name)
	}
	return name, from, nil
}

// namesOnly refuses recipients given as names: the model must resolve
// them (resolve_recipient) and ask the user when the name is ambiguous,
// so that the approval card always shows the real address.
func namesOnly(lists ...[]string) error {
	for _, l := range lists {
		for _, r := range l {
			if !strings.Contains(r, "@") {
				return fmt.Errorf("recipient %q is a name, not an address: call resolve_recipient, and if it is ambiguous ask the user which address; then send to the address", r)
			}
		}
	}
	return nil
}

// Send runs mail_send through the journal.
func (d Deps) Send(ctx context.Context, a SendArgs) (journal.Op, error) {
	if d.Journal == nil || d.Sender == nil {
		return journal.Op{}, errors.New("sending mail is not configured")
	}
	if err := namesOnly(a.To, a.Cc, a.Bcc); err != nil {
		return journal.Op{}, err
	}
	acct, from, err := d.account(a.Account)
	if err != nil {
		return journal.Op{}, err
	}
	return d.Journal.Send(ctx, journal.KindSend, acct, journal.Draft{From: from, To: a.To, Cc: a.Cc, Bcc: a.Bcc, Subject: a.Subject, Body: a.Body}, d.Sender)
}

// Schedule runs mail_schedule.
func (d Deps) Schedule(ctx context.Context, a SendArgs) (journal.Op, error) {
	if d.Journal == nil {
		return journal.Op{}, errors.New("sending mail is not configured")
	}
	if err := namesOnly(a.To, a.Cc, a.Bcc); err != nil {
		return journal.Op{}, err
	}
	at, err := time.Parse(time.RFC3339, a.SendAt)
	if err != nil {
		return journal.Op{}, fmt.Errorf("send_at %q is not an RFC 3339 time like 2026-06-01T09:00:00+02:00", a.SendAt)
	}
	acct, from, err := d.account(a.Account)
	if err != nil {
		return journal.Op{}, err
	}
	return d.Journal.Schedule(ctx, acct, journal.Draft{From: from, To: a.To, Cc: a.Cc, Bcc: a.Bcc, Subject: a.Subject, Body: a.Body}, at)
}

// ReplyArgs are mail_reply's arguments.
type ReplyArgs struct {
	ID       int64    `json:"id"`
	Body     string   `json:"body"`
	ReplyAll bool     `json:"reply_all,omitempty"`
	Cc       []string `json:"cc,omitempty"`
}

// Reply runs mail_reply: answers the sender (and, with reply_all, every
// other recipient except the account itself) from the account the message
// arrived in, linked with In-Reply-To/References.
func (d Deps) Reply(ctx context.Context, a ReplyArgs) (journal.Op, error) {
	if d.Journal == nil || d.Sender == nil {
		return journal.Op{}, errors.New("sending mail is not configured")
	}
	ri, err := d.Store.ReplyContext(ctx, a.ID)
	if err != nil {
		return journal.Op{}, err
	}
	if ri.MessageID == "" {
		return journal.Op{}, fmt.Errorf("message %d has no Message-ID to reply to", a.ID)
	}
	acct, from, err := d.account(ri.Account)
	if err != nil {
		return journal.Op{}, err
	}
	self := strings.ToLower(from)
	to := without(ri.From, self)
	if len(ri.ReplyTo) > 0 {
		to = without(ri.ReplyTo, self)
	}
	if len(to) == 0 { // replying to our own sent message: answer its recipients
		to = without(ri.To, self)
	}
	cc := append([]string(nil), a.Cc...)
	if a.ReplyAll {
		cc = append(cc, without(append(ri.To, ri.Cc...), append(to, self)...)...)
	}
	subject := ri.Subject
	if !strings.HasPrefix(strings.ToLower(subject), "re:") {
		subject = "Re: " + subject
	}
	return d.Journal.Send(ctx, journal.KindReply, acct, journal.Draft{From: from, To: to, Cc: dedupe(cc), Subject: subject, Body: a.Body,
		InReplyTo: ri.MessageID, References: ri.References}, d.Sender)
}

func without(list []string, drop ...string) []string {
	var out []string
	for _, a := range list {
		keep := true
		for _, d := range drop {
			if strings.EqualFold(a, d) {
				keep = false
			}
		}
		if keep {
			out = append(out, a)
		}
	}
	return out
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range list {
		if k := strings.ToLower(a); !seen[k] {
			seen[k] = true
			out = append(out, a)
		}
	}
	return out
}

// Register adds every mail tool to reg.
func Register(reg *tools.Registry, d Deps) error {
	for _, t := range Tools(d) {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	return nil
}

// Tools returns the mail tools bound to d.
func Tools(d Deps) []tools.Tool {
	canSend := func(ctx context.Context) error {
		if d.Journal == nil || d.Sender == nil || len(d.Accounts) == 0 {
			return errors.New("no mail account is configured for sending")
		}
		return nil
	}
	read := tools.Spec{Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, UntrustedOutput: true, MaxResult: 20000}
	send := tools.Spec{Risk: tools.RiskHigh, Egress: true}
	return []tools.Tool{
		tool(withSpec(read, "mail_search", "Search the user's mail. Free text (query) is ranked lexically and semantically; filters narrow it (from/to/cc/subject_contains/body_contains/attachment_name are case- and accent-insensitive substrings; after/before are dates; quoted words in query are a phrase). Hits matching only some words come last, marked partial_match; count=true adds the exact total. Without query, browses newest first (sort=size for largest). Returns compact summaries; use mail_read for a body.", searchSchema), nil, d.Search),
		tool(withSpec(read, "mail_read", "Read one message by id: headers, body state, attachments and a page of the body (continue with offset=next_offset).", readSchema), nil, d.Read),
		tool(withSpec(read, "mail_thread", "List the conversation a message belongs to, newest first, with short snippets; page with offset.", threadSchema), nil, d.Thread),
		saveTool(d),
		tool(withSpec(send, "mail_send", "Send a new email from a configured account. Journaled and confirmed against the Sent mailbox. Recipients are addresses; for a person's name call resolve_recipient first.", sendSchema), canSend, d.Send),
		tool(withSpec(send, "mail_reply", "Reply to a message by id (reply_all adds the other recipients). Journaled and confirmed against Sent.", replySchema), canSend, d.Reply),
		tool(withSpec(send, "mail_schedule", "Schedule an email to be sent at send_at (RFC 3339). Journaled; sent once by the scheduler.", scheduleSchema), canSend, d.Schedule),
	}
}

// saveTool is mail_save_attachment. It writes outside bytes to disk, so it
// is gated like write_file (medium risk, not read-only: taint makes it ask
// after untrusted content even under a rule or mode), and its folder is a
// path argument, so the path policy refuses a sensitive or code-running
// folder before a card is shown; the file name comes from the mail and is
// checked again when the file is created.
func saveTool(d Deps) tools.Tool {
	spec := withSpec(tools.Spec{Risk: tools.RiskMedium, PathArgs: []string{"folder"}}, "mail_save_attachment", "Save one attachment of a message (index from mail_read) into a folder; never overwrites. Needs the user's approval.", saveSchema)
	t := tool(spec, nil, d.SaveAttachment)
	t.PreviewF = d.previewSave
	return t
}

// previewSave describes the call for the approval card: which file, how
// large, and the path it would be created at (the name is the sender's).
func (d Deps) previewSave(ctx context.Context, args json.RawMessage) string {
	var a SaveArgs
	if json.Unmarshal(args, &a) != nil || d.Store == nil || d.Paths == nil {
		return ""
	}
	m, err := d.Store.Read(ctx, a.ID, 0, 1)
	if err != nil {
		return ""
	}
	if a.Index < 0 || a.Index >= len(m.Attachments) {
		return fmt.Sprintf("message %d has no attachment %d", a.ID, a.Index)
	}
	att := m.Attachments[a.Index]
	dir, err := d.Paths.ResolveForWrite(a.Folder)
	if err != nil {
		return "refused: " + err.Error()
	}
	p, err := d.Paths.ResolveForWrite(filepath.Join(dir, SafeFilename(att.Filename, a.Index)))
	if err != nil {
		return "refused: " + err.Error()
	}
	return fmt.Sprintf("save %q (%d bytes, %s) from message %d as %s (a numbered name if it exists)", att.Filename, att.Size, att.ContentType, a.ID, p)
}

func withSpec(base tools.Spec, name, desc string, schema string) tools.Spec {
	base.Name, base.Description, base.Schema = name, desc, json.RawMessage(schema)
	return base
}

// tool adapts a typed function to tools.Tool. Domain errors (bad input,
// not found) become error results the model can act on; only context
// cancellation is returned as a Go error.
func tool[A, R any](spec tools.Spec, check func(context.Context) error, fn func(context.Context, A) (R, error)) *tools.Func {
	return &tools.Func{
		S:     spec,
		Check: check,
		Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			var a A
			if err := json.Unmarshal(c.Args, &a); err != nil {
				return tools.Result{Content: fmt.Sprintf("arguments for %s could not be read: %v", spec.Name, err), IsError: true}, nil
			}
			r, err := fn(ctx, a)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return tools.Result{}, err
				}
				msg := err.Error()
				if errors.Is(err, store.ErrNotFound) {
					msg += " (it may have been deleted; search again)"
				}
				return tools.Result{Content: msg, IsError: true}, nil
			}
			b, err := json.Marshal(r)
			if err != nil {
				return tools.Result{}, err
			}
			return tools.Result{Content: tools.Cap(string(b), spec.MaxResult)}, nil
		},
	}
}

const searchSchema = `{"type":"object","additionalProperties":false,"properties":{
"query":{"type":"string","maxLength":500},
"account":{"type":"string"},"mailbox":{"type":"string"},
"role":{"type":"string","enum":["inbox","sent","drafts","trash","junk","archive","all"]},
"from":{"type":"string","maxLength":200},"to":{"type":"string","maxLength":200},"cc":{"type":"string","maxLength":200},
"subject_contains":{"type":"string","maxLength":200},"body_contains":{"type":"string","maxLength":200},
"attachment_name":{"type":"string","maxLength":200},"count":{"type":"boolean"},
"after":{"type":"string","description":"YYYY-MM-DD"},"before":{"type":"string","description":"YYYY-MM-DD"},
"unread":{"type":"boolean"},"flagged":{"type":"boolean"},"has_attachment":{"type":"boolean"},
"min_size":{"type":"integer","minimum":0},"max_size":{"type":"integer","minimum":0},
"sort":{"type":"string","enum":["date","size"]},"per_message":{"type":"boolean"},
"offset":{"type":"integer","minimum":0,"maximum":500},"limit":{"type":"integer","minimum":1,"maximum":12}}}`

const readSchema = `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
"id":{"type":"integer"},"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1,"maximum":8000}}}`

const threadSchema = `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
"id":{"type":"integer"},"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1,"maximum":12}}}`

const saveSchema = `{"type":"object","additionalProperties":false,"required":["id","index","folder"],"properties":{
"id":{"type":"integer"},"index":{"type":"integer","minimum":0},"folder":{"type":"string","minLength":1}}}`

const sendSchema = `{"type":"object","additionalProperties":false,"required":["to","subject","body"],"properties":{
"account":{"type":"string"},
"to":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":50},
"cc":{"type":"array","items":{"type":"string"},"maxItems":50},
"bcc":{"type":"array","items":{"type":"string"},"maxItems":50},
"subject":{"type":"string","maxLength":500},"body":{"type":"string","maxLength":100000}}}`

const replySchema = `{"type":"object","additionalProperties":false,"required":["id","body"],"properties":{
"id":{"type":"integer"},"body":{"type":"string","maxLength":100000},"reply_all":{"type":"boolean"},
"cc":{"type":"array","items":{"type":"string"},"maxItems":50}}}`

const scheduleSchema = `{"type":"object","additionalProperties":false,"required":["to","subject","body","send_at"],"properties":{
"account":{"type":"string"},
"to":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":50},
"cc":{"type":"array","items":{"type":"string"},"maxItems":50},
"bcc":{"type":"array","items":{"type":"string"},"maxItems":50},
"subject":{"type":"string","maxLength":500},"body":{"type":"string","maxLength":100000},
"send_at":{"type":"string","description":"RFC 3339 time"}}}`
