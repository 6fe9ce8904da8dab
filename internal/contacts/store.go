// Package contacts mirrors the user's address books (vdir folders of .vcf
// files, vCard 3.0 and 4.0) into contacts.db, merges the cards of one
// person across books (same email address or phone number), and resolves
// names to recipients with the evidence behind each candidate: the card,
// and how often and how recently the address was mailed (from the mail
// mirror, through a function the wiring passes in).
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `contacts/contacttools`, `contacts/cardsync` too:
//
// the contacts index (`contacts.db`) over vdir folders of `.vcf` (vCard 3.0/4.0 via go-vcard) and
// CardDAV accounts (`[[contacts.carddav]]`, discovered with go-webdav's carddav client and
// mirrored read-only by `davmirror` into `DATA/contacts/carddav/<account>/<book>`); cards of one
// person merged across books by email or phone; `resolve_recipient` ranks candidates from cards
// and mail correspondents (`mail.Store.Correspondents`: sent/received counts, last contact) and
// reports `ambiguous` instead of guessing; `contacts_search` (cards first, then people seen in
// mail: a copy of `mail.Store.RecentCorrespondents` in `contacts.db`, refreshed on sync, no-reply
// senders left out). `mail_send`/`mail_schedule` refuse bare names and point the model at
// `resolve_recipient`. A search that is a phone number compares digits in any spelling (with or
// without country code and trunk 0; no default region, so national numbers get no country code).
package contacts

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is contacts.db's schema.
var Schema = store.Schema{Name: "contacts", Migrations: []string{`
CREATE TABLE books (
	id        INTEGER PRIMARY KEY,
	name      TEXT NOT NULL UNIQUE,
	path      TEXT NOT NULL,
	read_only INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE files (
	id      INTEGER PRIMARY KEY,
	book_id INTEGER NOT NULL REFERENCES books(id) ON DELETE CASCADE,
	name    TEXT NOT NULL,
	mtime   INTEGER NOT NULL,
	size    INTEGER NOT NULL,
	error   TEXT NOT NULL DEFAULT '',
	UNIQUE (book_id, name)
);
CREATE TABLE cards (
	id        INTEGER PRIMARY KEY,
	file_id   INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
	book_id   INTEGER NOT NULL REFERENCES books(id) ON DELETE CASCADE,
	uid       TEXT NOT NULL DEFAULT '',
	name      TEXT NOT NULL DEFAULT '',
	nicknames TEXT NOT NULL DEFAULT '',
	org       TEXT NOT NULL DEFAULT '',
	emails    TEXT NOT NULL DEFAULT '',
	names     TEXT NOT NULL DEFAULT '',
	card      TEXT NOT NULL
);
CREATE INDEX cards_file ON cards(file_id);
CREATE TABLE card_keys (
	key     TEXT NOT NULL,
	card_id INTEGER NOT NULL REFERENCES cards(id) ON DELETE CASCADE,
	PRIMARY KEY (key, card_id)
) WITHOUT ROWID;
CREATE INDEX card_keys_card ON card_keys(card_id);
CREATE VIRTUAL TABLE cards_fts USING fts5(
	names, nicknames, org, emails,
	content='cards', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER cards_ai AFTER INSERT ON cards BEGIN
	INSERT INTO cards_fts(rowid, names, nicknames, org, emails) VALUES (new.id, new.names, new.nicknames, new.org, new.emails);
END;
CREATE TRIGGER cards_ad AFTER DELETE ON cards BEGIN
	INSERT INTO cards_fts(cards_fts, rowid, names, nicknames, org, emails) VALUES ('delete', old.id, old.names, old.nicknames, old.org, old.emails);
END;
`, `
-- People seen in mail (copied from the mail mirror by RefreshCorrespondents;
-- never written to an address book).
CREATE TABLE correspondents (
	id       INTEGER PRIMARY KEY,
	address  TEXT NOT NULL UNIQUE,
	name     TEXT NOT NULL DEFAULT '',
	sent     INTEGER NOT NULL DEFAULT 0,
	received INTEGER NOT NULL DEFAULT 0,
	last     INTEGER NOT NULL DEFAULT 0
);
CREATE VIRTUAL TABLE correspondents_fts USING fts5(
	name, address,
	content='correspondents', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER correspondents_ai AFTER INSERT ON correspondents BEGIN
	INSERT INTO correspondents_fts(rowid, name, address) VALUES (new.id, new.name, new.address);
END;
CREATE TRIGGER correspondents_ad AFTER DELETE ON correspondents BEGIN
	INSERT INTO correspondents_fts(correspondents_fts, rowid, name, address) VALUES ('delete', old.id, old.name, old.address);
END;
`,
	// The card's phone numbers as written, one a line, so that a search
	// can compare them by digits in any spelling (phoneMatch).
	`ALTER TABLE cards ADD COLUMN phones TEXT NOT NULL DEFAULT '';
UPDATE cards SET phones = coalesce((SELECT group_concat(value, char(10)) FROM json_each(card, '$.phones')), '');
`}}

// Store is the contacts index.
type Store struct {
	db  *store.DB
	log *slog.Logger
}

// Open opens (creating and migrating) contacts.db.
func Open(ctx context.Context, path string, log *slog.Logger) (*Store, error) {
	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{db: db, log: log}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// ErrBadQuery marks unanswerable queries.
var ErrBadQuery = errors.New("bad contacts query")

// Source is one vdir address book.
type Source struct {
	Name     string
	Path     string
	ReadOnly bool
}

// Skip names a file that could not be indexed.
type Skip struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// SyncStats reports one reconcile.
type SyncStats struct {
	Book      string `json:"book"`
	Files     int    `json:"files"`
	Added     int    `json:"added"`
	Updated   int    `json:"updated"`
	Removed   int    `json:"removed"`
	Unchanged int    `json:"unchanged"`
	Cards     int    `json:"cards"`
	Skipped   []Skip `json:"skipped,omitempty"`
	// Mirror says what the CardDAV mirror pass did for a book mirrored
	// from a server ("unchanged", "incremental: 1 fetched, 0 removed").
	Mirror string `json:"mirror,omitempty"`
	// Kept counts cards of files that broke since they were indexed:
	// their last good version stays searchable until the file is fixed.
	Kept int `json:"kept,omitempty"`
}

// Books lists known address books (name → path) for re-syncs.
func (s *Store) Books(ctx context.Context) ([]Source, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, path, read_only FROM books ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("listing address books: %w", err)
	}
	defer rows.Close()
	var out []Source
	for rows.Next() {
		var b Source
		if err := rows.Scan(&b.Name, &b.Path, &b.ReadOnly); err != nil {
			return nil, fmt.Errorf("listing address books: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// Sync reconciles the index with a vdir folder of .vcf files: changed
// files are re-read, removed ones dropped, broken ones skipped with a named
// reason. A file that breaks after it was indexed keeps its last good
// cards (never a half-read version) until it is fixed or removed.
func (s *Store) Sync(ctx context.Context, src Source) (SyncStats, error) {
	st := SyncStats{Book: src.Name}
	if src.Name == "" {
		return st, fmt.Errorf("address book %s has no name", src.Path)
	}
	ents, err := os.ReadDir(src.Path)
	if err != nil {
		return st, fmt.Errorf("reading address book folder %s: %w", src.Path, err)
	}
	var bookID int64
	if err := s.db.QueryRowContext(ctx, `INSERT INTO books(name, path, read_only) VALUES (?, ?, ?)
		ON CONFLICT(name) DO UPDATE SET path = excluded.path, read_only = excluded.read_only RETURNING id`,
		src.Name, src.Path, src.ReadOnly).Scan(&bookID); err != nil {
		return st, fmt.Errorf("registering address book %q: %w", src.Name, err)
	}
	type known struct{ id, mtime, size int64 }
	have := map[string]known{}
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, mtime, size FROM files WHERE book_id = ?`, bookID)
	if err != nil {
		return st, fmt.Errorf("listing indexed files: %w", err)
	}
	for rows.Next() {
		var k known
		var name string
		if err := rows.Scan(&k.id, &name, &k.mtime, &k.size); err != nil {
			rows.Close()
			return st, err
		}
		have[name] = k
	}
	rows.Close()
	type todo struct {
		name        string
		mtime, size int64
		cards       []Card
		err         error
	}
	var work []todo
	seen := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(strings.ToLower(name), ".vcf") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		st.Files++
		seen[name] = true
		k, ok := have[name]
		switch {
		case !ok:
			st.Added++
		case k.mtime != fi.ModTime().UnixNano() || k.size != fi.Size():
			st.Updated++
		default:
			st.Unchanged++
			continue
		}
		t := todo{name: name, mtime: fi.ModTime().UnixNano(), size: fi.Size()}
		if fi.Size() > MaxFileBytes {
			t.err = fmt.Errorf("%w: file is %d bytes, the limit is %d", ErrMalformed, fi.Size(), MaxFileBytes)
		} else if data, err := os.ReadFile(filepath.Join(src.Path, name)); err != nil {
			t.err = err
		} else {
			t.cards, t.err = ParseVCF(bytes.NewReader(data))
		}
		work = append(work, t)
	}
	var gone []int64
	for name, k := range have {
		if !seen[name] {
			gone = append(gone, k.id)
			st.Removed++
		}
	}
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, id := range gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM files WHERE id = ?`, id); err != nil {
				return fmt.Errorf("dropping removed file: %w", err)
			}
		}
		for _, t := range work {
			reason := ""
			if t.err != nil {
				reason = t.err.Error()
				if len(st.Skipped) < 100 {
					st.Skipped = append(st.Skipped, Skip{File: t.name, Reason: reason})
				}
			}
			var fileID int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO files(book_id, name, mtime, size, error) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT(book_id, name) DO UPDATE SET mtime = excluded.mtime, size = excluded.size, error = excluded.error RETURNING id`,
				bookID, t.name, t.mtime, t.size, reason).Scan(&fileID); err != nil {
				return fmt.Errorf("recording file %s: %w", t.name, err)
			}
			if t.err != nil {
				var kept int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM cards WHERE file_id = ?`, fileID).Scan(&kept); err != nil {
					return fmt.Errorf("counting cards of %s: %w", t.name, err)
				}
				st.Kept += kept
				continue
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM cards WHERE file_id = ?`, fileID); err != nil {
				return fmt.Errorf("replacing cards of %s: %w", t.name, err)
			}
			for _, c := range t.cards {
				if err := insertCard(ctx, tx, bookID, fileID, c); err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				st.Cards++
			}
		}
		return nil
	})
	return st, err
}

func insertCard(ctx context.Context, tx *sql.Tx, bookID, fileID int64, c Card) error {
	raw, _ := json.Marshal(c)
	names := strings.Join(nonEmpty(c.Name, c.Given, c.Family), " ")
	var id int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO cards(file_id, book_id, uid, name, nicknames, org, emails, names, card, phones)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, fileID, bookID, c.UID, c.Name, strings.Join(c.Nicknames, " "), c.Org,
		strings.Join(c.Emails, " "), names, string(raw), strings.Join(c.Phones, "\n")).Scan(&id); err != nil {
		return fmt.Errorf("inserting card %q: %w", c.Name, err)
	}
	for _, k := range cardKeys(c) {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO card_keys(key, card_id) VALUES (?, ?)`, k, id); err != nil {
			return fmt.Errorf("indexing card %q: %w", c.Name, err)
		}
	}
	return nil
}

// cardKeys are the identities that merge cards into one person.
func cardKeys(c Card) []string {
	var out []string
	for _, e := range c.Emails {
		out = append(out, "e:"+e)
	}
	for _, p := range c.Phones {
		if k := phoneKey(p); k != "" {
			out = append(out, "p:"+k)
		}
	}
	return out
}

// Person is one or more cards merged by a shared email address or phone.
type Person struct {
	Name      string   `json:"name"`
	OtherName []string `json:"other_names,omitempty"`
	Emails    []string `json:"emails,omitempty"`
	Phones    []string `json:"phones,omitempty"`
	Org       string   `json:"org,omitempty"`
	Title     string   `json:"title,omitempty"`
	Nicknames []string `json:"nicknames,omitempty"`
	Books     []string `json:"books"`
	Cards     int      `json:"cards"`
	// SeenInMail marks a person known only from mail headers (no card):
	// ranked after the address books' people.
	SeenInMail bool `json:"seen_in_mail,omitempty"`
	// Mail is how often and how recently the person's addresses were
	// mailed (from the stored correspondents), when they were.
	Mail *MailStats `json:"mail,omitempty"`
}

// MaxResults caps Search.
const MaxResults = 50

// Search finds people whose names, nicknames, organisation or addresses
// start with every word of text (so "mar ros" finds Marco Rossi): first
// the address books' people, then people seen in mail (SeenInMail).
func (s *Store) Search(ctx context.Context, text string, limit int) ([]Person, error) {
	if limit <= 0 || limit > MaxResults {
		limit = 20
	}
	people, err := s.searchCards(ctx, text, limit)
	if err != nil {
		return nil, err
	}
	if people, err = s.seenInMail(ctx, text, people, limit); err != nil {
		return nil, err
	}
	for i := range people {
		if !people[i].SeenInMail {
			if people[i].Mail, err = s.mailStats(ctx, people[i].Emails); err != nil {
				return nil, err
			}
		}
	}
	return people, nil
}

// List pages through the address books' people by name (merged across
// books like Search), for browsing without a search. next is the offset of
// the following page, or 0 at the end.
func (s *Store) List(ctx context.Context, offset, limit int) (people []Person, next int, err error) {
	if limit <= 0 || limit > MaxResults {
		limit = MaxResults
	}
	if offset < 0 {
		return nil, 0, fmt.Errorf("%w: offset %d is negative", ErrBadQuery, offset)
	}
	ids, err := s.cardIDs(ctx, `SELECT id FROM cards ORDER BY name COLLATE NOCASE, id LIMIT ? OFFSET ?`, limit+1, offset)
	if err != nil {
		return nil, 0, err
	}
	if len(ids) > limit {
		ids, next = ids[:limit], offset+limit
	}
	if people, err = s.people(ctx, ids); err != nil {
		return nil, 0, err
	}
	return people, next, nil
}

// searchCards is Search over the address books only.
func (s *Store) searchCards(ctx context.Context, text string, limit int) ([]Person, error) {
	match := prefixMatch(text)
	if match == "" {
		return nil, fmt.Errorf("%w: give a name, an address or an organisation", ErrBadQuery)
	}
	ids, err := s.cardIDs(ctx, `SELECT c.id FROM cards c JOIN cards_fts f ON f.rowid = c.id WHERE cards_fts MATCH ? ORDER BY f.rank LIMIT 500`, match)
	if err != nil {
		return nil, err
	}
	if q, ok := phoneQuery(text); ok {
		pids, err := s.phoneCardIDs(ctx, q)
		if err != nil {
			return nil, err
		}
		ids = append(pids, ids...)
	}
	people, err := s.people(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(people) > limit {
		people = people[:limit]
	}
	return people, nil
}

// phoneCardIDs lists the cards with a number that phoneMatch accepts.
// Address books hold thousands of cards at most, so the scan is cheap.
func (s *Store) phoneCardIDs(ctx context.Context, q phoneQ) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, phones FROM cards WHERE phones != '' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("searching contacts by phone: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		var phones string
		if err := rows.Scan(&id, &phones); err != nil {
			return nil, fmt.Errorf("searching contacts by phone: %w", err)
		}
		for _, p := range strings.Split(phones, "\n") {
			if q.match(p) {
				out = append(out, id)
				break
			}
		}
	}
	return out, rows.Err()
}

// prefixMatch builds an FTS5 expression requiring a prefix match of every
// word; words are quoted so query syntax is never interpreted.
func prefixMatch(text string) string {
	var parts []string
	for _, w := range strings.FieldsFunc(Fold(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	}) {
		parts = append(parts, `"`+strings.ReplaceAll(w, `"`, `""`)+`"*`)
		if len(parts) == 8 {
			break
		}
	}
	return strings.Join(parts, " AND ")
}

func (s *Store) cardIDs(ctx context.Context, q string, args ...any) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("searching contacts: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// people groups the cards with ids, plus every card sharing a key with
// them, into persons, keeping the order of first appearance.
func (s *Store) people(ctx context.Context, ids []int64) ([]Person, error) {
	type cardRow struct {
		id   int64
		book string
		c    Card
		keys []string
	}
	cards := map[int64]*cardRow{}
	var order []int64
	load := func(id int64) error {
		if _, ok := cards[id]; ok {
			return nil
		}
		var raw, book string
		if err := s.db.QueryRowContext(ctx, `SELECT c.card, b.name FROM cards c JOIN books b ON b.id = c.book_id WHERE c.id = ?`, id).Scan(&raw, &book); err != nil {
			return fmt.Errorf("reading card %d: %w", id, err)
		}
		cr := &cardRow{id: id, book: book}
		if err := json.Unmarshal([]byte(raw), &cr.c); err != nil {
			return fmt.Errorf("decoding card %d: %w", id, err)
		}
		cr.keys = cardKeys(cr.c)
		cards[id] = cr
		order = append(order, id)
		return nil
	}
	for _, id := range ids {
		if err := load(id); err != nil {
			return nil, err
		}
	}
	// Pull in cards sharing a key (one hop, bounded).
	for _, id := range append([]int64(nil), order...) {
		for _, k := range cards[id].keys {
			more, err := s.cardIDs(ctx, `SELECT card_id FROM card_keys WHERE key = ? LIMIT 20`, k)
			if err != nil {
				return nil, err
			}
			for _, m := range more {
				if err := load(m); err != nil {
					return nil, err
				}
			}
		}
	}
	// Union-find over shared keys.
	parent := map[int64]int64{}
	var find func(int64) int64
	find = func(x int64) int64 {
		if p, ok := parent[x]; ok && p != x {
			r := find(p)
			parent[x] = r
			return r
		}
		return x
	}
	owner := map[string]int64{}
	for _, id := range order {
		for _, k := range cards[id].keys {
			if o, ok := owner[k]; ok {
				if a, b := find(o), find(id); a != b {
					parent[b] = a
				}
			} else {
				owner[k] = id
			}
		}
	}
	groups := map[int64]*Person{}
	var out []*Person
	for _, id := range order {
		cr := cards[id]
		root := find(id)
		p := groups[root]
		if p == nil {
			p = &Person{Name: cr.c.Name, Org: cr.c.Org, Title: cr.c.Title}
			groups[root] = p
			out = append(out, p)
		} else if cr.c.Name != "" && !strings.EqualFold(cr.c.Name, p.Name) && !containsFold(p.OtherName, cr.c.Name) {
			p.OtherName = append(p.OtherName, cr.c.Name)
		}
		p.Cards++
		if p.Org == "" {
			p.Org = cr.c.Org
		}
		p.Emails = appendNew(p.Emails, cr.c.Emails...)
		p.Phones = appendNew(p.Phones, cr.c.Phones...)
		p.Nicknames = appendNew(p.Nicknames, cr.c.Nicknames...)
		p.Books = appendNew(p.Books, cr.book)
	}
	res := make([]Person, len(out))
	for i, p := range out {
		sort.Strings(p.Books)
		res[i] = *p
	}
	return res, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func appendNew(list []string, xs ...string) []string {
	for _, x := range xs {
		if x != "" && !containsFold(list, x) {
			list = append(list, x)
		}
	}
	return list
}
