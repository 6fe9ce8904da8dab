package notify

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/hestia-dev/hestia/internal/store"
)

// VAPIDPublicKey returns the application server key browsers subscribe
// with, creating the key pair on first use.
func (n *Notifier) VAPIDPublicKey(ctx context.Context) (string, error) {
	pub, _, err := n.vapid(ctx)
	return pub, err
}

func (n *Notifier) vapid(ctx context.Context) (pub, priv string, err error) {
	err = n.db.QueryRowContext(ctx, `SELECT public_key, private_key FROM vapid WHERE id = 1`).Scan(&pub, &priv)
	if err == nil {
		return pub, priv, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("reading VAPID keys: %w", err)
	}
	priv, pub, err = webpush.GenerateVAPIDKeys()
	if err != nil {
		return "", "", fmt.Errorf("generating VAPID keys: %w", err)
	}
	// Two processes may race on first start: the first insert wins and
	// both read it back.
	if _, err := n.db.ExecContext(ctx, `INSERT INTO vapid (id, public_key, private_key) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING`, pub, priv); err != nil {
		return "", "", fmt.Errorf("storing VAPID keys: %w", err)
	}
	err = n.db.QueryRowContext(ctx, `SELECT public_key, private_key FROM vapid WHERE id = 1`).Scan(&pub, &priv)
	return pub, priv, err
}

// Subscription is a browser's push subscription (PushSubscription.toJSON
// plus a device label).
type Subscription struct {
	ID       int64      `json:"id"`
	Endpoint string     `json:"endpoint"`
	Keys     Keys       `json:"keys"`
	Device   string     `json:"device,omitempty"`
	Created  time.Time  `json:"created_at"`
	LastOK   *time.Time `json:"last_ok,omitempty"`
	Failures int        `json:"failures"`
}

// Keys are the subscription's base64url keys.
type Keys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

func decodeKey(field, v string, size int) error {
	v = strings.TrimRight(v, "=")
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(v)
	}
	if err != nil {
		return &FieldError{field, "is not base64url"}
	}
	if len(b) != size {
		return &FieldError{field, fmt.Sprintf("must decode to %d bytes, got %d", size, len(b))}
	}
	if size == 65 && b[0] != 4 {
		return &FieldError{field, "is not an uncompressed P-256 point"}
	}
	return nil
}

// Subscribe stores (or refreshes) a subscription. The endpoint must be an
// https URL of a push service.
func (n *Notifier) Subscribe(ctx context.Context, s Subscription) (Subscription, error) {
	if len(s.Endpoint) > 2048 {
		return Subscription{}, &FieldError{"endpoint", "is longer than 2048 bytes"}
	}
	u, err := url.Parse(s.Endpoint)
	// Plain http only to a push service on this machine (loopback): a
	// remote endpoint must be https so the encrypted payload's metadata
	// and the VAPID token are not sent in the clear.
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname()))) {
		return Subscription{}, &FieldError{"endpoint", fmt.Sprintf("%q is not an https push service URL", s.Endpoint)}
	}
	if err := decodeKey("keys.p256dh", s.Keys.P256dh, 65); err != nil {
		return Subscription{}, err
	}
	if err := decodeKey("keys.auth", s.Keys.Auth, 16); err != nil {
		return Subscription{}, err
	}
	s.Device = clip(s.Device, 100)
	_, err = n.db.ExecContext(ctx, `INSERT INTO subscriptions (endpoint, p256dh, auth, device, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, device = excluded.device, failures = 0`,
		s.Endpoint, s.Keys.P256dh, s.Keys.Auth, s.Device, ms(n.now()))
	if err != nil {
		return Subscription{}, fmt.Errorf("storing push subscription: %w", err)
	}
	subs, err := n.Subscriptions(ctx)
	if err != nil {
		return Subscription{}, err
	}
	for _, x := range subs {
		if x.Endpoint == s.Endpoint {
			n.Kick()
			return x, nil
		}
	}
	return Subscription{}, errors.New("push subscription vanished while storing it")
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Unsubscribe removes a subscription by endpoint.
func (n *Notifier) Unsubscribe(ctx context.Context, endpoint string) error {
	res, err := n.db.ExecContext(ctx, `DELETE FROM subscriptions WHERE endpoint = ?`, endpoint)
	if err != nil {
		return fmt.Errorf("removing push subscription: %w", err)
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return fmt.Errorf("push subscription: %w", store.ErrNotFound)
	}
	return nil
}

// Subscriptions lists the stored subscriptions.
func (n *Notifier) Subscriptions(ctx context.Context) ([]Subscription, error) {
	rows, err := n.db.QueryContext(ctx, `SELECT id, endpoint, p256dh, auth, device, created_at, last_ok, failures FROM subscriptions ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing push subscriptions: %w", err)
	}
	defer rows.Close()
	out := []Subscription{}
	for rows.Next() {
		var s Subscription
		var created int64
		var ok sql.NullInt64
		if err := rows.Scan(&s.ID, &s.Endpoint, &s.Keys.P256dh, &s.Keys.Auth, &s.Device, &created, &ok, &s.Failures); err != nil {
			return nil, err
		}
		s.Created = time.UnixMilli(created).UTC()
		s.LastOK = fromMS(ok)
		out = append(out, s)
	}
	return out, rows.Err()
}

// Kick wakes the deliverer.
func (n *Notifier) Kick() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// Delivery limits.
const (
	MaxAttempts = 6
	firstRetry  = 30 * time.Second
	pollEvery   = time.Minute
	batch       = 20
)

// Run is the delivery worker: it pushes due notifications until ctx ends.
func (n *Notifier) Run(ctx context.Context) error {
	for {
		if _, err := n.DeliverDue(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("pushDeliver", "err", err)
		}
		wait := pollEvery
		var next sql.NullInt64
		if err := n.db.QueryRowContext(ctx, `SELECT min(next_attempt) FROM notifications WHERE push_state = 'pending'`).Scan(&next); err == nil && next.Valid {
			wait = min(max(time.UnixMilli(next.Int64).Sub(n.now()), 0), pollEvery)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-n.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// payload is what the service worker receives (decrypted).
type payload struct {
	ID     int64  `json:"id"`
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Body   string `json:"body,omitempty"`
	URL    string `json:"url,omitempty"`
	ChatID string `json:"chat_id,omitempty"`
}

// DeliverDue pushes every pending notification whose time has come and
// returns how many were delivered. A notification is delivered when one
// endpoint accepted it; endpoints answering 404 or 410 are gone and are
// pruned; other failures retry with backoff up to MaxAttempts.
func (n *Notifier) DeliverDue(ctx context.Context) (int, error) {
	now := n.now()
	rows, err := n.db.QueryContext(ctx, `SELECT `+cols+` FROM notifications WHERE push_state = 'pending' AND next_attempt <= ? ORDER BY id LIMIT ?`, ms(now), batch)
	if err != nil {
		return 0, fmt.Errorf("reading due notifications: %w", err)
	}
	var due []Notification
	for rows.Next() {
		x, err := scan(rows)
		if err != nil {
			rows.Close()
			return 0, err
		}
		due = append(due, x)
	}
	rows.Close()
	if len(due) == 0 {
		return 0, nil
	}
	subs, err := n.Subscriptions(ctx)
	if err != nil {
		return 0, err
	}
	pub, priv, err := n.vapid(ctx)
	if err != nil {
		return 0, err
	}
	delivered := 0
	for _, x := range due {
		if len(subs) == 0 {
			if _, err := n.db.ExecContext(ctx, `UPDATE notifications SET push_state = ? WHERE id = ?`, PushNoDevice, x.ID); err != nil {
				return delivered, err
			}
			continue
		}
		body, _ := json.Marshal(payload{ID: x.ID, Kind: x.Kind, Title: x.Title, Body: x.Body, URL: x.URL, ChatID: x.ChatID})
		var errs []string
		ok := false
		live := subs[:0:0]
		for _, s := range subs {
			status, err := n.send(ctx, body, s, pub, priv)
			switch {
			case err == nil && status >= 200 && status < 300:
				ok = true
				live = append(live, s)
				n.db.ExecContext(ctx, `UPDATE subscriptions SET last_ok = ?, failures = 0 WHERE id = ?`, ms(n.now()), s.ID)
			case err == nil && (status == 404 || status == 410):
				// RFC 8030 §7.3: the subscription is gone for good.
				n.log.Info("pushSubscriptionGone", "device", s.Device, "status", status)
				n.db.ExecContext(ctx, `DELETE FROM subscriptions WHERE id = ?`, s.ID)
			default:
				live = append(live, s)
				if err == nil {
					err = fmt.Errorf("push service answered %d", status)
				}
				errs = append(errs, err.Error())
				n.db.ExecContext(ctx, `UPDATE subscriptions SET failures = failures + 1 WHERE id = ?`, s.ID)
			}
		}
		subs = live
		if ok {
			delivered++
			_, err = n.db.ExecContext(ctx, `UPDATE notifications SET push_state = ?, attempts = attempts + 1, delivered_at = ?, last_error = '' WHERE id = ?`, PushDelivered, ms(n.now()), x.ID)
		} else if len(subs) == 0 {
			_, err = n.db.ExecContext(ctx, `UPDATE notifications SET push_state = ?, attempts = attempts + 1 WHERE id = ?`, PushNoDevice, x.ID)
		} else {
			attempts := x.Attempts + 1
			state := PushPending
			if attempts >= MaxAttempts {
				state = PushFailed
			}
			next := n.now().Add(firstRetry << (attempts - 1))
			_, err = n.db.ExecContext(ctx, `UPDATE notifications SET push_state = ?, attempts = ?, next_attempt = ?, last_error = ? WHERE id = ?`,
				state, attempts, ms(next), clip(strings.Join(errs, "; "), 500), x.ID)
		}
		if err != nil {
			return delivered, fmt.Errorf("recording delivery of notification %d: %w", x.ID, err)
		}
	}
	return delivered, nil
}

func (n *Notifier) send(ctx context.Context, body []byte, s Subscription, pub, priv string) (int, error) {
	resp, err := webpush.SendNotificationWithContext(ctx, body, &webpush.Subscription{Endpoint: s.Endpoint, Keys: webpush.Keys{Auth: s.Keys.Auth, P256dh: s.Keys.P256dh}},
		&webpush.Options{HTTPClient: n.opts.HTTP, Subscriber: n.opts.Subscriber, VAPIDPublicKey: pub, VAPIDPrivateKey: priv, TTL: 24 * 3600, Urgency: webpush.UrgencyNormal})
	if err != nil {
		return 0, fmt.Errorf("sending push: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
