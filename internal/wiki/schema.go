package wiki

import "github.com/hestia-dev/hestia/internal/store"

// Schema is the wiki index database. Everything in it but imports is
// derived from the Markdown folder and rebuilt by Reindex; imports is the
// origin → snapshot map that import's collision rules need, so a rebuild
// keeps it.
var Schema = store.Schema{
	Name: "wiki",
	Migrations: []string{`
CREATE TABLE pages (
	id             INTEGER PRIMARY KEY,
	path           TEXT NOT NULL UNIQUE,
	kind           TEXT NOT NULL,
	title          TEXT NOT NULL DEFAULT '',
	tags           TEXT NOT NULL DEFAULT '[]',
	sources        TEXT NOT NULL DEFAULT '[]',
	created        TEXT NOT NULL DEFAULT '',
	updated        TEXT NOT NULL DEFAULT '',
	review_by      TEXT NOT NULL DEFAULT '',
	has_fm         INTEGER NOT NULL DEFAULT 0,
	untrusted      INTEGER NOT NULL DEFAULT 0,
	size           INTEGER NOT NULL DEFAULT 0,
	mtime          INTEGER NOT NULL DEFAULT 0,
	sha256         TEXT NOT NULL DEFAULT '',
	problems       TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE page_keys (
	key     TEXT NOT NULL,
	page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
	PRIMARY KEY (key, page_id)
) WITHOUT ROWID;
CREATE INDEX page_keys_page ON page_keys(page_id);
CREATE TABLE links (
	page_id    INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
	target_key TEXT NOT NULL,
	target     TEXT NOT NULL,
	heading    TEXT NOT NULL DEFAULT '',
	alias      TEXT NOT NULL DEFAULT '',
	line       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX links_page ON links(page_id);
CREATE INDEX links_target ON links(target_key);
CREATE TABLE chunks (
	id      INTEGER PRIMARY KEY,
	page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
	ord     INTEGER NOT NULL,
	heading TEXT NOT NULL DEFAULT '',
	start   INTEGER NOT NULL DEFAULT 0,
	hash    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX chunks_page ON chunks(page_id);
CREATE VIRTUAL TABLE chunks_fts USING fts5(title, heading, text, tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE chunks_tri USING fts5(title, text, tokenize='trigram');
INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0)');
CREATE TABLE vectors (
	chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
	hash     TEXT NOT NULL,
	dim      INTEGER NOT NULL,
	vector   BLOB NOT NULL
);
CREATE TABLE imports (
	origin  TEXT PRIMARY KEY,
	dest    TEXT NOT NULL,
	sha256  TEXT NOT NULL,
	at      INTEGER NOT NULL
);
`},
}
