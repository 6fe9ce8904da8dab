// Package mail is Hestia's mail connector: a local SQLite mirror of the
// user's mail (Maildir, mbox and Apple Mail .emlx trees, IMAP accounts),
// thread reconstruction, hybrid search over it, and the read/search/thread
// operations the agent's mail tools are built from.
//
// The messages table is the normalised record. Full-text, trigram and
// vector indexes are derived from it and can be rebuilt at any time; every
// physical copy of a message (a file, an mbox offset, an IMAP UID) is a
// path row, and a message is soft-deleted only when its last path goes.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `mail/fts5`, `mail/parse`, `mail/imapsync`, `mail/journal`, `mail/journal/smtpsend`, `mail/mailtools` too:
//
// the mail mirror (`mail.db`: bodies zstd-compressed, read through `hestia_body`/the
// `messages_text` view that the FTS5 word and trigram tables index; `fts_lengths`, every message's
// token count recorded with the FTS5 state it was computed for, lets a one-word search compute
// FTS5's BM25 in Go instead of one docsize lookup per match, and is ignored once the index has
// changed; that search decodes the word's doclist from FTS5's own leaf pages (`mail/fts5`, FTS5's
// documented record formats, only the layouts it fully reads, checked word by word against
// `fts5vocab` with one FTS5 build and used only while that build is linked — compared at open,
// doctor's `mail.fts5_reader` —; anything else goes through `fts5vocab`); a phrase of plain words
// is matched by FTS5 once (its bm25 would evaluate it a second time for the IDF) and scored in Go
// from the doclist of a word it holds once, for messages that hold that word once (else FTS5 ranks
// it), with the token counts from memory, from docsize records for up to 200 matches, or else from
// `fts_lengths`; blobs under `DATA/mail/blobs`; other packages read it through `Store` methods,
// never SQL), imports on `ingest`'s pipeline, MIME/mbox/emlx parsing, threads (Message-ID graph
// components), hybrid search, IMAP sync, the send journal (`mailops.db`; its SMTP submission
// apart, in `smtpsend`, so the mirror links no SMTP or TLS client), the agent's mail tools.
package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hestia-dev/hestia/internal/ingest"
	"github.com/hestia-dev/hestia/internal/mail/fts5"
	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

// Options configure a Store.
type Options struct {
	DBPath  string // the mail database file (config.Paths.DB("mail"))
	BlobDir string // attachment blob store directory
	Logger  *slog.Logger
	Now     func() time.Time
	// Embedder is optional; without it search is lexical only.
	Embedder search.Embedder
	// Related lists, beside a search's matches, the messages only the
	// vectors found (Result.Related) unless a query says otherwise. Set it
	// only for an embedder that knows meaning: the hashed fallback's
	// nearest messages without the words are noise.
	Related    bool
	EmbedModel string // recorded with each vector
	// EmbedMaxChars caps the source text of a message's vector (default 2000).
	EmbedMaxChars int
	// CachePages bounds each connection's page cache (see
	// store.OpenOptions); a one-shot query process sets it, zero keeps
	// SQLite's.
	CachePages int
}

// Store is the mail mirror. It is safe for concurrent use.
type Store struct {
	db    *store.DB
	blobs *blobStore
	// bodies packs message bodies for storage (see body.go).
	bodies *bodyCodec
	log    *slog.Logger
	now    func() time.Time
	opts   Options

	// mu guards the id caches below; SQLite is the authority.
	mu        sync.Mutex
	accounts  map[string]int64
	mailboxes map[mailboxKey]mailboxInfo

	// shrunk is set once no float32 vector is left (ShrinkVectors): this
	// version writes none, so the embed job stops looking.
	shrunk atomic.Bool
	// vecMu guards vec, loaded lazily from the embeddings table.
	vecMu sync.Mutex
	vec   *search.Index
	// docLengths caches the stored message token counts (see rank.go);
	// wordRankMin is how many messages a word must be in for wordScores
	// (minWordDocs; tests lower it).
	docLengths  atomic.Pointer[docLengths]
	wordRankMin int
	// filterPlan forces scoredTopHits' plan for a date range ("scan" or
	// "checks"; tests); "" chooses by cost. maxChecks is how many
	// matches the checks test before the join takes over
	// (maxFilterChecks; tests lower it).
	filterPlan string
	maxChecks  int
	// pages reads word doclists from the index pages; nil when the
	// linked FTS5 is not the build it was verified with (pagesCompat),
	// and searches read fts5vocab instead.
	pages       *fts5.Reader
	pagesCompat fts5.Compat
	// importLimits bound an import's transactions and what is parsed
	// ahead of its writer (maxBatchBytes, queueBytes; tests lower them).
	importLimits ingest.Limits
}

type mailboxKey struct {
	account int64
	name    string
}

type mailboxInfo struct {
	id   int64
	role string
}

// Open opens (creating if needed) the mirror database.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.DBPath == "" || opts.BlobDir == "" {
		return nil, errors.New("mail: DBPath and BlobDir are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.EmbedMaxChars <= 0 {
		opts.EmbedMaxChars = 2000
	}
	codec, err := registerFuncs()
	if err != nil {
		return nil, err
	}
	db, err := store.OpenWith(ctx, opts.DBPath, Schema, store.OpenOptions{CachePages: opts.CachePages})
	if err != nil {
		return nil, err
	}
	if err := compactOnce(ctx, db, opts.Logger); err != nil {
		db.Close()
		return nil, err
	}
	compat, err := fts5.Check(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	var pages *fts5.Reader
	if compat.OK {
		pages = newPageReader()
	} else {
		opts.Logger.Warn("mailFTS5PageReaderOff", "sqlite", compat.Version, "fts5", compat.Source, "verified", fts5.VerifiedSource)
	}
	return &Store{
		pages: pages, pagesCompat: compat,
		db: db, blobs: &blobStore{dir: opts.BlobDir}, bodies: codec, log: opts.Logger, now: opts.Now, opts: opts,
		accounts: map[string]int64{}, mailboxes: map[mailboxKey]mailboxInfo{}, wordRankMin: minWordDocs, maxChecks: maxFilterChecks,
		importLimits: ingest.Limits{BatchBytes: maxBatchBytes, QueueBytes: queueBytes},
	}, nil
}

// compactOnce rewrites a file made before bodies were compressed, once:
// the migration that compressed them left the freed space inside the file,
// and only a VACUUM can switch it to auto_vacuum=INCREMENTAL so later
// imports hand free pages back (see Import). A busy database (another
// process writing) is left for the next open.
func compactOnce(ctx context.Context, db *store.DB, log *slog.Logger) error {
	mode, err := db.AutoVacuum(ctx)
	if err != nil {
		return err
	}
	if mode != 0 {
		return nil
	}
	st := time.Now()
	if err := db.Compact(ctx, true); err != nil {
		if ctx.Err() != nil {
			return err
		}
		log.Warn("mailCompact", "err", err)
		return nil
	}
	log.Info("mailCompacted", "took", time.Since(st).Round(time.Millisecond))
	return nil
}

// PageReader says whether one-word ranking reads the index pages (the
// linked FTS5 is the build the reader was verified with) or fts5vocab,
// for doctor.
func (s *Store) PageReader() fts5.Compat { return s.pagesCompat }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the database for the journal's confirmation queries and tests.
func (s *Store) DB() *store.DB { return s.db }

// Mailbox roles. RoleAll marks an "All Mail" style aggregate folder, which
// never wins over a more specific mailbox for the same message.
const (
	RoleInbox   = "inbox"
	RoleSent    = "sent"
	RoleDrafts  = "drafts"
	RoleTrash   = "trash"
	RoleJunk    = "junk"
	RoleArchive = "archive"
	RoleAll     = "all"
)

var roleNames = map[string]string{
	"inbox": RoleInbox,
	"sent":  RoleSent, "sent items": RoleSent, "sent mail": RoleSent, "sent messages": RoleSent, "gesendet": RoleSent, "gesendete elemente": RoleSent, "envoyés": RoleSent, "inviata": RoleSent, "posta inviata": RoleSent,
	"drafts": RoleDrafts, "draft": RoleDrafts, "entwürfe": RoleDrafts, "brouillons": RoleDrafts, "bozze": RoleDrafts,
	"trash": RoleTrash, "deleted items": RoleTrash, "deleted messages": RoleTrash, "bin": RoleTrash, "papierkorb": RoleTrash, "corbeille": RoleTrash, "cestino": RoleTrash,
	"junk": RoleJunk, "spam": RoleJunk, "junk e-mail": RoleJunk, "junk email": RoleJunk, "bulk mail": RoleJunk,
	"archive": RoleArchive, "archives": RoleArchive, "archiv": RoleArchive,
	"all mail": RoleAll, "all": RoleAll,
}

// DetectRole guesses a mailbox role from its name: the last path component
// ("[Gmail]/Sent Mail", ".Sent", "INBOX.Trash", "Sent Messages.mbox").
func DetectRole(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimSuffix(n, ".mbox")
	n = strings.TrimSuffix(n, ".sbd")
	if i := strings.LastIndexAny(n, "/\\"); i >= 0 {
		n = n[i+1:]
	}
	n = strings.TrimPrefix(n, ".")
	if r, ok := roleNames[n]; ok {
		return r
	}
	if i := strings.LastIndexByte(n, '.'); i >= 0 { // Maildir++ "INBOX.Sent"
		if r, ok := roleNames[n[i+1:]]; ok {
			return r
		}
	}
	return ""
}

// specificity ranks mailboxes for the "most specific mailbox wins" rule.
func specificity(role string) int {
	if role == RoleAll {
		return 0
	}
	return 1
}

// accountID returns (creating) the account row.
func (s *Store) accountID(ctx context.Context, q querier, name, kind string) (int64, error) {
	s.mu.Lock()
	id, ok := s.accounts[name]
	s.mu.Unlock()
	if ok {
		return id, nil
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO accounts(name, kind) VALUES (?, ?) ON CONFLICT(name) DO NOTHING`, name, kind); err != nil {
		return 0, fmt.Errorf("creating account %s: %w", name, err)
	}
	if err := q.QueryRowContext(ctx, `SELECT id FROM accounts WHERE name = ?`, name).Scan(&id); err != nil {
		return 0, fmt.Errorf("reading account %s: %w", name, err)
	}
	return id, nil
}

// mailbox returns (creating) the mailbox row. A non-empty role overrides
// the name-based guess (IMAP SPECIAL-USE attributes are authoritative).
func (s *Store) mailbox(ctx context.Context, q querier, account int64, name, role string) (mailboxInfo, error) {
	key := mailboxKey{account, name}
	s.mu.Lock()
	mb, ok := s.mailboxes[key]
	s.mu.Unlock()
	if ok && (role == "" || role == mb.role) {
		return mb, nil
	}
	if role == "" {
		role = DetectRole(name)
	}
	_, err := q.ExecContext(ctx, `INSERT INTO mailboxes(account_id, name, role) VALUES (?, ?, ?)
		ON CONFLICT(account_id, name) DO UPDATE SET role = CASE WHEN excluded.role != '' THEN excluded.role ELSE role END`, account, name, role)
	if err != nil {
		return mailboxInfo{}, fmt.Errorf("creating mailbox %s: %w", name, err)
	}
	if err := q.QueryRowContext(ctx, `SELECT id, role FROM mailboxes WHERE account_id = ? AND name = ?`, account, name).Scan(&mb.id, &mb.role); err != nil {
		return mailboxInfo{}, fmt.Errorf("reading mailbox %s: %w", name, err)
	}
	return mb, nil
}

// cache records ids after their transaction committed, so a rolled-back
// insert never leaves a dangling id in the cache.
func (s *Store) cache(accounts map[string]int64, mailboxes map[mailboxKey]mailboxInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range accounts {
		s.accounts[k] = v
	}
	for k, v := range mailboxes {
		s.mailboxes[k] = v
	}
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Mailbox describes one mailbox for listings and sync state.
type Mailbox struct {
	ID          int64  `json:"id"`
	Account     string `json:"account"`
	Name        string `json:"name"`
	Role        string `json:"role,omitempty"`
	UIDValidity uint32 `json:"-"`
	UIDNext     uint32 `json:"-"`
	Messages    int    `json:"messages"`
}

// Mailboxes lists the mailboxes of every account (or one account).
func (s *Store) Mailboxes(ctx context.Context, account string) ([]Mailbox, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT b.id, a.name, b.name, b.role, b.uidvalidity, b.uidnext,
		(SELECT count(*) FROM message_paths p WHERE p.mailbox_id = b.id)
		FROM mailboxes b JOIN accounts a ON a.id = b.account_id
		WHERE (? = '' OR a.name = ?) ORDER BY a.name, b.name`, account, account)
	if err != nil {
		return nil, fmt.Errorf("listing mailboxes: %w", err)
	}
	defer rows.Close()
	var out []Mailbox
	for rows.Next() {
		var m Mailbox
		if err := rows.Scan(&m.ID, &m.Account, &m.Name, &m.Role, &m.UIDValidity, &m.UIDNext, &m.Messages); err != nil {
			return nil, fmt.Errorf("listing mailboxes: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Stats are counts for status pages and import summaries.
type Stats struct {
	Messages int `json:"messages"`
	Deleted  int `json:"deleted"`
	Threads  int `json:"threads"`
	Paths    int `json:"paths"`
	Vectors  int `json:"vectors"`
}

// Stats counts the mirror's rows.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM messages) - (SELECT count(*) FROM messages WHERE deleted_at IS NOT NULL),
		(SELECT count(*) FROM messages WHERE deleted_at IS NOT NULL),
		(SELECT count(*) FROM threads WHERE message_count > 0),
		(SELECT count(*) FROM message_paths),
		(SELECT count(*) FROM embeddings)`).Scan(&st.Messages, &st.Deleted, &st.Threads, &st.Paths, &st.Vectors)
	if err != nil {
		return st, fmt.Errorf("counting mail: %w", err)
	}
	return st, nil
}

// RebuildIndexes regenerates the full-text and trigram indexes from the
// message rows (they are derived data).
func (s *Store) RebuildIndexes(ctx context.Context) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, ft := range ftsTables {
			t := ft.name
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+t+`(`+t+`) VALUES ('rebuild')`); err != nil {
				return fmt.Errorf("rebuilding %s: %w", t, err)
			}
		}
		return nil
	})
}
