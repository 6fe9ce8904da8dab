// Package notify is Hestia's notification plane: a persisted inbox (an
// approval is waiting, an action was proposed, a watch fired, a job failed,
// a budget warning), a decision step in front of delivery (deduplicate by
// key, rate-limit, quiet hours) and Web Push to the browsers the user
// paired (VAPID keys made on first start, RFC 8291 payload encryption by
// github.com/SherClockHolmes/webpush-go, subscriptions stored per device,
// 404/410 prunes, delivered when one endpoint accepted, retried otherwise).
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `notify/pushtest` too:
//
// the notification inbox (`notify.db`): approval waiting, job failed, budget warning (from bus
// events), actions and watches; decision step (dedupe by key, rate limit per 10 min, quiet hours
// defer the push); Web Push via webpush-go with VAPID keys made on first start, subscriptions per
// device (https, or http to loopback), 404/410 prune, delivered when one endpoint accepted,
// backoff retries; `pushtest` is a loopback push service that checks VAPID and decrypts RFC 8291
// payloads.
package notify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the notifications database.
var Schema = store.Schema{
	Name: "notify",
	Migrations: []string{`
CREATE TABLE notifications (
	id           INTEGER PRIMARY KEY,
	kind         TEXT NOT NULL,
	key          TEXT,
	title        TEXT NOT NULL,
	body         TEXT NOT NULL DEFAULT '',
	url          TEXT NOT NULL DEFAULT '',
	chat_id      TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	read_at      INTEGER,
	push_state   TEXT NOT NULL,
	push_reason  TEXT NOT NULL DEFAULT '',
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_attempt INTEGER,
	delivered_at INTEGER,
	last_error   TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX notifications_key ON notifications(key) WHERE key IS NOT NULL;
CREATE INDEX notifications_push ON notifications(push_state, next_attempt);
CREATE TABLE subscriptions (
	id         INTEGER PRIMARY KEY,
	endpoint   TEXT NOT NULL UNIQUE,
	p256dh     TEXT NOT NULL,
	auth       TEXT NOT NULL,
	device     TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	last_ok    INTEGER,
	failures   INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE vapid (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	public_key  TEXT NOT NULL,
	private_key TEXT NOT NULL
);
CREATE TABLE settings (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	quiet_start TEXT NOT NULL DEFAULT '',
	quiet_end   TEXT NOT NULL DEFAULT '',
	rate_limit  INTEGER NOT NULL DEFAULT 10
);
INSERT INTO settings (id) VALUES (1);
`},
}

// Kinds of notification.
const (
	KindApproval = "approval" // an approval or question waits for the user
	KindAction   = "action"   // the Action Center proposed work
	KindWatch    = "watch"    // a watch fired
	KindJob      = "job"      // a scheduled job failed
	KindBudget   = "budget"   // a budget warning or stop
)

// Push states.
const (
	PushPending    = "pending"    // waiting for the deliverer (maybe after quiet hours)
	PushDelivered  = "delivered"  // at least one endpoint accepted it
	PushFailed     = "failed"     // every attempt failed
	PushSuppressed = "suppressed" // the decision step kept it in the inbox only
	PushNoDevice   = "no_device"  // nothing was subscribed when it was due
)

// Notification is one inbox entry.
type Notification struct {
	ID          int64      `json:"id"`
	Kind        string     `json:"kind"`
	Key         string     `json:"key,omitempty"`
	Title       string     `json:"title"`
	Body        string     `json:"body,omitempty"`
	URL         string     `json:"url,omitempty"`
	ChatID      string     `json:"chat_id,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	ReadAt      *time.Time `json:"read_at,omitempty"`
	PushState   string     `json:"push_state"`
	PushReason  string     `json:"push_reason,omitempty"`
	Attempts    int        `json:"attempts"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	// Duplicate is set on the value Notify returns when the key had been
	// notified before (nothing new was stored or sent).
	Duplicate bool `json:"duplicate,omitempty"`
	// inboxOnly keeps it from being pushed (Deliver without push).
	inboxOnly bool
}

// Options configure a Notifier.
type Options struct {
	Log *slog.Logger
	Now func() time.Time
	// HTTP sends pushes; nil uses a client with a 30 s timeout.
	HTTP *http.Client
	// Subscriber is the VAPID contact: an e-mail address (sent as mailto:) or an https URL.
	Subscriber string
	// OnNew is told about every stored notification (the event bus).
	OnNew func(Notification)
}

// Notifier owns the inbox, the subscriptions and delivery.
type Notifier struct {
	db   *store.DB
	log  *slog.Logger
	now  func() time.Time
	opts Options
	kick chan struct{}

	mu sync.Mutex // serializes the decision step (dedupe + rate count)
}

// Open opens (creating) the notifications database and makes the VAPID
// key pair on first use.
func Open(ctx context.Context, path string, o Options) (*Notifier, error) {
	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Subscriber == "" {
		o.Subscriber = "hestia@localhost"
	}
	n := &Notifier{db: db, log: o.Log, now: o.Now, opts: o, kick: make(chan struct{}, 1)}
	if _, err := n.VAPIDPublicKey(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return n, nil
}

// Close closes the database.
func (n *Notifier) Close() error { return n.db.Close() }

// Limits on stored text.
const (
	maxTitle = 200
	maxBody  = 1000
	maxKey   = 300
)

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// RateWindow is the window of the push rate limit.
const RateWindow = 10 * time.Minute

// Notify stores a notification and decides whether it is pushed:
//   - a Key already notified is a duplicate: nothing is stored or sent, the
//     earlier entry is returned with Duplicate set;
//   - more pushes in RateWindow than the rate limit: kept in the inbox,
//     not pushed (push_state suppressed, reason rate_limited);
//   - inside quiet hours: pushed when they end.
func (n *Notifier) Notify(ctx context.Context, in Notification) (Notification, error) {
	if in.Kind == "" || strings.TrimSpace(in.Title) == "" {
		return Notification{}, errors.New("notification needs a kind and a title")
	}
	in.Title, in.Body, in.Key = clip(in.Title, maxTitle), clip(in.Body, maxBody), clip(in.Key, maxKey)
	n.mu.Lock()
	defer n.mu.Unlock()
	if in.Key != "" {
		old, err := n.byKey(ctx, in.Key)
		if err == nil {
			old.Duplicate = true
			return old, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return Notification{}, err
		}
	}
	set, err := n.Settings(ctx)
	if err != nil {
		return Notification{}, err
	}
	now := n.now()
	state, reason, next := PushPending, "", now
	var recent int
	if err := n.db.QueryRowContext(ctx, `SELECT count(*) FROM notifications WHERE created_at > ? AND push_state IN ('pending','delivered','failed','no_device')`,
		ms(now.Add(-RateWindow))).Scan(&recent); err != nil {
		return Notification{}, fmt.Errorf("counting recent notifications: %w", err)
	}
	if in.inboxOnly {
		state, reason = PushSuppressed, "inbox_only"
	} else if set.RateLimit > 0 && recent >= set.RateLimit {
		state, reason = PushSuppressed, "rate_limited"
	} else if end, quiet := set.quietUntil(now); quiet {
		next, reason = end, "quiet_hours"
	}
	var key any
	if in.Key != "" {
		key = in.Key
	}
	res, err := n.db.ExecContext(ctx, `INSERT INTO notifications (kind, key, title, body, url, chat_id, created_at, push_state, push_reason, next_attempt)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.Kind, key, in.Title, in.Body, in.URL, in.ChatID, ms(now), state, reason, ms(next))
	if err != nil {
		return Notification{}, fmt.Errorf("storing notification: %w", err)
	}
	id, _ := res.LastInsertId()
	out, err := n.Get(ctx, id)
	if err != nil {
		return Notification{}, err
	}
	if n.opts.OnNew != nil {
		n.opts.OnNew(out)
	}
	n.Kick()
	return out, nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMilli(v.Int64).UTC()
	return &t
}

const cols = `id, kind, key, title, body, url, chat_id, created_at, read_at, push_state, push_reason, attempts, delivered_at, last_error`

func scan(sc interface{ Scan(...any) error }) (Notification, error) {
	var x Notification
	var key sql.NullString
	var created int64
	var read, delivered sql.NullInt64
	if err := sc.Scan(&x.ID, &x.Kind, &key, &x.Title, &x.Body, &x.URL, &x.ChatID, &created, &read, &x.PushState, &x.PushReason, &x.Attempts, &delivered, &x.LastError); err != nil {
		return Notification{}, err
	}
	x.Key = key.String
	x.CreatedAt = time.UnixMilli(created).UTC()
	x.ReadAt, x.DeliveredAt = fromMS(read), fromMS(delivered)
	return x, nil
}

func (n *Notifier) one(ctx context.Context, where string, arg any) (Notification, error) {
	x, err := scan(n.db.QueryRowContext(ctx, `SELECT `+cols+` FROM notifications WHERE `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return Notification{}, fmt.Errorf("notification: %w", store.ErrNotFound)
	}
	if err != nil {
		return Notification{}, fmt.Errorf("reading notification: %w", err)
	}
	return x, nil
}

// Get returns one notification.
func (n *Notifier) Get(ctx context.Context, id int64) (Notification, error) {
	return n.one(ctx, `id = ?`, id)
}

func (n *Notifier) byKey(ctx context.Context, key string) (Notification, error) {
	return n.one(ctx, `key = ?`, key)
}

// Inbox is a page of notifications with the unread count.
type Inbox struct {
	Notifications []Notification `json:"notifications"`
	Unread        int            `json:"unread"`
}

// List returns the newest notifications (limit 1–200, default 50).
func (n *Notifier) List(ctx context.Context, unreadOnly bool, limit int) (Inbox, error) {
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	q := `SELECT ` + cols + ` FROM notifications`
	if unreadOnly {
		q += ` WHERE read_at IS NULL`
	}
	rows, err := n.db.QueryContext(ctx, q+` ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return Inbox{}, fmt.Errorf("listing notifications: %w", err)
	}
	defer rows.Close()
	out := Inbox{Notifications: []Notification{}}
	for rows.Next() {
		x, err := scan(rows)
		if err != nil {
			return Inbox{}, fmt.Errorf("listing notifications: %w", err)
		}
		out.Notifications = append(out.Notifications, x)
	}
	if err := rows.Err(); err != nil {
		return Inbox{}, err
	}
	err = n.db.QueryRowContext(ctx, `SELECT count(*) FROM notifications WHERE read_at IS NULL`).Scan(&out.Unread)
	return out, err
}

// MarkRead marks one notification (id > 0) or all of them (id 0) read.
func (n *Notifier) MarkRead(ctx context.Context, id int64) error {
	if id == 0 {
		_, err := n.db.ExecContext(ctx, `UPDATE notifications SET read_at = ? WHERE read_at IS NULL`, ms(n.now()))
		return err
	}
	if _, err := n.Get(ctx, id); err != nil {
		return err
	}
	_, err := n.db.ExecContext(ctx, `UPDATE notifications SET read_at = coalesce(read_at, ?) WHERE id = ?`, ms(n.now()), id)
	return err
}

// MarkReadKey marks the notification with this dedupe key read: the thing
// it announced was dealt with elsewhere (an approval decided in the chat, on
// the CLI or by a timeout), so it is no longer news. A push still waiting
// (quiet hours, retry) is dropped too: it would announce a settled matter.
// No notification with the key is not an error; an empty key is.
func (n *Notifier) MarkReadKey(ctx context.Context, key string) error {
	if key == "" {
		return errors.New("marking a notification read: empty key")
	}
	now := ms(n.now())
	_, err := n.db.ExecContext(ctx, `UPDATE notifications SET read_at = coalesce(read_at, ?),
		push_state = CASE WHEN push_state = 'pending' THEN 'suppressed' ELSE push_state END,
		push_reason = CASE WHEN push_state = 'pending' THEN 'read' ELSE push_reason END
		WHERE key = ?`, now, key)
	if err != nil {
		return fmt.Errorf("marking notification %q read: %w", key, err)
	}
	return nil
}

// Settings are the decision step's knobs.
type Settings struct {
	// QuietStart and QuietEnd are local "HH:MM" times; both empty means no
	// quiet hours. The window may cross midnight (22:00–07:00).
	QuietStart string `json:"quiet_start"`
	QuietEnd   string `json:"quiet_end"`
	// RateLimit is the most pushes in RateWindow (0: no limit).
	RateLimit int `json:"rate_limit"`
	loc       *time.Location
}

// Settings returns the stored settings.
func (n *Notifier) Settings(ctx context.Context) (Settings, error) {
	var s Settings
	if err := n.db.QueryRowContext(ctx, `SELECT quiet_start, quiet_end, rate_limit FROM settings WHERE id = 1`).Scan(&s.QuietStart, &s.QuietEnd, &s.RateLimit); err != nil {
		return Settings{}, fmt.Errorf("reading notification settings: %w", err)
	}
	s.loc = time.Local
	return s, nil
}

// FieldError names a bad setting or subscription field; safe to show.
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// HTTPStatus and HTTPCode make it a 400 bad_request (httpjson.Coded).
func (e *FieldError) HTTPStatus() int  { return 400 }
func (e *FieldError) HTTPCode() string { return "bad_request" }

func parseHM(field, v string) (int, error) {
	t, err := time.Parse("15:04", v)
	if err != nil {
		return 0, &FieldError{field, fmt.Sprintf("%q is not a time of day such as 22:00", v)}
	}
	return t.Hour()*60 + t.Minute(), nil
}

// SetSettings validates and stores settings.
func (n *Notifier) SetSettings(ctx context.Context, s Settings) (Settings, error) {
	if (s.QuietStart == "") != (s.QuietEnd == "") {
		return Settings{}, &FieldError{"quiet_end", "quiet hours need both quiet_start and quiet_end (or neither)"}
	}
	if s.QuietStart != "" {
		a, err := parseHM("quiet_start", s.QuietStart)
		if err != nil {
			return Settings{}, err
		}
		b, err := parseHM("quiet_end", s.QuietEnd)
		if err != nil {
			return Settings{}, err
		}
		if a == b {
			return Settings{}, &FieldError{"quiet_end", "must differ from quiet_start"}
		}
	}
	if s.RateLimit < 0 || s.RateLimit > 1000 {
		return Settings{}, &FieldError{"rate_limit", fmt.Sprintf("must be from 0 (no limit) to 1000, got %d", s.RateLimit)}
	}
	if _, err := n.db.ExecContext(ctx, `UPDATE settings SET quiet_start = ?, quiet_end = ?, rate_limit = ? WHERE id = 1`, s.QuietStart, s.QuietEnd, s.RateLimit); err != nil {
		return Settings{}, fmt.Errorf("storing notification settings: %w", err)
	}
	return n.Settings(ctx)
}

// quietUntil reports whether t is inside quiet hours and when they end.
func (s Settings) quietUntil(t time.Time) (time.Time, bool) {
	if s.QuietStart == "" {
		return time.Time{}, false
	}
	a, err1 := parseHM("", s.QuietStart)
	b, err2 := parseHM("", s.QuietEnd)
	if err1 != nil || err2 != nil {
		return time.Time{}, false
	}
	loc := s.loc
	if loc == nil {
		loc = time.Local
	}
	lt := t.In(loc)
	m := lt.Hour()*60 + lt.Minute()
	in := (a < b && m >= a && m < b) || (a > b && (m >= a || m < b))
	if !in {
		return time.Time{}, false
	}
	end := time.Date(lt.Year(), lt.Month(), lt.Day(), b/60, b%60, 0, 0, loc)
	if !end.After(lt) {
		end = end.AddDate(0, 0, 1)
	}
	return end, true
}
