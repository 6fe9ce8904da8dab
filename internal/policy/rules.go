package policy

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Rule is a persistent trust rule.
type Rule struct {
	ID        string    `json:"id"`
	Tool      string    `json:"tool"`
	Pattern   string    `json:"pattern"`
	PathScope string    `json:"path_scope"`
	Decision  Decision  `json:"decision"`
	Priority  int       `json:"priority"`
	Note      string    `json:"note"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Validate checks a rule's fields and returns an error naming the bad one.
func (r *Rule) Validate() error {
	r.Tool = strings.TrimSpace(r.Tool)
	switch {
	case r.Tool == "":
		return errors.New("tool is required (a tool name, a prefix ending in *, or *)")
	case len(r.Tool) > 128:
		return errors.New("tool is longer than 128 characters")
	case strings.Contains(strings.TrimSuffix(r.Tool, "*"), "*"):
		return fmt.Errorf("tool %q may only have * at the end", r.Tool)
	case !r.Decision.valid():
		return fmt.Errorf("decision %q is not one of allow, gate, deny", r.Decision)
	case len(r.Pattern) > 1024:
		return errors.New("pattern is longer than 1024 characters")
	case r.Priority < -1000000 || r.Priority > 1000000:
		return fmt.Errorf("priority %d is outside -1000000..1000000", r.Priority)
	case len(r.Note) > 1000:
		return errors.New("note is longer than 1000 characters")
	}
	if r.PathScope != "" {
		if !filepath.IsAbs(r.PathScope) {
			return fmt.Errorf("path_scope %q must be an absolute path", r.PathScope)
		}
		r.PathScope = filepath.Clean(r.PathScope)
	}
	return nil
}

func (r *Rule) matchesTool(name string) bool {
	if r.Tool == "*" {
		return true
	}
	if p, ok := strings.CutSuffix(r.Tool, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return r.Tool == name
}

func (r *Rule) matches(tool, target string, paths []string) bool {
	if !r.matchesTool(tool) {
		return false
	}
	if r.Pattern != "" && !Glob(r.Pattern, target) {
		return false
	}
	if r.PathScope != "" {
		if len(paths) == 0 {
			return false
		}
		for _, p := range paths {
			if !within(filepath.Clean(p), r.PathScope) {
				return false
			}
		}
	}
	return true
}

func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// Glob matches s against pattern where * matches any run of characters
// (including /) and ? exactly one character. Everything else is literal.
func Glob(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi, mark = star+1, mark+1
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// RuleStore persists rules and keeps a sorted in-memory copy for Decide.
type RuleStore struct {
	db    *store.DB
	clock func() time.Time
	log   *slog.Logger

	mu     sync.RWMutex // guards cache
	cache  []Rule       // sorted: priority desc, decision strength desc
	loaded bool
}

// NewRuleStore opens the rule store on db (opened with Schema).
func NewRuleStore(ctx context.Context, db *store.DB, clock func() time.Time, log *slog.Logger) (*RuleStore, error) {
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &RuleStore{db: db, clock: clock, log: log}
	if err := s.reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *RuleStore) reload(ctx context.Context) error {
	rules, err := s.query(ctx)
	if err != nil {
		return err
	}
	sort.SliceStable(rules, func(i, j int) bool {
		if rules[i].Priority != rules[j].Priority {
			return rules[i].Priority > rules[j].Priority
		}
		return rules[i].Decision.strength() > rules[j].Decision.strength()
	})
	s.mu.Lock()
	s.cache, s.loaded = rules, true
	s.mu.Unlock()
	return nil
}

func (s *RuleStore) match(ctx context.Context, tool, target string, paths []string) *Rule {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range s.cache {
		if s.cache[i].matches(tool, target, paths) {
			return &s.cache[i]
		}
	}
	return nil
}

func (s *RuleStore) query(ctx context.Context) ([]Rule, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, tool, pattern, path_scope, decision, priority, note, created_at, updated_at FROM rules ORDER BY priority DESC, created_at`)
	if err != nil {
		return nil, fmt.Errorf("listing policy rules: %w", err)
	}
	defer rows.Close()
	var out []Rule
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing policy rules: %w", err)
	}
	return out, nil
}

type scanner interface{ Scan(...any) error }

func scanRule(sc scanner) (Rule, error) {
	var r Rule
	var c, u string
	if err := sc.Scan(&r.ID, &r.Tool, &r.Pattern, &r.PathScope, &r.Decision, &r.Priority, &r.Note, &c, &u); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Rule{}, store.ErrNotFound
		}
		return Rule{}, fmt.Errorf("reading policy rule: %w", err)
	}
	r.CreatedAt, _ = time.Parse(time.RFC3339Nano, c)
	r.UpdatedAt, _ = time.Parse(time.RFC3339Nano, u)
	return r, nil
}

// List returns every rule, highest priority first.
func (s *RuleStore) List(ctx context.Context) ([]Rule, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]Rule(nil), s.cache...), nil
}

// Get returns one rule.
func (s *RuleStore) Get(ctx context.Context, id string) (Rule, error) {
	row := s.db.QueryRowContext(ctx, `SELECT id, tool, pattern, path_scope, decision, priority, note, created_at, updated_at FROM rules WHERE id = ?`, id)
	r, err := scanRule(row)
	if errors.Is(err, store.ErrNotFound) {
		return Rule{}, fmt.Errorf("policy rule %s: %w", id, store.ErrNotFound)
	}
	return r, err
}

// Create validates and stores a new rule.
func (s *RuleStore) Create(ctx context.Context, r Rule) (Rule, error) {
	if err := r.Validate(); err != nil {
		return Rule{}, err
	}
	r.ID = newID("r_")
	now := s.clock().UTC()
	r.CreatedAt, r.UpdatedAt = now, now
	_, err := s.db.ExecContext(ctx, `INSERT INTO rules (id, tool, pattern, path_scope, decision, priority, note, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)`,
		r.ID, r.Tool, r.Pattern, r.PathScope, string(r.Decision), r.Priority, r.Note, now.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	if err != nil {
		return Rule{}, fmt.Errorf("storing policy rule: %w", err)
	}
	return r, s.reload(ctx)
}

// Update replaces the fields of an existing rule.
func (s *RuleStore) Update(ctx context.Context, id string, r Rule) (Rule, error) {
	if err := r.Validate(); err != nil {
		return Rule{}, err
	}
	old, err := s.Get(ctx, id)
	if err != nil {
		return Rule{}, err
	}
	r.ID, r.CreatedAt, r.UpdatedAt = id, old.CreatedAt, s.clock().UTC()
	_, err = s.db.ExecContext(ctx, `UPDATE rules SET tool=?, pattern=?, path_scope=?, decision=?, priority=?, note=?, updated_at=? WHERE id=?`,
		r.Tool, r.Pattern, r.PathScope, string(r.Decision), r.Priority, r.Note, r.UpdatedAt.Format(time.RFC3339Nano), id)
	if err != nil {
		return Rule{}, fmt.Errorf("updating policy rule %s: %w", id, err)
	}
	return r, s.reload(ctx)
}

// Delete removes a rule.
func (s *RuleStore) Delete(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM rules WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("deleting policy rule %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("policy rule %s: %w", id, store.ErrNotFound)
	}
	return s.reload(ctx)
}

func newID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
