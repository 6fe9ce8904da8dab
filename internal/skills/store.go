package skills

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the skills database: what was installed, the content hash the
// user accepted and the scan findings.
var Schema = store.Schema{Name: "skills", Migrations: []string{`
CREATE TABLE skills (
	name TEXT PRIMARY KEY,
	source TEXT NOT NULL DEFAULT '',
	hash TEXT NOT NULL,
	accepted_risk INTEGER NOT NULL DEFAULT 0,
	findings TEXT NOT NULL DEFAULT '[]',
	installed_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);`}}

// Errors callers handle.
var (
	// ErrFindings: the scan found something and the risk was not accepted.
	ErrFindings = errors.New("the skill scan found risky content")
	ErrExists   = errors.New("a skill with that name is already installed")
	ErrNotFound = errors.New("no such skill")
)

// Skill is one installed skill as loaded now.
type Skill struct {
	Meta
	Body     string    `json:"-"`
	Manifest *Manifest `json:"manifest,omitempty"`
	Dir      string    `json:"dir"`
	Source   string    `json:"source"`
	Hash     string    `json:"hash"`
	// Findings of the latest scan; AcceptedRisk says the user installed
	// (or re-accepted) this exact content anyway.
	Findings     []Finding `json:"findings"`
	AcceptedRisk bool      `json:"accepted_risk"`
	// Blocked says why the skill is not offered (changed since it was
	// accepted and the new scan found something, or it no longer parses).
	Blocked     string    `json:"blocked,omitempty"`
	InstalledAt time.Time `json:"installed_at"`
}

// Store keeps installed skills under one directory (DATA/skills).
type Store struct {
	dir string
	db  *store.DB
	now func() time.Time
	log *slog.Logger
}

// Open opens the skills database at dbPath for skills kept in dir.
func Open(ctx context.Context, dbPath, dir string, now func() time.Time, log *slog.Logger) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the skills folder: %w", err)
	}
	db, err := store.Open(ctx, dbPath, Schema)
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, db: db, now: now, log: log}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dir is where skills are installed.
func (s *Store) Dir() string { return s.dir }

// InstallOptions tune Install.
type InstallOptions struct {
	AcceptRisk bool
	// Fetch downloads URL sources (default: https, or http on loopback).
	Fetch Fetcher
}

// Install stages src (a folder, a SKILL.md file, a .tar.gz/.zip archive or
// an http(s) URL of one), checks and scans it, and moves it into place. On
// findings without AcceptRisk it returns them with ErrFindings and installs
// nothing.
func (s *Store) Install(ctx context.Context, src string, o InstallOptions) (*Skill, []Finding, error) {
	stage, err := os.MkdirTemp(s.dir, ".staging-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(stage)
	if err := populate(ctx, stage, src, o.Fetch); err != nil {
		return nil, nil, err
	}
	root, err := skillRoot(stage)
	if err != nil {
		return nil, nil, err
	}
	sk, err := load(root)
	if err != nil {
		return nil, nil, err
	}
	findings, err := Scan(root)
	if err != nil {
		return nil, nil, err
	}
	if len(findings) > 0 && !o.AcceptRisk {
		return nil, findings, fmt.Errorf("%w (%d findings); not installed — review them, then install with --accept-risk to install anyway", ErrFindings, len(findings))
	}
	dest := filepath.Join(s.dir, sk.Name)
	if _, err := os.Lstat(dest); err == nil {
		return nil, findings, fmt.Errorf("%w: %s (remove it first)", ErrExists, sk.Name)
	}
	var exists int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM skills WHERE name = ?`, sk.Name).Scan(&exists); err != nil {
		return nil, nil, err
	}
	if exists > 0 {
		return nil, findings, fmt.Errorf("%w: %s (remove it first)", ErrExists, sk.Name)
	}
	if err := os.Rename(root, dest); err != nil {
		return nil, nil, fmt.Errorf("moving the skill into place: %w", err)
	}
	hash, err := hashDir(dest)
	if err != nil {
		os.RemoveAll(dest)
		return nil, nil, err
	}
	fj, _ := json.Marshal(orNone(findings))
	now := s.now().UTC().Format(time.RFC3339Nano)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO skills (name, source, hash, accepted_risk, findings, installed_at, updated_at) VALUES (?,?,?,?,?,?,?)`,
		sk.Name, src, hash, len(findings) > 0, string(fj), now, now); err != nil {
		os.RemoveAll(dest)
		return nil, nil, fmt.Errorf("recording the skill: %w", err)
	}
	got, err := s.Get(ctx, sk.Name)
	return got, findings, err
}

func orNone(f []Finding) []Finding {
	if f == nil {
		return []Finding{}
	}
	return f
}

// skillRoot finds SKILL.md at the top of the staged tree or in its single
// top-level folder (archives usually have one).
func skillRoot(stage string) (string, error) {
	if _, err := os.Stat(filepath.Join(stage, "SKILL.md")); err == nil {
		return stage, nil
	}
	ents, err := os.ReadDir(stage)
	if err != nil {
		return "", err
	}
	if len(ents) == 1 && ents[0].IsDir() {
		sub := filepath.Join(stage, ents[0].Name())
		if _, err := os.Stat(filepath.Join(sub, "SKILL.md")); err == nil {
			return sub, nil
		}
	}
	return "", errors.New("no SKILL.md found at the top of the skill (or of its single folder)")
}

// load reads and checks a skill folder.
func load(dir string) (*Skill, error) {
	b, err := os.ReadFile(filepath.Join(dir, "SKILL.md"))
	if err != nil {
		return nil, fmt.Errorf("reading SKILL.md: %w", err)
	}
	meta, body, err := ParseSkillMD(b)
	if err != nil {
		return nil, err
	}
	sk := &Skill{Meta: meta, Body: body, Dir: dir}
	mb, err := os.ReadFile(filepath.Join(dir, "TOOLS.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading TOOLS.json: %w", err)
	default:
		if sk.Manifest, err = ParseManifest(mb); err != nil {
			return nil, err
		}
	}
	return sk, nil
}

// hashDir is a SHA-256 over every file's relative path and content.
func hashDir(dir string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		info, err := os.Lstat(f)
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			t, _ := os.Readlink(f)
			fmt.Fprintf(h, "link:%s\x00", t)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%d\x00", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type row struct {
	name, source, hash, findings, installed string
	accepted                                bool
}

// Get loads one installed skill, re-scanning it when its files changed
// since they were last accepted: a clean change is accepted, a change with
// findings blocks the skill until `hestia skills scan NAME --accept-risk`.
func (s *Store) Get(ctx context.Context, name string) (*Skill, error) {
	var r row
	err := s.db.QueryRowContext(ctx, `SELECT name, source, hash, accepted_risk, findings, installed_at FROM skills WHERE name = ?`, name).
		Scan(&r.name, &r.source, &r.hash, &r.accepted, &r.findings, &r.installed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	return s.check(ctx, r)
}

func (s *Store) check(ctx context.Context, r row) (*Skill, error) {
	dir := filepath.Join(s.dir, r.name)
	sk := &Skill{Meta: Meta{Name: r.name}, Dir: dir, Source: r.source, AcceptedRisk: r.accepted}
	sk.InstalledAt, _ = time.Parse(time.RFC3339Nano, r.installed)
	_ = json.Unmarshal([]byte(r.findings), &sk.Findings)
	hash, err := hashDir(dir)
	if err != nil {
		sk.Blocked = "its folder cannot be read: " + err.Error()
		return sk, nil
	}
	sk.Hash = hash
	loaded, lerr := load(dir)
	if lerr != nil {
		sk.Blocked = "it no longer loads: " + lerr.Error()
		return sk, nil
	}
	if loaded.Name != r.name {
		sk.Blocked = fmt.Sprintf("SKILL.md now says name %q", loaded.Name)
		return sk, nil
	}
	sk.Meta, sk.Body, sk.Manifest = loaded.Meta, loaded.Body, loaded.Manifest
	if hash == r.hash {
		return sk, nil
	}
	// Changed since it was accepted: scan again.
	findings, err := Scan(dir)
	if err != nil {
		sk.Blocked = "it changed and cannot be scanned: " + err.Error()
		return sk, nil
	}
	sk.Findings = orNone(findings)
	if len(findings) > 0 {
		sk.Blocked = fmt.Sprintf("it changed since it was installed and the scan found %d risky items; run `hestia skills scan %s` to review and --accept-risk to use it", len(findings), r.name)
		s.log.Warn("skill changed and is blocked", "skill", r.name, "findings", len(findings))
		return sk, nil
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE skills SET hash = ?, accepted_risk = 0, findings = '[]', updated_at = ? WHERE name = ?`, hash, s.now().UTC().Format(time.RFC3339Nano), r.name); err != nil {
		return nil, err
	}
	sk.AcceptedRisk = false
	return sk, nil
}

// List returns every installed skill (blocked ones included, with the
// reason), sorted by name. Folders placed under the skills directory by
// hand are adopted when they scan clean and listed as blocked otherwise.
func (s *Store) List(ctx context.Context) ([]*Skill, error) {
	if err := s.adopt(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT name, source, hash, accepted_risk, findings, installed_at FROM skills ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var rs []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.name, &r.source, &r.hash, &r.accepted, &r.findings, &r.installed); err != nil {
			rows.Close()
			return nil, err
		}
		rs = append(rs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []*Skill
	for _, r := range rs {
		sk, err := s.check(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, sk)
	}
	return out, nil
}

// adopt records hand-placed folders with an empty accepted hash, so check
// scans them before they are used.
func (s *Store) adopt(ctx context.Context) error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || !nameRE.MatchString(e.Name()) {
			continue
		}
		now := s.now().UTC().Format(time.RFC3339Nano)
		if _, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO skills (name, source, hash, installed_at, updated_at) VALUES (?, 'placed by hand', '', ?, ?)`, e.Name(), now, now); err != nil {
			return err
		}
	}
	return nil
}

// Remove uninstalls a skill.
func (s *Store) Remove(ctx context.Context, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM skills WHERE name = ?`, name)
	if err != nil {
		return err
	}
	n, _ := res.RowsAffected()
	dir := filepath.Join(s.dir, name)
	_, statErr := os.Lstat(dir)
	if n == 0 && statErr != nil {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return os.RemoveAll(dir)
}

// Rescan scans an installed skill again; with accept, its current content
// is accepted despite findings (the user reviewed them).
func (s *Store) Rescan(ctx context.Context, name string, accept bool) (*Skill, []Finding, error) {
	if _, err := s.Get(ctx, name); err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(s.dir, name)
	findings, err := Scan(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(findings) == 0 || accept {
		hash, err := hashDir(dir)
		if err != nil {
			return nil, nil, err
		}
		fj, _ := json.Marshal(orNone(findings))
		if _, err := s.db.ExecContext(ctx, `UPDATE skills SET hash = ?, accepted_risk = ?, findings = ?, updated_at = ? WHERE name = ?`,
			hash, len(findings) > 0, string(fj), s.now().UTC().Format(time.RFC3339Nano), name); err != nil {
			return nil, nil, err
		}
	}
	sk, err := s.Get(ctx, name)
	return sk, findings, err
}

// maxIndexed bounds the skills listed in the system prompt.
const maxIndexed = 50

// Index is the system prompt's list of usable skills ("" with none).
func (s *Store) Index(ctx context.Context) string {
	list, err := s.List(ctx)
	if err != nil {
		s.log.Warn("listing skills for the prompt", "err", err)
		return ""
	}
	var b strings.Builder
	n := 0
	for _, sk := range list {
		if sk.Blocked != "" {
			continue
		}
		if n == 0 {
			b.WriteString("Installed skills (call skill_load with the name before following one; while a skill is loaded only the tools its manifest allows can run):\n")
		}
		if n++; n > maxIndexed {
			b.WriteString("- … more skills not listed\n")
			break
		}
		fmt.Fprintf(&b, "- %s: %s\n", sk.Name, sk.Description)
	}
	return strings.TrimSpace(b.String())
}
