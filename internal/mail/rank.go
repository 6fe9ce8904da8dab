package mail

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sort"
	"strings"

	"modernc.org/libc"

	"github.com/hestia-dev/hestia/internal/mail/fts5"
)

// Ranking one common word without FTS5's bm25.
//
// ORDER BY rank makes FTS5's bm25 read every match's token count from the
// messages_fts_docsize table, one B-tree lookup per match: for a word in
// 30,000 of 100,000 messages that is ~50 ms of a ~60 ms search, while
// reading the word's matches with their columns from the index pages takes
// ~1 ms (package fts5). So the token counts of every message are kept as one
// row (fts_lengths), refreshed by the writers after the index changes, and
// a one-word search computes the same BM25 in Go from the word's doclist
// (or, for pages package fts5 does not read, its instances in the fts5vocab
// table messages_fts_instances) and those counts.
//
// The result must be exactly FTS5's order, so the formula below is
// bm25() as SQLite computes it (same constants, same operations, same
// rounding), and the counts are used only while they describe the index
// as it is: fts_lengths records the index's averages and structure records
// (messages_fts_data rows 1 and 10) as they were when it was computed.
// Every write to the index rewrites both (the structure record counts the
// segments written), so a mismatch means stale counts, and the search
// falls back to FTS5's own bm25. TestWordRankingIsFTS5s compares the two
// score by score.

const (
	// ftsAveragesRow and ftsStructureRow are FTS5's fixed ids in the
	// %_data table (FTS5_AVERAGES_ROWID, FTS5_STRUCTURE_ROWID).
	ftsAveragesRow  = 1
	ftsStructureRow = 10
	// minWordDocs is where loading the counts (a 200 KB row at 100,000
	// messages) starts to pay against FTS5's lookup of each match's
	// count. Once they are in memory (the daemon loads them at start), a
	// word of any frequency is ranked from them.
	minWordDocs = 200
)

// ftsColumns is the number of messages_fts columns.
const ftsColumns = 4

// columnWeight is the weight of the messages_fts column whose name starts
// with letter in its rank function, 'bm25(4.0, 2.0, 1.0, 1.0)' (see
// Schema): subject, from_addr, to_addr, body. 0: no such column.
func columnWeight(letter byte) float64 {
	switch letter {
	case 's':
		return 4
	case 'f':
		return 2
	case 't', 'b':
		return 1
	}
	return 0
}

// docLengths is the token count of each indexed message (all columns),
// for the index state named by averages and structure.
type docLengths struct {
	averages, structure []byte
	base                int64  // id of the first count
	lengths             []byte // little-endian uint16 by id - base; 0: not indexed, bigLength: in big
	big                 []byte // (id - base, count) as little-endian uint32 pairs, by id
	rows, tokens        int64  // from the averages record
}

func (d *docLengths) current(averages, structure []byte) bool {
	return d != nil && bytes.Equal(d.averages, averages) && bytes.Equal(d.structure, structure)
}

// plainWord returns the lower-cased word when the match expression all is
// one quoted ASCII word (search.MatchAll of a one-word query), the only
// case whose FTS5 token is known without running the tokenizer.
func plainWord(all string) (string, bool) {
	if len(all) < 3 || all[0] != '"' || all[len(all)-1] != '"' {
		return "", false
	}
	w := []byte(all[1 : len(all)-1])
	for i, c := range w {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z':
			w[i] = c + 'a' - 'A'
		default:
			return "", false
		}
	}
	return string(w), true
}

// topScored returns the n best of docs in the order of "ORDER BY rank + 0,
// rowid" for their scores.
func topScored(docs []int64, scores []float64, n int) []int64 {
	// The best n by a bounded heap whose root is the worst kept: most of
	// a common word's matches lose against it in one comparison.
	better := func(a, b int) bool { // FTS5's rank is -score; ties by id
		if scores[a] != scores[b] {
			return scores[a] > scores[b]
		}
		return docs[a] < docs[b]
	}
	h := make([]int, 0, min(n, len(docs)))
	down := func(i int) {
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && better(h[w], h[l]) {
				w = l
			}
			if r < len(h) && better(h[w], h[r]) {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for i := range docs {
		switch {
		case len(h) < n:
			h = append(h, i)
			for j := len(h) - 1; j > 0 && better(h[(j-1)/2], h[j]); j = (j - 1) / 2 {
				h[j], h[(j-1)/2] = h[(j-1)/2], h[j]
			}
		case n > 0 && better(i, h[0]):
			h[0] = i
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b int) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	ids := make([]int64, len(h))
	for i, j := range h {
		ids[i] = docs[j]
	}
	return ids
}

// plainPhrase returns the lower-cased words of the match expression all
// when it is one quoted phrase of two or more plain words (plainWord's)
// separated by single spaces: a phrase whose FTS5 tokens are its words.
func plainPhrase(all string) ([]string, bool) {
	if len(all) < 3 || all[0] != '"' || all[len(all)-1] != '"' {
		return nil, false
	}
	words := strings.Split(all[1:len(all)-1], " ")
	if len(words) < 2 {
		return nil, false
	}
	for i, w := range words {
		lw, ok := plainWord(`"` + w + `"`)
		if !ok {
			return nil, false
		}
		words[i] = lw
	}
	return words, true
}

// maxAnchorPages bounds the doclist phraseScores reads for its anchor word:
// eight leaf pages hold a word of a few thousand messages.
const maxAnchorPages = 8

// phraseScores returns every message holding the phrase all of plain words
// (plainPhrase), in id order, with its BM25 score as FTS5 computes it.
// FTS5's bm25 evaluates a phrase twice: once to match, and once more over
// the whole index to count the messages holding it, for its IDF (half of a
// phrase search at 100,000 messages). Here FTS5 matches it once, and each
// message's weighted frequency of the phrase comes from the doclist of a
// word that occurs in the phrase once, the anchor: a message that holds
// the phrase and the anchor only once holds the phrase exactly once, in
// the anchor's column. The token counts come from memory (the daemon) or,
// for a few matches, from their docsize records. A message holding the
// anchor more than once or no anchor of a few pages (maxAnchorPages) leave
// the ranking to FTS5 (ok false).
func (s *Store) phraseScores(ctx context.Context, all string, words []string) (docs []int64, scores []float64, ok bool, err error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, false, fmt.Errorf("ranking %s: %w", all, err)
	}
	defer tx.Rollback()
	averages, structure, err := ftsState(ctx, tx)
	if err != nil || averages == nil {
		return nil, nil, false, err
	}
	// The messages' token counts: in memory (the daemon), or for a few
	// matches (a one-shot process) from their docsize records.
	dl := s.docLengths.Load()
	warm := dl.current(averages, structure)
	rowCount, tokens, err := parseAverages(averages)
	if err != nil {
		return nil, nil, false, nil
	}
	// Words that occur once in the phrase, longest first: a longer word
	// tends to be a rarer one, with a shorter doclist.
	times := map[string]int{}
	for _, w := range words {
		times[w]++
	}
	var cands []string
	for _, w := range words {
		if times[w] == 1 {
			cands = append(cands, w)
		}
	}
	slices.SortStableFunc(cands, func(a, b string) int { return len(b) - len(a) })
	var anchor fts5.Doclist
	found := false
	for _, w := range cands {
		if anchor, found, err = s.wordEntries(ctx, tx, w, structure, maxAnchorPages, true); err != nil {
			return nil, nil, false, fmt.Errorf("ranking %s: %w", all, err)
		}
		if found {
			break
		}
	}
	if !found {
		return nil, nil, false, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?`, all)
	if err != nil {
		return nil, nil, false, fmt.Errorf("ranking %s: %w", all, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, nil, false, fmt.Errorf("ranking %s: %w", all, err)
		}
		docs = append(docs, id)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("ranking %s: %w", all, err)
	}
	slices.Sort(docs)
	if !warm && len(docs) > maxColdPhraseDocs {
		// More matches than docsize lookups pay for: every message's
		// count, kept for the next search, as wordScores does.
		if dl, err = s.loadLengths(ctx, tx, averages, structure); dl == nil || err != nil {
			return nil, nil, false, err
		}
		warm = true
	}
	length := func(id int64) (uint32, bool, error) {
		d, ok := dl.length(id)
		return d, ok, nil
	}
	if !warm {
		size, err := tx.PrepareContext(ctx, `SELECT sz FROM messages_fts_docsize WHERE id = ?`)
		if err != nil {
			return nil, nil, false, fmt.Errorf("ranking %s: %w", all, err)
		}
		defer size.Close()
		length = func(id int64) (uint32, bool, error) {
			var sz []byte
			if err := size.QueryRowContext(ctx, id).Scan(&sz); errors.Is(err, sql.ErrNoRows) {
				return 0, false, nil
			} else if err != nil {
				return 0, false, fmt.Errorf("ranking %s: %w", all, err)
			}
			d, ok := docsizeTotal(sz)
			return d, ok, nil
		}
	}
	bm := newBM25(rowCount, tokens, len(docs))
	scores = make([]float64, len(docs))
	j := 0
	for i, id := range docs {
		j += sort.Search(len(anchor.IDs)-j, func(k int) bool { return anchor.IDs[j+k] >= id })
		if j == len(anchor.IDs) || anchor.IDs[j] != id || anchor.Count[j] != 1 {
			return nil, nil, false, nil
		}
		d, ok, err := length(id)
		if err != nil || !ok {
			return nil, nil, false, err
		}
		scores[i] = bm.score(anchor.Freq[j], d)
	}
	return docs, scores, true, nil
}

// loadLengths reads every message's token count and keeps it for the
// next search; nil if what is stored is not the index's current state
// (averages and structure), which leaves the ranking to FTS5.
func (s *Store) loadLengths(ctx context.Context, q querier, averages, structure []byte) (*docLengths, error) {
	dl, err := loadDocLengths(ctx, q)
	if err != nil {
		return nil, err
	}
	if !dl.current(averages, structure) {
		return nil, nil
	}
	s.docLengths.Store(dl)
	return dl, nil
}

// maxColdPhraseDocs bounds the matches of a phrase that phraseScores
// ranks, without the counts in memory, from each match's docsize record;
// past it, it loads them all.
const maxColdPhraseDocs = 200

// wordScores returns every message holding word (in id order) with its
// BM25 score as FTS5 computes it.
func (s *Store) wordScores(ctx context.Context, word string, minDocs int) (docs []int64, scores []float64, ok bool, err error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, false, fmt.Errorf("ranking %q: %w", word, err)
	}
	defer tx.Rollback()
	averages, structure, err := ftsState(ctx, tx)
	if err != nil || averages == nil {
		return nil, nil, false, err
	}
	docs, freq, ok, err := s.wordDoclist(ctx, tx, word, structure)
	if err != nil {
		return nil, nil, false, fmt.Errorf("ranking %q: %w", word, err)
	}
	if !ok {
		// Pages the reader does not read (or no reader): the instances through the
		// fts5vocab table, each as id*128 + the first letter of its
		// column, in id order, in one string (the rows one by one cost
		// more in database/sql than in FTS5).
		var list sql.NullString
		err = tx.QueryRowContext(ctx, `SELECT group_concat(doc * 128 + unicode(col)) FROM messages_fts_instances WHERE term = ?`, word).Scan(&list)
		if err != nil {
			return nil, nil, false, fmt.Errorf("ranking %q: %w", word, err)
		}
		if docs, freq, err = wordFrequencies(list.String); err != nil {
			return nil, nil, false, fmt.Errorf("ranking %q: %w", word, err)
		}
	}
	if len(docs) == 0 {
		return nil, nil, true, nil // no message holds it: nothing to score
	}
	dl := s.docLengths.Load()
	warm := dl.current(averages, structure)
	if len(docs) < minDocs && !warm {
		return nil, nil, false, nil
	}
	if !warm {
		if dl, err = s.loadLengths(ctx, tx, averages, structure); dl == nil || err != nil {
			return nil, nil, false, err
		}
	}
	bm := newBM25(dl.rows, dl.tokens, len(docs))
	scores = make([]float64, len(docs))
	for i, id := range docs {
		d, ok := dl.length(id)
		if !ok {
			return nil, nil, false, nil
		}
		scores[i] = bm.score(freq[i], d)
	}
	return docs, scores, true, nil
}

// wordDoclist is fts5.Reader.Word, or ok false when the linked FTS5 is
// not the build the reader was verified with (see Open).
func (s *Store) wordDoclist(ctx context.Context, q querier, word string, structure []byte) (ids []int64, freq []float64, ok bool, err error) {
	if s.pages == nil {
		return nil, nil, false, nil
	}
	return s.pages.Word(ctx, q, word, structure)
}

// wordEntries is fts5.Reader.Entries, or found false without a reader.
func (s *Store) wordEntries(ctx context.Context, q querier, word string, structure []byte, maxPages int64, counts bool) (l fts5.Doclist, found bool, err error) {
	if s.pages == nil {
		return fts5.Doclist{}, false, nil
	}
	return s.pages.Entries(ctx, q, word, structure, maxPages, counts)
}

// newPageReader is the reader of messages_fts, its columns weighted as in
// its rank function.
func newPageReader() *fts5.Reader {
	return fts5.NewReader("messages_fts", []float64{columnWeight('s'), columnWeight('f'), columnWeight('t'), columnWeight('b')})
}

// bm25Scorer is FTS5's bm25() for a one-phrase query: hits rows of rows
// hold the phrase, tokens is the index's token total. The logarithm is
// the C library's that SQLite calls (Go's math.Log differs in the last
// bit for some arguments), and the explicit conversions keep Go from
// fusing operations, so each score is bit for bit SQLite's.
type bm25Scorer struct{ idf, avgdl float64 }

func newBM25(rows, tokens int64, hits int) bm25Scorer {
	tls := libc.NewTLS()
	defer tls.Close()
	idf := libc.Xlog(tls, (float64(rows-int64(hits))+0.5)/(float64(hits)+0.5))
	if idf <= 0 {
		idf = 1e-06
	}
	return bm25Scorer{idf: idf, avgdl: float64(tokens) / float64(rows)}
}

// score is the row's: f is the phrase's weighted frequency in it, d its
// token count.
func (b bm25Scorer) score(f float64, d uint32) float64 {
	const k1, bb = 1.2, 0.75
	D := float64(d)
	return float64(0) + float64(b.idf*(float64(f*(k1+1))/(f+float64(k1*(1-bb+float64(bb*D)/b.avgdl)))))
}

// wordFrequencies parses group_concat's "id*128+letter,..." (in id order)
// into the matching ids and their weighted frequencies.
func wordFrequencies(list string) (docs []int64, freq []float64, err error) {
	if list == "" {
		return nil, nil, nil
	}
	if list[len(list)-1] == ',' {
		return nil, nil, errors.New("bad instance list: empty entry at the end")
	}
	last := int64(-1)
	for i := 0; i < len(list); {
		j := i
		var v int64
		for j < len(list) && list[j] != ',' {
			c := list[j]
			if c < '0' || c > '9' || v > math.MaxInt64/10-9 {
				return nil, nil, fmt.Errorf("bad instance list near %q", list[i:min(len(list), i+20)])
			}
			v = v*10 + int64(c-'0')
			j++
		}
		if j == i {
			return nil, nil, errors.New("bad instance list: empty entry")
		}
		id, w := v/128, columnWeight(byte(v%128))
		if w == 0 {
			return nil, nil, fmt.Errorf("bad instance list: no column starts with %q", rune(v%128))
		}
		if id != last {
			if id < last {
				return nil, nil, errors.New("bad instance list: ids out of order")
			}
			docs = append(docs, id)
			freq = append(freq, 0)
			last = id
		}
		freq[len(freq)-1] += w
		i = j + 1
	}
	return docs, freq, nil
}

// bigLength marks a count of 65,535 tokens or more, kept apart: two bytes
// a message instead of four (200 KB at 100,000 messages).
const bigLength = 0xFFFF

func (d *docLengths) length(id int64) (uint32, bool) {
	i := id - d.base
	if i < 0 || 2*i >= int64(len(d.lengths)) {
		return 0, false
	}
	n := uint32(binary.LittleEndian.Uint16(d.lengths[2*i:]))
	if n == bigLength {
		lo := sort.Search(len(d.big)/8, func(m int) bool { return binary.LittleEndian.Uint32(d.big[8*m:]) >= uint32(i) })
		if lo == len(d.big)/8 || binary.LittleEndian.Uint32(d.big[8*lo:]) != uint32(i) {
			return 0, false
		}
		n = binary.LittleEndian.Uint32(d.big[8*lo+4:])
	}
	return n, n > 0
}

// packLengths lays out counts (by id - base) as stored: the number of
// ids, a uint16 each, then the big ones.
func packLengths(counts []uint32) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(counts)))
	var big []byte
	for i, n := range counts {
		if n >= bigLength {
			big = binary.LittleEndian.AppendUint32(big, uint32(i))
			big = binary.LittleEndian.AppendUint32(big, n)
			n = bigLength
		}
		out = binary.LittleEndian.AppendUint16(out, uint16(n))
	}
	return append(out, big...)
}

// unpackLengths splits a stored blob; ok is false for one of another shape.
func unpackLengths(b []byte) (lengths, big []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := int64(binary.LittleEndian.Uint32(b))
	if int64(len(b)) < 4+2*n || (int64(len(b))-4-2*n)%8 != 0 {
		return nil, nil, false
	}
	return b[4 : 4+2*n], b[4+2*n:], true
}

// ftsState reads the word index's averages and structure records; both are
// nil for an index never written.
func ftsState(ctx context.Context, q querier) (averages, structure []byte, err error) {
	err = q.QueryRowContext(ctx, `SELECT (SELECT block FROM messages_fts_data WHERE id = ?), (SELECT block FROM messages_fts_data WHERE id = ?)`,
		ftsAveragesRow, ftsStructureRow).Scan(&averages, &structure)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the word index's state: %w", err)
	}
	return averages, structure, nil
}

// storedLengths reads the index state and the stored counts in one read
// transaction; dl is nil when no row is stored or it does not decode.
func (s *Store) storedLengths(ctx context.Context) (dl *docLengths, averages, structure []byte, err error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading message lengths: %w", err)
	}
	defer tx.Rollback()
	if averages, structure, err = ftsState(ctx, tx); err != nil {
		return nil, nil, nil, err
	}
	dl, err = loadDocLengths(ctx, tx)
	return dl, averages, structure, err
}

// rankLengthsCurrent says whether the stored counts were computed for the
// index as it is and still decode (a row written by an older layout, or
// damaged, is stale too: otherwise only --full would ever replace it). It
// reads the index state and the one row (200 KB at 100,000 messages). An
// index never written is current when no counts are stored.
func (s *Store) rankLengthsCurrent(ctx context.Context) (bool, error) {
	dl, averages, structure, err := s.storedLengths(ctx)
	if err != nil {
		return false, err
	}
	if averages == nil {
		var n int
		err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM fts_lengths`).Scan(&n)
		return n == 0, err
	}
	return dl.current(averages, structure), nil
}

// lengthsLookCurrent is rankLengthsCurrent without reading the counts: the
// stored row was computed for the index as it is, and its size is the one
// packLengths gives for the ids the index holds (a row of another layout
// would not be). It does not check the row's checksum.
func (s *Store) lengthsLookCurrent(ctx context.Context) (bool, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, fmt.Errorf("reading message lengths: %w", err)
	}
	defer tx.Rollback()
	averages, structure, err := ftsState(ctx, tx)
	if err != nil {
		return false, err
	}
	var storedAverages, storedStructure []byte
	var base, size int64
	err = tx.QueryRowContext(ctx, `SELECT averages, structure, base, length(lengths) FROM fts_lengths WHERE id = 1`).Scan(&storedAverages, &storedStructure, &base, &size)
	if errors.Is(err, sql.ErrNoRows) {
		return averages == nil, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading message lengths: %w", err)
	}
	if !bytes.Equal(averages, storedAverages) || !bytes.Equal(structure, storedStructure) {
		return false, nil
	}
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(id) FROM messages_fts_docsize`).Scan(&last); err != nil {
		return false, fmt.Errorf("reading message lengths: %w", err)
	}
	n := int64(0)
	if last.Valid {
		n = last.Int64 - base + 1
	}
	return n >= 0 && size >= 4+2*n && (size-4-2*n)%8 == 0, nil
}

// loadDocLengths reads the stored counts; a missing or damaged row is
// treated as stale (nil), so the search still answers through FTS5.
func loadDocLengths(ctx context.Context, q querier) (*docLengths, error) {
	var d docLengths
	var crc int64
	var packed []byte
	err := q.QueryRowContext(ctx, `SELECT averages, structure, base, lengths, crc FROM fts_lengths WHERE id = 1`).Scan(&d.averages, &d.structure, &d.base, &packed, &crc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading message lengths: %w", err)
	}
	if lengthsCRC(packed) != crc {
		return nil, nil
	}
	return decodeLengths(d.averages, d.structure, d.base, packed), nil
}

// decodeLengths is the counts as stored (packLengths' layout) for the index
// state averages and structure; nil when they do not decode.
func decodeLengths(averages, structure []byte, base int64, packed []byte) *docLengths {
	d := &docLengths{averages: averages, structure: structure, base: base}
	var ok bool
	if d.lengths, d.big, ok = unpackLengths(packed); !ok {
		return nil
	}
	var err error
	if d.rows, d.tokens, err = parseAverages(averages); err != nil {
		return nil
	}
	return d
}

// parseAverages decodes FTS5's averages record: the row count, then the
// token total of each column, as SQLite varints.
func parseAverages(rec []byte) (rows, tokens int64, err error) {
	v, n := fts5.Varint(rec)
	if n == 0 {
		return 0, 0, errors.New("empty averages record")
	}
	rows, rec = int64(v), rec[n:]
	for col := 0; col < ftsColumns && len(rec) > 0; col++ {
		if v, n = fts5.Varint(rec); n == 0 {
			return 0, 0, errors.New("damaged averages record")
		}
		tokens += int64(v)
		rec = rec[n:]
	}
	if rows <= 0 || tokens < 0 {
		return 0, 0, fmt.Errorf("averages record with %d rows", rows)
	}
	return rows, tokens, nil
}

// WarmRanking loads the stored message token counts into memory when they
// are current, so the first one-word searches do not read them. A
// long-running process calls it at start.
func (s *Store) WarmRanking(ctx context.Context) error {
	dl, averages, structure, err := s.storedLengths(ctx)
	if err == nil && dl.current(averages, structure) {
		s.docLengths.Store(dl)
	}
	return err
}

// RefreshRankLengths recomputes the stored message token counts when the
// word index changed since they were computed (a scan of its docsize
// table: ~35 ms at 100,000 messages). Writers call it after changing the
// index; until it runs, common-word searches rank through FTS5 (slower,
// same order). Finding them current costs two small reads and takes no
// lock. It reports whether it wrote.
func (s *Store) RefreshRankLengths(ctx context.Context) (bool, error) {
	return s.refreshRankLengths(ctx, false)
}

// refreshRankLengths with force recomputes them even when they look
// current (hestia mail import --full: a check that trusts nothing stored).
func (s *Store) refreshRankLengths(ctx context.Context, force bool) (bool, error) {
	if !force {
		current, err := s.rankLengthsCurrent(ctx)
		if current || err != nil {
			return false, err
		}
	}
	wrote := false
	var fresh *docLengths // what was stored, as a search reads it
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		averages, structure, err := ftsState(ctx, tx)
		if err != nil {
			return err
		}
		if averages == nil {
			_, err := tx.ExecContext(ctx, `DELETE FROM fts_lengths`)
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, sz FROM messages_fts_docsize ORDER BY id`)
		if err != nil {
			return fmt.Errorf("reading message lengths: %w", err)
		}
		defer rows.Close()
		var counts []uint32
		base, next := int64(-1), int64(0)
		for rows.Next() {
			var id int64
			var sz []byte
			if err := rows.Scan(&id, &sz); err != nil {
				return fmt.Errorf("reading message lengths: %w", err)
			}
			d, ok := docsizeTotal(sz)
			if !ok {
				return fmt.Errorf("message %d: damaged docsize record", id)
			}
			if base < 0 {
				base, next = id, id
			}
			for ; next < id; next++ {
				counts = append(counts, 0) // an id not in the index
			}
			counts = append(counts, d)
			next = id + 1
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reading message lengths: %w", err)
		}
		rows.Close()
		if base < 0 {
			base = 0
		}
		packed := packLengths(counts)
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO fts_lengths (id, averages, structure, base, lengths, crc) VALUES (1, ?, ?, ?, ?, ?)`,
			averages, structure, base, packed, lengthsCRC(packed)); err != nil {
			return fmt.Errorf("storing message lengths: %w", err)
		}
		wrote, fresh = true, decodeLengths(averages, structure, base, packed)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("refreshing message lengths: %w", err)
	}
	if fresh != nil && s.docLengths.Load() != nil {
		// A process that had them in memory keeps ranking every word from
		// them (see minWordDocs).
		s.docLengths.Store(fresh)
	}
	return wrote, nil
}

// docsizeTotal is a message's token count from its docsize record (one
// varint a column).
func docsizeTotal(sz []byte) (uint32, bool) {
	var d uint32
	for len(sz) > 0 {
		v, n := fts5.Varint(sz)
		if n == 0 {
			return 0, false
		}
		d += uint32(v) // FTS5 reads each count as a 32-bit int
		sz = sz[n:]
	}
	return d, true
}

// lengthsCRC checks the stored counts, so that a damaged row is never
// ranked from (CRC-32C, in hardware: microseconds for 100,000 counts).
func lengthsCRC(b []byte) int64 {
	return int64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}
