// Package devices replaces the single shared token with per-device
// credentials. Every paired browser, CLI or channel gets its own random
// token (only its SHA-256 is stored; the raw value is shown once), a name,
// a scope set (chat, approve, read, admin) and a last-seen time. The local
// token file stays the admin credential of the machine itself.
//
// The Registry implements server.Authenticator: it identifies the caller of
// every /api and /v1 request, checks the route's scope (RequiredScope) and
// tracks the caller's open requests so that revoking a device ends its
// event streams at once.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// per-device credentials (`devices.db`): SHA-256 of each device token, name, kind, scopes
// `chat`/`approve`/`read`/`admin`, last seen, revocation that cancels the device's open requests
// (SSE streams end at once); the route → scope map, and `Require` for handlers whose scope depends
// on the body (fails closed without an identity); the `server.Authenticator` behind `/api` and
// `/v1`; QR rendering for pairing links; Sources list tokenless clients beside them (Telegram
// users from config, `managed`, not revocable there); every write request of a paired device is
// audited as `device.request` with its id and name.
package devices

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/server"
	"github.com/hestia-dev/hestia/internal/store"
)

// Scope is one permission a device holds.
type Scope string

// Scopes. Admin implies every other scope.
const (
	Chat    Scope = "chat"    // start turns, create and edit chats, use the /v1 gateway
	Approve Scope = "approve" // decide approvals, set a chat's temporary mode
	Read    Scope = "read"    // every GET
	Admin   Scope = "admin"   // devices, pairing, policy rules, budgets
)

// AllScopes lists the scopes in display order.
var AllScopes = []Scope{Chat, Approve, Read, Admin}

// DefaultScopes are what a paired phone or browser gets unless told
// otherwise: everything but administration.
var DefaultScopes = []Scope{Chat, Approve, Read}

// Kinds of device.
const (
	KindBrowser  = "browser"
	KindCLI      = "cli"
	KindChannel  = "channel"
	KindTelegram = "telegram"
)

// MaxName bounds a device name (characters).
const MaxName = 80

// ErrRevoked is the cause given to a revoked device's open requests.
var ErrRevoked = errors.New("device authorization revoked")

// ParseScopes validates scope names; an empty list yields DefaultScopes.
// The result is deduplicated and in AllScopes order.
func ParseScopes(names []string) ([]Scope, error) {
	if len(names) == 0 {
		return slices.Clone(DefaultScopes), nil
	}
	var out []Scope
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		s := Scope(n)
		if !slices.Contains(AllScopes, s) {
			return nil, fmt.Errorf("unknown scope %q (allowed: chat, approve, read, admin)", n)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no scope given (allowed: chat, approve, read, admin)")
	}
	slices.SortFunc(out, func(a, b Scope) int { return slices.Index(AllScopes, a) - slices.Index(AllScopes, b) })
	return out, nil
}

// Has reports whether scopes grant s (admin grants everything).
func Has(scopes []Scope, s Scope) bool {
	return slices.Contains(scopes, s) || slices.Contains(scopes, Admin)
}

// Device is one paired client.
type Device struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	Scopes     []Scope    `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastSeenAt *time.Time `json:"last_seen_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	// Managed names where a device listed from a Source is configured
	// ("config" for Telegram users); such a device has no token here and
	// is not revoked through the registry.
	Managed string `json:"managed,omitempty"`
}

// Source lists clients that reach the assistant without a device token
// (Telegram users, allowed in config), so they show beside paired devices.
type Source func(ctx context.Context) ([]Device, error)

// ErrManaged is returned when revoking a device that a Source lists.
var ErrManaged = errors.New("device is managed in config")

// AuditFunc records an audit event (the daemon's audit log).
type AuditFunc func(ctx context.Context, typ, summary string, data any)

// Identity is who made a request; handlers read it with FromContext.
type Identity struct {
	// DeviceID is empty for the local admin token.
	DeviceID string
	Name     string
	Scopes   []Scope
}

// Local reports whether the caller used the local admin token.
func (i Identity) Local() bool { return i.DeviceID == "" }

type ctxKey struct{}

// FromContext returns the identity of the request's caller.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// WithIdentity returns ctx carrying id (tests and in-process callers).
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// Schema is the devices database.
var Schema = store.Schema{Name: "devices", Migrations: []string{`
CREATE TABLE devices (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	kind TEXT NOT NULL,
	token_hash TEXT NOT NULL UNIQUE,
	scopes TEXT NOT NULL,
	created_at TEXT NOT NULL,
	last_seen_at TEXT,
	revoked_at TEXT
);`}}

// lastSeenEvery bounds last-seen writes: a busy client would otherwise
// write the database on every request.
const lastSeenEvery = 30 * time.Second

// pairIntentTTL matches the server's pairing code lifetime; intents of
// codes never redeemed are dropped after it.
const pairIntentTTL = 5 * time.Minute

// Registry is the device store plus the live state authentication needs.
type Registry struct {
	db    *store.DB
	local authtoken.Token
	clock func() time.Time
	log   *slog.Logger

	mu      sync.Mutex // guards the fields below
	sources []Source
	audit   AuditFunc
	byHash  map[string]*Device
	live    map[string]map[*liveReq]struct{} // device id → open requests
	intents map[string]pairIntent            // pairing code → device to create
}

type liveReq struct{ cancel context.CancelCauseFunc }

type pairIntent struct {
	name    string
	scopes  []Scope
	expires time.Time
}

// Options configure a Registry.
type Options struct {
	DB     *store.DB // opened with Schema
	Local  authtoken.Token
	Clock  func() time.Time
	Logger *slog.Logger
	// Audit, when set, records every write request a paired device makes
	// (device.request: who, method, path), attributing HTTP actions.
	Audit AuditFunc
}

// Open loads the active devices.
func Open(ctx context.Context, o Options) (*Registry, error) {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Registry{db: o.DB, local: o.Local, clock: o.Clock, log: o.Logger, audit: o.Audit,
		byHash: map[string]*Device{}, live: map[string]map[*liveReq]struct{}{}, intents: map[string]pairIntent{}}
	rows, err := o.DB.QueryContext(ctx, `SELECT id, name, kind, token_hash, scopes, created_at, last_seen_at, revoked_at FROM devices WHERE revoked_at IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("loading devices: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, hash, err := scanDevice(rows)
		if err != nil {
			return nil, err
		}
		r.byHash[hash] = &d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("loading devices: %w", err)
	}
	return r, nil
}

type scanner interface{ Scan(...any) error }

func scanDevice(s scanner) (Device, string, error) {
	var d Device
	var hash, scopes, created string
	var seen, revoked sql.NullString
	if err := s.Scan(&d.ID, &d.Name, &d.Kind, &hash, &scopes, &created, &seen, &revoked); err != nil {
		return Device{}, "", fmt.Errorf("reading device: %w", err)
	}
	for _, sc := range strings.Split(scopes, ",") {
		if sc != "" {
			d.Scopes = append(d.Scopes, Scope(sc))
		}
	}
	d.CreatedAt = parseTS(created)
	if seen.Valid {
		t := parseTS(seen.String)
		d.LastSeenAt = &t
	}
	if revoked.Valid {
		t := parseTS(revoked.String)
		d.RevokedAt = &t
	}
	return d, hash, nil
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func hashToken(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(s[:])
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TokenPrefix marks device tokens so a leaked one is recognisable.
const TokenPrefix = "hd_"

func cleanName(name string) (string, error) {
	name = strings.Join(strings.Fields(name), " ")
	if name == "" {
		return "", errors.New("device name is empty")
	}
	if n := utf8.RuneCountInString(name); n > MaxName {
		return "", fmt.Errorf("device name is %d characters; at most %d allowed", n, MaxName)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "", errors.New("device name contains control characters")
		}
	}
	return name, nil
}

// Create adds a device and returns it with its raw token, which is never
// stored and cannot be shown again.
func (r *Registry) Create(ctx context.Context, name, kind string, scopes []Scope) (Device, string, error) {
	name, err := cleanName(name)
	if err != nil {
		return Device{}, "", err
	}
	if len(scopes) == 0 {
		return Device{}, "", errors.New("a device needs at least one scope")
	}
	for _, s := range scopes {
		if !slices.Contains(AllScopes, s) {
			return Device{}, "", fmt.Errorf("unknown scope %q", s)
		}
	}
	switch kind {
	case KindBrowser, KindCLI, KindChannel, KindTelegram:
	default:
		return Device{}, "", fmt.Errorf("unknown device kind %q", kind)
	}
	tok := TokenPrefix + randHex(32)
	hash := hashToken(tok)
	d := Device{ID: "d_" + randHex(8), Name: name, Kind: kind, Scopes: slices.Clone(scopes), CreatedAt: r.clock().UTC()}
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	if _, err := r.db.ExecContext(ctx, `INSERT INTO devices (id, name, kind, token_hash, scopes, created_at) VALUES (?,?,?,?,?,?)`,
		d.ID, d.Name, d.Kind, hash, strings.Join(names, ","), ts(d.CreatedAt)); err != nil {
		return Device{}, "", fmt.Errorf("storing device: %w", err)
	}
	r.mu.Lock()
	r.byHash[hash] = &d
	r.mu.Unlock()
	r.log.Info("device created", "device", d.ID, "name", d.Name, "kind", d.Kind)
	return d, tok, nil
}

// AddSource lists the devices of src after the paired ones.
func (r *Registry) AddSource(src Source) {
	r.mu.Lock()
	r.sources = append(r.sources, src)
	r.mu.Unlock()
}

// SetAudit installs the audit recorder (the audit log opens after the
// registry).
func (r *Registry) SetAudit(fn AuditFunc) {
	r.mu.Lock()
	r.audit = fn
	r.mu.Unlock()
}

// managed returns the Source-listed device with id, if any.
func (r *Registry) managed(ctx context.Context, id string) (Device, bool, error) {
	r.mu.Lock()
	srcs := append([]Source(nil), r.sources...)
	r.mu.Unlock()
	for _, src := range srcs {
		list, err := src(ctx)
		if err != nil {
			return Device{}, false, err
		}
		for _, d := range list {
			if d.ID == id {
				return d, true, nil
			}
		}
	}
	return Device{}, false, nil
}

// List returns every paired device, revoked ones included, newest first,
// then the devices of each Source.
func (r *Registry) List(ctx context.Context) ([]Device, error) {
	out, err := r.listPaired(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	srcs := append([]Source(nil), r.sources...)
	r.mu.Unlock()
	for _, src := range srcs {
		list, err := src(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing channel devices: %w", err)
		}
		out = append(out, list...)
	}
	return out, nil
}

func (r *Registry) listPaired(ctx context.Context) ([]Device, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT id, name, kind, token_hash, scopes, created_at, last_seen_at, revoked_at FROM devices ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("listing devices: %w", err)
	}
	defer rows.Close()
	out := []Device{}
	for rows.Next() {
		d, _, err := scanDevice(rows)
		if err != nil {
			return nil, err
		}
		// The in-memory last-seen is newer than the throttled row.
		r.mu.Lock()
		for _, m := range r.byHash {
			if m.ID == d.ID && m.LastSeenAt != nil {
				t := *m.LastSeenAt
				d.LastSeenAt = &t
			}
		}
		r.mu.Unlock()
		out = append(out, d)
	}
	return out, rows.Err()
}

// Get returns one device.
func (r *Registry) Get(ctx context.Context, id string) (Device, error) {
	row := r.db.QueryRowContext(ctx, `SELECT id, name, kind, token_hash, scopes, created_at, last_seen_at, revoked_at FROM devices WHERE id = ?`, id)
	d, _, err := scanDevice(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Device{}, fmt.Errorf("device %s: %w", id, store.ErrNotFound)
	}
	return d, err
}

// Revoke withdraws a device's token at once: its next request gets 401 and
// every request it has open (event streams, waiting turns) is cancelled.
// Revoking an already revoked device returns it unchanged.
func (r *Registry) Revoke(ctx context.Context, id string) (Device, error) {
	d, err := r.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		if m, ok, merr := r.managed(ctx, id); merr == nil && ok {
			return m, fmt.Errorf("%w: %s (%s) is allowed by config.toml; remove it there and restart", ErrManaged, m.Name, m.ID)
		}
	}
	if err != nil {
		return Device{}, err
	}
	if d.RevokedAt != nil {
		return d, nil
	}
	now := r.clock().UTC()
	if _, err := r.db.ExecContext(ctx, `UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, ts(now), id); err != nil {
		return Device{}, fmt.Errorf("revoking device %s: %w", id, err)
	}
	d.RevokedAt = &now
	r.mu.Lock()
	for h, m := range r.byHash {
		if m.ID == id {
			delete(r.byHash, h)
		}
	}
	open := r.live[id]
	delete(r.live, id)
	r.mu.Unlock()
	for lr := range open {
		lr.cancel(ErrRevoked)
	}
	r.log.Info("device revoked", "device", id, "name", d.Name, "closedRequests", len(open))
	return d, nil
}

// Lookup identifies a device token without touching last-seen; ok is false
// for unknown or revoked tokens.
func (r *Registry) Lookup(tok string) (Device, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.byHash[hashToken(tok)]
	if !ok {
		return Device{}, false
	}
	return *d, true
}

// Authenticate implements server.Authenticator.
func (r *Registry) Authenticate(req *http.Request, cred string) (context.Context, func(), error) {
	need := RequiredScope(req.Method, req.URL.Path)
	if r.local.Equal(cred) {
		id := Identity{Name: "local", Scopes: []Scope{Admin}}
		return WithIdentity(req.Context(), id), func() {}, nil
	}
	if !strings.HasPrefix(cred, TokenPrefix) {
		return nil, nil, errors.New("unknown credential")
	}
	hash := hashToken(cred)
	now := r.clock().UTC()
	r.mu.Lock()
	d, ok := r.byHash[hash]
	if !ok {
		r.mu.Unlock()
		return nil, nil, errors.New("unknown credential")
	}
	dev := *d
	touch := d.LastSeenAt == nil || now.Sub(*d.LastSeenAt) >= lastSeenEvery
	if touch {
		d.LastSeenAt = &now
	}
	if !Has(dev.Scopes, need) {
		r.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: device %q lacks the %s scope for %s %s", server.ErrForbidden, dev.Name, need, req.Method, req.URL.Path)
	}
	ctx, cancel := context.WithCancelCause(WithIdentity(req.Context(), Identity{DeviceID: dev.ID, Name: dev.Name, Scopes: dev.Scopes}))
	audit := r.audit
	lr := &liveReq{cancel: cancel}
	if r.live[dev.ID] == nil {
		r.live[dev.ID] = map[*liveReq]struct{}{}
	}
	r.live[dev.ID][lr] = struct{}{}
	r.mu.Unlock()
	if touch {
		if _, err := r.db.ExecContext(req.Context(), `UPDATE devices SET last_seen_at = ? WHERE id = ?`, ts(now), dev.ID); err != nil {
			r.log.Warn("recording device last-seen", "device", dev.ID, "err", err)
		}
	}
	if audit != nil && writeMethod(req.Method) {
		// The path only: ids, never the query string or the body.
		audit(ctx, "device.request", fmt.Sprintf("%s %s by device %q", req.Method, req.URL.Path, dev.Name),
			map[string]any{"device_id": dev.ID, "device_name": dev.Name, "method": req.Method, "path": req.URL.Path})
	}
	release := func() {
		r.mu.Lock()
		if m := r.live[dev.ID]; m != nil {
			delete(m, lr)
			if len(m) == 0 {
				delete(r.live, dev.ID)
			}
		}
		r.mu.Unlock()
		cancel(nil)
	}
	return ctx, release, nil
}

// OpenRequests reports how many requests a device has in flight.
func (r *Registry) OpenRequests(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.live[id])
}

// PairCreated implements server.Authenticator: it remembers the name and
// scopes of the device the code will pair.
func (r *Registry) PairCreated(ctx context.Context, code string, req server.PairRequest) error {
	scopes, err := ParseScopes(req.Scopes)
	if err != nil {
		return fmt.Errorf("%w: %v", server.ErrInvalidPairing, err)
	}
	name := req.Name
	if strings.TrimSpace(name) == "" {
		name = "paired device " + r.clock().Local().Format("2006-01-02 15:04")
	}
	if name, err = cleanName(name); err != nil {
		return fmt.Errorf("%w: %v", server.ErrInvalidPairing, err)
	}
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for c, in := range r.intents {
		if !now.Before(in.expires) {
			delete(r.intents, c)
		}
	}
	r.intents[code] = pairIntent{name: name, scopes: scopes, expires: now.Add(pairIntentTTL)}
	return nil
}

// Paired implements server.Authenticator: the redeemed code becomes a
// device and its token is returned.
func (r *Registry) Paired(ctx context.Context, code string) (string, error) {
	r.mu.Lock()
	in, ok := r.intents[code]
	delete(r.intents, code)
	r.mu.Unlock()
	if !ok {
		in = pairIntent{name: "paired device " + r.clock().Local().Format("2006-01-02 15:04"), scopes: slices.Clone(DefaultScopes)}
	}
	_, tok, err := r.Create(ctx, in.name, KindBrowser, in.scopes)
	return tok, err
}

var _ server.Authenticator = (*Registry)(nil)

// writeMethod reports whether method changes state (and so is audited).
func writeMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}
