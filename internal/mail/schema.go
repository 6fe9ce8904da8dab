package mail

import "github.com/hestia-dev/hestia/internal/store"

// Schema is the mail mirror database. The messages table is the normalised
// record; messages_fts, messages_tri, messages_hdr_tri and embeddings are
// derived and can be rebuilt from it (see Store.RebuildIndexes).
// messages.body holds each body as stored (see body.go): read it through
// hestia_body(body) or the messages_text view, never directly.
var Schema = store.Schema{
	Name: "mail",
	// Imports free many pages (FTS5 segment merges); see Import.
	IncrementalVacuum: true,
	Migrations: []string{`
CREATE TABLE accounts (
	id   INTEGER PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL DEFAULT 'local'
);
CREATE TABLE mailboxes (
	id          INTEGER PRIMARY KEY,
	account_id  INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
	name        TEXT NOT NULL,
	role        TEXT NOT NULL DEFAULT '',
	uidvalidity INTEGER NOT NULL DEFAULT 0,
	uidnext     INTEGER NOT NULL DEFAULT 0,
	UNIQUE (account_id, name)
);
CREATE TABLE threads (
	id            INTEGER PRIMARY KEY,
	account_id    INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
	norm_subject  TEXT NOT NULL DEFAULT '',
	first_at      INTEGER NOT NULL DEFAULT 0,
	last_at       INTEGER NOT NULL DEFAULT 0,
	message_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX threads_subject ON threads(account_id, norm_subject, last_at);
CREATE TABLE thread_participants (
	thread_id INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	addr      TEXT NOT NULL,
	PRIMARY KEY (thread_id, addr)
) WITHOUT ROWID;
CREATE INDEX thread_participants_addr ON thread_participants(addr, thread_id);
CREATE TABLE messages (
	id              INTEGER PRIMARY KEY,
	account_id      INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
	identity        TEXT NOT NULL,
	message_id      TEXT NOT NULL DEFAULT '',
	mailbox_id      INTEGER REFERENCES mailboxes(id),
	thread_id       INTEGER REFERENCES threads(id),
	gm_thrid        TEXT NOT NULL DEFAULT '',
	in_reply_to     TEXT NOT NULL DEFAULT '',
	subject         TEXT NOT NULL DEFAULT '',
	from_addr       TEXT NOT NULL DEFAULT '',
	to_addr         TEXT NOT NULL DEFAULT '',
	cc_addr         TEXT NOT NULL DEFAULT '',
	date            INTEGER NOT NULL DEFAULT 0,
	size            INTEGER NOT NULL DEFAULT 0,
	seen            INTEGER NOT NULL DEFAULT 0,
	answered        INTEGER NOT NULL DEFAULT 0,
	flagged         INTEGER NOT NULL DEFAULT 0,
	draft           INTEGER NOT NULL DEFAULT 0,
	has_attachments INTEGER NOT NULL DEFAULT 0,
	body            TEXT NOT NULL DEFAULT '',
	body_state      TEXT NOT NULL DEFAULT 'full',
	embed_hash      TEXT NOT NULL DEFAULT '',
	problems        TEXT NOT NULL DEFAULT '',
	ingested_at     INTEGER NOT NULL,
	deleted_at      INTEGER,
	UNIQUE (account_id, identity)
);
CREATE INDEX messages_msgid ON messages(account_id, message_id);
CREATE INDEX messages_thread ON messages(thread_id, date);
CREATE INDEX messages_date ON messages(date);
CREATE INDEX messages_size ON messages(size);
CREATE INDEX messages_gm ON messages(account_id, gm_thrid) WHERE gm_thrid != '';
CREATE TABLE message_refs (
	message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	ref        TEXT NOT NULL,
	PRIMARY KEY (message_id, ref)
) WITHOUT ROWID;
CREATE INDEX message_refs_ref ON message_refs(ref);
CREATE TABLE message_paths (
	path       TEXT PRIMARY KEY,
	message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	mailbox_id INTEGER NOT NULL REFERENCES mailboxes(id) ON DELETE CASCADE,
	mtime      INTEGER NOT NULL DEFAULT 0,
	size       INTEGER NOT NULL DEFAULT 0,
	uid        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX message_paths_message ON message_paths(message_id);
CREATE INDEX message_paths_mailbox ON message_paths(mailbox_id, uid);
CREATE TABLE attachments (
	message_id   INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	idx          INTEGER NOT NULL,
	filename     TEXT NOT NULL DEFAULT '',
	content_type TEXT NOT NULL DEFAULT '',
	size         INTEGER NOT NULL DEFAULT 0,
	sha256       TEXT NOT NULL,
	stored       INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (message_id, idx)
);
CREATE TABLE embeddings (
	message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
	hash       TEXT NOT NULL,
	model      TEXT NOT NULL,
	dim        INTEGER NOT NULL,
	vector     BLOB NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE VIRTUAL TABLE messages_fts USING fts5(
	subject, from_addr, to_addr, body,
	content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE messages_tri USING fts5(
	subject, from_addr, to_addr, cc_addr, body,
	content='messages', content_rowid='id', tokenize='trigram'
);
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
	INSERT INTO messages_fts(rowid, subject, from_addr, to_addr, body) VALUES (new.id, new.subject, new.from_addr, new.to_addr, new.body);
	INSERT INTO messages_tri(rowid, subject, from_addr, to_addr, cc_addr, body) VALUES (new.id, new.subject, new.from_addr, new.to_addr, new.cc_addr, new.body);
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_addr, to_addr, body) VALUES ('delete', old.id, old.subject, old.from_addr, old.to_addr, old.body);
	INSERT INTO messages_tri(messages_tri, rowid, subject, from_addr, to_addr, cc_addr, body) VALUES ('delete', old.id, old.subject, old.from_addr, old.to_addr, old.cc_addr, old.body);
END;
CREATE TRIGGER messages_au AFTER UPDATE OF subject, from_addr, to_addr, cc_addr, body ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_addr, to_addr, body) VALUES ('delete', old.id, old.subject, old.from_addr, old.to_addr, old.body);
	INSERT INTO messages_tri(messages_tri, rowid, subject, from_addr, to_addr, cc_addr, body) VALUES ('delete', old.id, old.subject, old.from_addr, old.to_addr, old.cc_addr, old.body);
	INSERT INTO messages_fts(rowid, subject, from_addr, to_addr, body) VALUES (new.id, new.subject, new.from_addr, new.to_addr, new.body);
	INSERT INTO messages_tri(rowid, subject, from_addr, to_addr, cc_addr, body) VALUES (new.id, new.subject, new.from_addr, new.to_addr, new.cc_addr, new.body);
END;
`,
		// Fewer, larger FTS5 merges: bulk imports otherwise spend a quarter
		// of their time merging trigram segments.
		`INSERT INTO messages_fts(messages_fts, rank) VALUES ('automerge', 8);
INSERT INTO messages_tri(messages_tri, rank) VALUES ('automerge', 8);
INSERT INTO messages_tri(messages_tri, rank) VALUES ('crisismerge', 32);`,
		// Full-text rows are written by the ingest code once per batch
		// (see txc.indexPending), not per row by triggers.
		`DROP TRIGGER messages_ai;
DROP TRIGGER messages_au;`,
		// Rank subject and sender matches above body matches.
		`INSERT INTO messages_fts(messages_fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0, 1.0)');`,
		// Replies go to Reply-To when the sender set one (RFC 5322 §3.6.3).
		`ALTER TABLE messages ADD COLUMN reply_to TEXT NOT NULL DEFAULT '';`,
		`ALTER TABLE mailboxes ADD COLUMN modseq INTEGER NOT NULL DEFAULT 0;`,
		// Substring filters fold accents like free text does ("cafe"
		// finds "Café"): the trigram index is rebuilt with remove_diacritics.
		`DROP TABLE messages_tri;
CREATE VIRTUAL TABLE messages_tri USING fts5(
	subject, from_addr, to_addr, cc_addr, body,
	content='messages', content_rowid='id', tokenize='trigram remove_diacritics 1'
);
INSERT INTO messages_tri(messages_tri) VALUES ('rebuild');
INSERT INTO messages_tri(messages_tri, rank) VALUES ('automerge', 8);
INSERT INTO messages_tri(messages_tri, rank) VALUES ('crisismerge', 32);`,
		// A fingerprint of what a reader sees (subject, sender, text): two
		// different messages sharing one Message-ID are both kept.
		`ALTER TABLE messages ADD COLUMN content_hash TEXT NOT NULL DEFAULT '';`,
		// deleted_at sits after the body in each row, so testing it reads
		// every overflow page of the body. Searches test membership in this
		// small partial index instead, and thread upkeep reads a covering one.
		`CREATE INDEX messages_deleted ON messages(id) WHERE deleted_at IS NOT NULL;
DROP INDEX messages_thread;
CREATE INDEX messages_thread ON messages(thread_id, date, deleted_at);`,
		// Maildir cur/ and new/ directories as last imported: a rescan skips
		// a directory whose mtime is unchanged (every delivery, rename or
		// removal inside it changes it), as notmuch does.
		`CREATE TABLE scan_dirs (
	account TEXT NOT NULL,
	path    TEXT NOT NULL,
	mtime   INTEGER NOT NULL,
	files   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (account, path)
) WITHOUT ROWID;`,
		// The trigram index with full detail (every trigram's position in
		// every column) was over half the file, about twice the mail
		// itself. detail=none keeps only which messages hold each trigram:
		// substring filters AND the value's trigrams to narrow the
		// candidates, then check each candidate's column for the folded
		// value (hestia_fold, see store.FoldFunc).
		`DROP TABLE messages_tri;
CREATE VIRTUAL TABLE messages_tri USING fts5(
	subject, from_addr, to_addr, cc_addr, body,
	content='messages', content_rowid='id', tokenize='trigram remove_diacritics 1', detail=none, columnsize=0
);
INSERT INTO messages_tri(messages_tri) VALUES ('rebuild');
INSERT INTO messages_tri(messages_tri, rank) VALUES ('automerge', 8);
INSERT INTO messages_tri(messages_tri, rank) VALUES ('crisismerge', 32);`,
		// Header substring filters (--subject, --from, --to, --cc) narrow
		// with a trigram index of the header columns alone. In messages_tri
		// a common subject word also matched every body that contains it
		// (5,078 candidates for "invoice" in 100k messages, 183 of them with
		// it in the subject), each then read and folded.
		`CREATE VIRTUAL TABLE messages_hdr_tri USING fts5(
	subject, from_addr, to_addr, cc_addr,
	content='messages', content_rowid='id', tokenize='trigram remove_diacritics 1', detail=none, columnsize=0
);
INSERT INTO messages_hdr_tri(messages_hdr_tri) VALUES ('rebuild');
INSERT INTO messages_hdr_tri(messages_hdr_tri, rank) VALUES ('automerge', 8);
INSERT INTO messages_hdr_tri(messages_hdr_tri, rank) VALUES ('crisismerge', 32);`,
		// Bodies are stored compressed (hestia_pack; see body.go): they were
		// a third of the file. The full-text tables now read their
		// external content through messages_text, which unpacks bodies
		// (hestia_body), so 'rebuild' and FTS5's integrity check see text.
		// Changing a table's content= means recreating it; the index is
		// rebuilt once here. messages_tri now holds the body alone: header
		// filters use messages_hdr_tri. The delete trigger (an account
		// removed with its messages) unpacks the old body to remove the
		// right terms, and now clears messages_hdr_tri too.
		`DROP TRIGGER messages_ad;
DROP TABLE messages_fts;
DROP TABLE messages_tri;
UPDATE messages SET body = hestia_pack(body) WHERE typeof(body) = 'text';
CREATE VIEW messages_text AS SELECT id, subject, from_addr, to_addr, cc_addr, hestia_body(body) AS body FROM messages;
CREATE VIRTUAL TABLE messages_fts USING fts5(
	subject, from_addr, to_addr, body,
	content='messages_text', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
INSERT INTO messages_fts(messages_fts, rank) VALUES ('automerge', 8);
INSERT INTO messages_fts(messages_fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0, 1.0)');
CREATE VIRTUAL TABLE messages_tri USING fts5(
	body,
	content='messages_text', content_rowid='id', tokenize='trigram remove_diacritics 1', detail=none, columnsize=0
);
INSERT INTO messages_tri(messages_tri) VALUES ('rebuild');
INSERT INTO messages_tri(messages_tri, rank) VALUES ('automerge', 8);
INSERT INTO messages_tri(messages_tri, rank) VALUES ('crisismerge', 32);
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, subject, from_addr, to_addr, body) VALUES ('delete', old.id, old.subject, old.from_addr, old.to_addr, hestia_body(old.body));
	INSERT INTO messages_tri(messages_tri, rowid, body) VALUES ('delete', old.id, hestia_body(old.body));
	INSERT INTO messages_hdr_tri(messages_hdr_tri, rowid, subject, from_addr, to_addr, cc_addr) VALUES ('delete', old.id, old.subject, old.from_addr, old.to_addr, old.cc_addr);
END;`,
		// Message token counts for ranking one common word (rank.go), and
		// the word index's instances, which that ranking reads.
		`CREATE TABLE fts_lengths (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	averages  BLOB NOT NULL,
	structure BLOB NOT NULL,
	base      INTEGER NOT NULL,
	lengths   BLOB NOT NULL,
	crc       INTEGER NOT NULL
);
CREATE VIRTUAL TABLE messages_fts_instances USING fts5vocab(messages_fts, instance);`,
		// What the embed job must look at, so that it does not read every
		// message each minute (~150 ms at 100,000) to find none: messages
		// from embed_state.next_id up (new since its last complete pass:
		// new ids are above the old ones) and the embed_queue, which
		// triggers fill with messages whose text changed, that came back,
		// or whose id was reused below next_id. A file from before starts
		// from 0: one full pass, as every pass was.
		`CREATE TABLE embed_state (id INTEGER PRIMARY KEY CHECK (id = 1), next_id INTEGER NOT NULL);
INSERT INTO embed_state VALUES (1, 0);
CREATE TABLE embed_queue (message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE);
CREATE TRIGGER messages_embed_ai AFTER INSERT ON messages WHEN new.id < (SELECT next_id FROM embed_state) BEGIN
	INSERT OR IGNORE INTO embed_queue VALUES (new.id); -- an id reused below next_id (the newest was removed)
END;
CREATE TRIGGER messages_embed_au AFTER UPDATE OF embed_hash, deleted_at ON messages
	WHEN new.embed_hash IS NOT old.embed_hash OR (new.deleted_at IS NULL AND old.deleted_at IS NOT NULL) BEGIN
	INSERT OR IGNORE INTO embed_queue VALUES (new.id);
END;`,
		// Folders `hestia mail import` registered: the daemon's
		// mail.reconcile job rescans them beside the configured sources
		// (sources.go).
		`CREATE TABLE sources (
	path       TEXT PRIMARY KEY,
	account    TEXT NOT NULL DEFAULT 'local',
	added_at   INTEGER NOT NULL
) WITHOUT ROWID;`,
		// The date index covers what searches read of a message found by
		// date: its id (spelled out so that date order breaks ties by id,
		// as browsing does) and thread. A word under a date range can scan
		// the range without reading a row (filtered.go); browsing by date
		// reads none either. message_weeks bounds the ids of the messages
		// dated in each week (date / 604800, SQLite's integer division):
		// a date range's matches are narrowed to those ids before any is
		// checked. The bounds only ever widen, so a message deleted leaves
		// them holding every message of the week; n counts the messages
		// ever dated in the week (an estimate, for the plan). A message's
		// id and date never change (TestMessageDatesNeverChange), so one
		// trigger keeps the table: every connection parses the schema, and
		// each trigger is parsed again by every CLI process.
		`DROP INDEX messages_date;
CREATE INDEX messages_date ON messages(date, id, thread_id);
CREATE TABLE message_weeks (
	week INTEGER PRIMARY KEY,
	lo   INTEGER NOT NULL,
	hi   INTEGER NOT NULL,
	n    INTEGER NOT NULL
);
INSERT INTO message_weeks (week, lo, hi, n) SELECT date / 604800, min(id), max(id), count(*) FROM messages GROUP BY date / 604800;
CREATE TRIGGER messages_weeks AFTER INSERT ON messages BEGIN
	INSERT INTO message_weeks (week, lo, hi, n) VALUES (new.date / 604800, new.id, new.id, 1)
		ON CONFLICT (week) DO UPDATE SET lo = min(lo, excluded.lo), hi = max(hi, excluded.hi), n = n + 1;
END;`,
	},
}
