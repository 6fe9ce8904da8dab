package mail

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail/mailbench"
	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

func TestBodyCodecRoundTrip(t *testing.T) {
	t.Parallel()
	c := newBodyCodec()
	noise := make([]byte, 3000)
	rand.Read(noise)
	long := strings.Repeat("Meet me at the Café Zürich on Tuesday; 会議は火曜日です 🙂. ", 40)
	cases := []struct {
		name, text string
		packed     bool
	}{
		{"empty", "", false},
		{"short", "see you", false},
		{"long", long, true},
		{"incompressible", string(noise[:packMinBytes*2]), false},
		{"invalid utf-8 kept byte for byte", strings.Repeat("caf\xe9 ", 50), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stored, err := c.pack(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			b, isBlob := stored.([]byte)
			if isBlob != tc.packed {
				t.Fatalf("packed = %v (%T), want %v", isBlob, stored, tc.packed)
			}
			if isBlob && (b[0] != bodyZstd || len(b) >= len(tc.text)) {
				t.Fatalf("blob of %d bytes for %d bytes of text, format %d", len(b), len(tc.text), b[0])
			}
			got, err := c.unpack(stored)
			if err != nil || got != tc.text {
				t.Fatalf("round trip: %q, %v", got, err)
			}
		})
	}
	if got, err := c.unpack(nil); err != nil || got != "" {
		t.Errorf("NULL: %q %v", got, err)
	}
	if _, err := c.unpack([]byte{7, 1, 2}); err == nil || !strings.Contains(err.Error(), "unknown format 7") {
		t.Errorf("unknown format: %v", err)
	}
	if _, err := c.unpack([]byte{bodyZstd, 0xff, 0xfe}); err == nil {
		t.Error("corrupt frame unpacked without error")
	}
}

func FuzzBodyCodec(f *testing.F) {
	f.Add("")
	f.Add(strings.Repeat("the quick brown fox ", 20))
	f.Add(strings.Repeat("\x00\xff", 100))
	c := newBodyCodec()
	f.Fuzz(func(t *testing.T, text string) {
		stored, err := c.pack(text)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.unpack(stored)
		if err != nil || got != text {
			t.Fatalf("round trip of %q: %q, %v", text, got, err)
		}
	})
}

// longBody is a body well over packMinBytes, so it is stored compressed.
func longBody(words ...string) string {
	var b strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "Paragraph %d of the quarterly notes about the garden and the roof. ", i)
		if i == 7 {
			b.WriteString(strings.Join(words, " ") + ". ")
		}
	}
	return b.String()
}

// TestStoredBodiesOldAndNew: a body stored compressed and one stored as
// TEXT (as every row before compression) answer reads, paging, phrases,
// substring filters and snippets the same.
func TestStoredBodiesOldAndNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	body := longBody("Crème brûlée recipe", "with the zanzibar vanilla")
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	if _, err := s.Ingest(ctx, []Item{
		{Account: "a", Mailbox: "INBOX", Path: "p1", Raw: []byte(msg("new@x", "a@x.org", "b@x.org", "packed", d, body))},
		{Account: "a", Mailbox: "INBOX", Path: "p2", Raw: []byte(msg("old@x", "a@x.org", "b@x.org", "legacy", d, body))},
	}); err != nil {
		t.Fatal(err)
	}
	var newID, oldID int64
	s.DB().QueryRowContext(ctx, `SELECT id FROM messages WHERE message_id = 'new@x'`).Scan(&newID)
	s.DB().QueryRowContext(ctx, `SELECT id FROM messages WHERE message_id = 'old@x'`).Scan(&oldID)
	var text string
	if err := s.DB().QueryRowContext(ctx, `SELECT hestia_body(body) FROM messages WHERE id = ?`, oldID).Scan(&text); err != nil {
		t.Fatal(err)
	}
	// What an earlier version wrote: the plain text. The index already
	// holds these words, so the row changes without touching it.
	if _, err := s.DB().ExecContext(ctx, `UPDATE messages SET body = ? WHERE id = ?`, text, oldID); err != nil {
		t.Fatal(err)
	}
	types := map[int64]string{}
	for _, id := range []int64{newID, oldID} {
		var typ string
		s.DB().QueryRowContext(ctx, `SELECT typeof(body) FROM messages WHERE id = ?`, id).Scan(&typ)
		types[id] = typ
	}
	if types[newID] != "blob" || types[oldID] != "text" {
		t.Fatalf("storage types %v, want blob for the new row and text for the old one", types)
	}

	// Whole reads and paged reads.
	for _, id := range []int64{newID, oldID} {
		m, err := s.Read(ctx, id, 0, MaxBodyChars)
		if err != nil || m.Body != text || m.BodyLength != len([]rune(text)) {
			t.Fatalf("read %d: %q %v", id, m.Body, err)
		}
		var paged strings.Builder
		for off := 0; ; {
			m, err := s.Read(ctx, id, off, 100)
			if err != nil {
				t.Fatal(err)
			}
			paged.WriteString(m.Body)
			if m.NextOffset == 0 {
				break
			}
			off = m.NextOffset
		}
		if paged.String() != text {
			t.Errorf("paged read of %d differs:\n%q\n%q", id, paged.String(), text)
		}
	}

	// Phrase, accent folding, substring filters: both rows match, and
	// their snippets are the Go snippet of the text.
	terms := search.Terms(`"zanzibar vanilla"`)
	want := snippet(text, terms, 200)
	for _, q := range []Query{
		{Text: `"zanzibar vanilla"`},
		{Text: "creme brulee"},
		{Body: "brûlée recipe"},
		{Body: "BRULEE"},
		{Body: "ée"}, // too short for trigrams: a LIKE scan over unpacked bodies
	} {
		r, err := s.Search(ctx, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if len(r.Messages) != 2 {
			t.Errorf("%+v: %d results, want both rows", q, len(r.Messages))
			continue
		}
		if q.Text == `"zanzibar vanilla"` {
			for _, m := range r.Messages {
				if m.Snippet != want || !strings.Contains(m.Snippet, "zanzibar vanilla") {
					t.Errorf("snippet of %d = %q, want %q", m.ID, m.Snippet, want)
				}
			}
		}
	}
	tp, err := s.Thread(ctx, newID, 0, 10, 400)
	if err != nil || len(tp.Messages) == 0 || tp.Messages[0].Snippet != snippet(text, nil, 400) {
		t.Errorf("thread snippet: %+v %v", tp.Messages, err)
	}
	for _, ft := range ftsTables {
		tbl := ft.name
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO `+tbl+`(`+tbl+`, rank) VALUES ('integrity-check', 1)`); err != nil {
			t.Errorf("%s integrity: %v", tbl, err)
		}
	}
}

// TestCompressedBodyUpgradeAndDeleteLeaveNoResidue: replacing a partial
// compressed body removes its old terms from both indexes, and removing
// messages (an account deleted with its mail) removes all of their terms.
func TestCompressedBodyUpgradeAndDeleteLeaveNoResidue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	partial := longBody("the partialonly marker")
	full := longBody("the wombatfinale marker")
	if _, err := s.Ingest(ctx, []Item{
		{Account: "gone", Mailbox: "INBOX", Path: "g1", Raw: []byte(msg("g1@x", "a@x.org", "b@x.org", "goner", d, longBody("quetzalword here")))},
		{Account: "kept", Mailbox: "INBOX", Path: "k1", Raw: []byte(msg("k1@x", "a@x.org", "b@x.org", "upgrade", d, partial)), Partial: true},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(ctx, []Item{{Account: "kept", Mailbox: "INBOX", Path: "k2", Raw: []byte(msg("k1@x", "a@x.org", "b@x.org", "upgrade", d, full))}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM accounts WHERE name = 'gone'`); err != nil {
		t.Fatal(err)
	}
	// The index itself, not the search (which joins live rows), must have
	// forgotten the removed words.
	for _, c := range []struct {
		tbl, match string
		want       int
	}{
		{"messages_fts", "partialonly", 0},
		{"messages_fts", "quetzalword", 0},
		{"messages_fts", "wombatfinale", 1},
		{"messages_tri", "partialonl", 0},
		{"messages_tri", "quetzalwor", 0},
		{"messages_tri", "wombatfinal", 1},
		{"messages_hdr_tri", "goner", 0},
		{"messages_hdr_tri", "upgrade", 1},
	} {
		if c.tbl != "messages_fts" {
			c.match, _ = search.Trigrams(c.match)
		}
		var n int
		if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM `+c.tbl+` WHERE `+c.tbl+` MATCH ?`, c.match).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("%s MATCH %s: %d rows, want %d", c.tbl, c.match, n, c.want)
		}
	}
	var docs int
	s.DB().QueryRowContext(ctx, `SELECT count(*) FROM messages_fts_docsize`).Scan(&docs)
	if docs != 1 {
		t.Errorf("messages_fts holds %d documents, want 1", docs)
	}
	for _, ft := range ftsTables {
		tbl := ft.name
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO `+tbl+`(`+tbl+`, rank) VALUES ('integrity-check', 1)`); err != nil {
			t.Errorf("%s integrity: %v", tbl, err)
		}
	}
}

// TestMigrationFromUncompressedSchema builds a database as the schema
// before compression left it (plain TEXT bodies, full-text tables over
// messages), opens it with this version and checks that searches, reads
// and threads answer as in a database written by this version.
func TestMigrationFromUncompressedSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	maildir := filepath.Join(t.TempDir(), "Mail")
	if _, err := mailbench.Generate(maildir, mailbench.Options{Messages: 120, Seed: 16, Start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Years: 1}); err != nil {
		t.Fatal(err)
	}
	ref := openStore(t, nil)
	if _, err := ref.Import(ctx, maildir, ImportOptions{}); err != nil {
		t.Fatal(err)
	}

	// The previous version's file: the migrations before the one that
	// compressed bodies, bodies as TEXT, its full-text tables built from
	// those rows.
	oldPath := filepath.Join(t.TempDir(), "old.db")
	compress := slices.IndexFunc(Schema.Migrations, func(m string) bool { return strings.Contains(m, "hestia_pack(body)") })
	old, err := store.Open(ctx, oldPath, store.Schema{Name: "mail", Migrations: Schema.Migrations[:compress]})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := old.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ATTACH DATABASE '` + ref.DB().Path + `' AS ref`,
		`PRAGMA foreign_keys = OFF`,
		`INSERT INTO accounts SELECT * FROM ref.accounts`,
		`INSERT INTO mailboxes SELECT * FROM ref.mailboxes`,
		`INSERT INTO threads SELECT * FROM ref.threads`,
		`INSERT INTO thread_participants SELECT * FROM ref.thread_participants`,
		`INSERT INTO messages SELECT * FROM ref.messages`,
		`UPDATE messages SET body = hestia_body(body)`,
		`INSERT INTO message_refs SELECT * FROM ref.message_refs`,
		`INSERT INTO message_paths SELECT * FROM ref.message_paths`,
		`INSERT INTO attachments SELECT * FROM ref.attachments`,
		`INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')`,
		`INSERT INTO messages_tri(messages_tri) VALUES ('rebuild')`,
		`INSERT INTO messages_hdr_tri(messages_hdr_tri) VALUES ('rebuild')`,
		`PRAGMA foreign_keys = ON`,
		`DETACH DATABASE ref`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	var textRows int
	old.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE typeof(body) = 'text'`).Scan(&textRows)
	if textRows != 120 {
		t.Fatalf("old file holds %d TEXT bodies, want 120", textRows)
	}
	old.Close()

	mig, err := Open(ctx, Options{DBPath: oldPath, BlobDir: filepath.Join(t.TempDir(), "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	defer mig.Close()
	if v, _ := mig.DB().Version(ctx); v != len(Schema.Migrations) {
		t.Errorf("migrated to version %d, want %d", v, len(Schema.Migrations))
	}
	if mode, _ := mig.DB().AutoVacuum(ctx); mode != 2 {
		t.Errorf("auto_vacuum = %d after the one-time compaction, want 2 (incremental)", mode)
	}
	var blobs, long int
	mig.DB().QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE typeof(body) = 'blob'), count(*) FILTER (WHERE length(hestia_body(body)) >= ?) FROM messages`, packMinBytes*8).Scan(&blobs, &long)
	if blobs < long || long == 0 {
		t.Errorf("%d bodies compressed, %d long ones", blobs, long)
	}
	for _, ft := range ftsTables {
		tbl := ft.name
		if _, err := mig.DB().ExecContext(ctx, `INSERT INTO `+tbl+`(`+tbl+`, rank) VALUES ('integrity-check', 1)`); err != nil {
			t.Errorf("%s integrity: %v", tbl, err)
		}
	}

	// Queries drawn from the mail itself: a word, a phrase, substring
	// filters on several fields.
	var sample, subject, from string
	ref.DB().QueryRowContext(ctx, `SELECT hestia_body(body), subject, from_addr FROM messages WHERE length(hestia_body(body)) > 200 ORDER BY id LIMIT 1`).Scan(&sample, &subject, &from)
	words := strings.Fields(sample)
	queries := []Query{
		{Text: words[1]},
		{Text: `"` + words[3] + " " + words[4] + `"`},
		{Text: "invoice"},
		{Body: words[5][:min(len(words[5]), 4)]},
		{From: from[:5]},
		{Subject: strings.Fields(subject)[0]},
		{Text: words[2], From: from[:4]},
		{},
	}
	for _, q := range queries {
		q.Count, q.Limit, q.NoVectors = true, 200, true
		want, err := ref.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mig.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if *got.Total != *want.Total || !reflect.DeepEqual(got.Messages, want.Messages) {
			t.Errorf("%+v: migrated file gives %d results, fresh one %d (or other rows/snippets)", q, *got.Total, *want.Total)
		}
		if *want.Total == 0 && q.Text != "invoice" {
			t.Errorf("%+v: no results; the query says nothing", q)
		}
	}
	rows, err := ref.DB().QueryContext(ctx, `SELECT id FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		want, err := ref.Read(ctx, id, 0, MaxBodyChars)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mig.Read(ctx, id, 0, MaxBodyChars)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("read %d differs: %v", id, err)
		}
		wt, err := ref.Thread(ctx, id, 0, 50, 400)
		if err != nil {
			t.Fatal(err)
		}
		gt, err := mig.Thread(ctx, id, 0, 50, 400)
		if err != nil || !reflect.DeepEqual(gt, wt) {
			t.Fatalf("thread of %d differs: %v", id, err)
		}
	}
	// The migrated file keeps taking mail.
	if _, err := mig.Ingest(ctx, []Item{{Account: "local", Mailbox: "INBOX", Path: "new1", Raw: []byte(msg("after@x", "a@x.org", "b@x.org", "after", "Mon, 5 Jan 2026 10:00:00 +0000", longBody("postmigration ocelot")))}}); err != nil {
		t.Fatal(err)
	}
	if r, err := mig.Search(ctx, Query{Text: "ocelot"}); err != nil || len(r.Messages) != 1 {
		t.Errorf("search after migration: %+v %v", r.Messages, err)
	}
}

// TestNewFileReleasesFreePages: a new file uses incremental auto-vacuum
// and an import leaves no free pages behind.
func TestNewFileReleasesFreePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	maildir := filepath.Join(t.TempDir(), "Mail")
	if _, err := mailbench.Generate(maildir, mailbench.Options{Messages: 300, Seed: 3, Start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Years: 1}); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, nil)
	if mode, _ := s.DB().AutoVacuum(ctx); mode != 2 {
		t.Fatalf("auto_vacuum = %d, want 2", mode)
	}
	if _, err := s.Import(ctx, maildir, ImportOptions{BatchSize: 50}); err != nil {
		t.Fatal(err)
	}
	var free int
	s.DB().QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free)
	if free != 0 {
		t.Errorf("%d free pages after the import", free)
	}
	if r, err := s.Search(ctx, Query{Text: "the", Count: true}); err != nil || *r.Total == 0 {
		t.Errorf("search after compaction: %v", err)
	}
}

func TestFirstChars(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 0, ""},
		{"abc", 3, "abc"},
		{"abcdef", 3, "abc"},
		{"café crème", 4, "café"},
		{"日本語テキスト", 3, "日本語"},
	} {
		if got := firstChars(c.in, c.n); got != c.want {
			t.Errorf("firstChars(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
