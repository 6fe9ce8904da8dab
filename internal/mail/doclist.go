package mail

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Reading one word's matches straight from FTS5's pages.
//
// The fts5vocab instance table hands a common word's 36,000 instances
// (30,000 messages at 100,000) through SQLite's virtual machine one row at
// a time, ~7 ms of a ~10 ms search. The same data is ~45 leaf pages of
// messages_fts_data: the word's doclist, message ids delta-coded and
// each message's positions by column. wordDoclist reads those pages and
// decodes them, following FTS5's record formats (fts5_index.c: structure
// record, leaf pages with a 4-byte header and a footer of term offsets,
// prefix-compressed terms, doclists that run on across pages).
//
// It reads only what it fully understands: the first structure layout,
// no incremental merge in progress, every byte of the doclist accounted
// for. Anything else reports ok=false and the caller asks the fts5vocab
// table instead, which is always right. Where segments overlap, the
// newest entry of a message wins and an entry without positions (a
// delete) hides the message, as FTS5's own merge does.
// TestWordDoclistIsFTS5s compares both for every word of indexes of one
// and of many segments, with deletions, updates and doclists that span
// pages.

// ftsSegment is one segment of the index: its id and leaf page range.
type ftsSegment struct {
	id, first, last int64
}

// ftsSegments parses a structure record (layout 1) into its segments,
// newest first; ok is false for any other layout, a merge in progress or
// a damaged record.
func ftsSegments(rec []byte) (segs []ftsSegment, ok bool) {
	if len(rec) < 4 || rec[0] == 0xff { // 0xff000001: the second layout (tombstones)
		return nil, false
	}
	p := rec[4:]
	next := func() (int64, bool) {
		v, n := sqliteVarint(p)
		if n == 0 || v > 1<<62 {
			return 0, false
		}
		p = p[n:]
		return int64(v), true
	}
	levels, ok1 := next()
	total, ok2 := next()
	_, ok3 := next() // write counter
	if !ok1 || !ok2 || !ok3 || levels > 64 || total > 2000 {
		return nil, false
	}
	var all [][]ftsSegment
	for l := int64(0); l < levels; l++ {
		merging, ok1 := next()
		n, ok2 := next()
		if !ok1 || !ok2 || merging != 0 || n > total {
			return nil, false
		}
		var level []ftsSegment
		for i := int64(0); i < n; i++ {
			id, ok1 := next()
			first, ok2 := next()
			last, ok3 := next()
			if !ok1 || !ok2 || !ok3 || id <= 0 || id > 0xffff || first <= 0 || last < first {
				return nil, false
			}
			level = append(level, ftsSegment{id, first, last})
		}
		all = append(all, level)
	}
	if len(p) != 0 {
		return nil, false
	}
	// Level 0 holds the newest segments, each level oldest first.
	for _, level := range all {
		for i := len(level) - 1; i >= 0; i-- {
			segs = append(segs, level[i])
		}
	}
	if int64(len(segs)) != total {
		return nil, false
	}
	return segs, true
}

// leafRowid is the messages_fts_data id of a segment's leaf page
// (FTS5_SEGMENT_ROWID: segment id above 37 bits of page number, height
// and doclist-index flag).
func leafRowid(seg, page int64) int64 { return seg<<37 + page }

// errNotUnderstood marks pages wordDoclist leaves to FTS5.
var errNotUnderstood = errors.New("index pages not understood")

// errTooLong marks a doclist longer than its reader's page limit.
var errTooLong = errors.New("doclist longer than the limit")

// wordDoclist returns the messages holding word (id order) with its
// weighted frequency in each, decoded from the index pages for the
// structure record structure. ok is false when it cannot say.
func wordDoclist(ctx context.Context, q querier, word string, structure []byte) (docs []int64, freq []float64, ok bool, err error) {
	l, ok, err := wordEntries(ctx, q, word, structure, 0, false)
	return l.ids, l.freq, ok, err
}

// wordEntries is wordDoclist with each message's number of positions
// (count) when counts is set; ok is also false when a segment's doclist
// runs over more than maxPages pages (0: no limit).
func wordEntries(ctx context.Context, q querier, word string, structure []byte, maxPages int64, counts bool) (merged segmentDoclist, ok bool, err error) {
	segs, ok := ftsSegments(structure)
	if !ok {
		return segmentDoclist{}, false, nil
	}
	key := []byte("0" + word) // the main index's terms start with '0'
	var lists []segmentDoclist
	for _, seg := range segs {
		var page int64
		err := q.QueryRowContext(ctx, `SELECT pgno FROM messages_fts_idx WHERE segid = ? AND term <= ? ORDER BY term DESC LIMIT 1`, seg.id, key).Scan(&page)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			page = seg.first
		case err != nil:
			return segmentDoclist{}, false, fmt.Errorf("reading the word index: %w", err)
		default:
			page >>= 1 // the low bit flags a doclist index
		}
		if page < seg.first || page > seg.last {
			return segmentDoclist{}, false, nil
		}
		list, err := readDoclist(ctx, q, seg, page, key, maxPages, counts)
		if errors.Is(err, errNotUnderstood) || errors.Is(err, errTooLong) {
			return segmentDoclist{}, false, nil
		}
		if err != nil {
			return segmentDoclist{}, false, err
		}
		lists = append(lists, list)
	}
	if len(lists) == 1 { // one segment (after a merge): only deletes to drop, in place
		l := lists[0]
		n := 0
		for i, id := range l.ids {
			if l.freq[i] > 0 {
				l.ids[n], l.freq[n] = id, l.freq[i]
				if l.count != nil {
					l.count[n] = l.count[i]
				}
				n++
			}
		}
		l.ids, l.freq = l.ids[:n], l.freq[:n]
		if l.count != nil {
			l.count = l.count[:n]
		}
		return l, true, nil
	}
	// Several: a k-way merge by id; on equal ids the newest segment's
	// entry (the lowest list index) decides.
	total := 0
	for _, l := range lists {
		total += len(l.ids)
	}
	merged = segmentDoclist{ids: make([]int64, 0, total), freq: make([]float64, 0, total)}
	if counts {
		merged.count = make([]int32, 0, total)
	}
	at := make([]int, len(lists))
	for {
		best := -1
		for i, l := range lists {
			if at[i] < len(l.ids) && (best < 0 || l.ids[at[i]] < lists[best].ids[at[best]]) {
				best = i
			}
		}
		if best < 0 {
			return merged, true, nil
		}
		b := lists[best]
		id, f := b.ids[at[best]], b.freq[at[best]]
		if f > 0 {
			merged.ids, merged.freq = append(merged.ids, id), append(merged.freq, f)
			if counts {
				merged.count = append(merged.count, b.count[at[best]])
			}
		}
		for i, l := range lists {
			if at[i] < len(l.ids) && l.ids[at[i]] == id {
				at[i]++
			}
		}
	}
}

// segmentDoclist is one segment's doclist of a word: ids ascending, the
// weighted frequency of each (0: an entry without positions, a delete),
// and when asked for, the number of its positions.
type segmentDoclist struct {
	ids   []int64
	freq  []float64
	count []int32
}

// readDoclist finds key on leaf page of seg and decodes its doclist, with
// counts when counts is set; errTooLong when it runs over more than
// maxPages pages (0: no limit).
func readDoclist(ctx context.Context, q querier, seg ftsSegment, page int64, key []byte, maxPages int64, counts bool) (segmentDoclist, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, block FROM messages_fts_data WHERE id BETWEEN ? AND ? ORDER BY id`, leafRowid(seg.id, page), leafRowid(seg.id, seg.last))
	if err != nil {
		return segmentDoclist{}, fmt.Errorf("reading the word index: %w", err)
	}
	defer rows.Close()
	d := doclistDecoder{counts: counts}
	for want := page; rows.Next(); want++ {
		if maxPages > 0 && want-page >= maxPages {
			return segmentDoclist{}, errTooLong
		}
		var id int64
		var block sql.RawBytes // copied into d.buf before the next row
		if err := rows.Scan(&id, &block); err != nil {
			return segmentDoclist{}, fmt.Errorf("reading the word index: %w", err)
		}
		if id != leafRowid(seg.id, want) { // a missing page
			return segmentDoclist{}, errNotUnderstood
		}
		leaf, err := parseLeaf(block)
		if err != nil {
			return segmentDoclist{}, err
		}
		var start, end int
		if want == page {
			// The page the term index names: find the term on it.
			off, found, err := leaf.find(key)
			if err != nil || !found {
				return segmentDoclist{}, err
			}
			start, end = off, leaf.termEnd(off)
			d.startAbsolute(len(d.buf))
		} else {
			// A following page: the doclist runs on from its header up
			// to its first term; a first id on the page is absolute.
			start, end = 4, leaf.size
			if len(leaf.terms) > 0 {
				end = leaf.terms[0]
			}
			if leaf.firstRowid != 0 {
				if leaf.firstRowid < start || leaf.firstRowid > end {
					return segmentDoclist{}, errNotUnderstood
				}
				d.startAbsolute(len(d.buf) + leaf.firstRowid - start)
			}
		}
		if d.buf == nil {
			// Room for a common word's doclist (~45 pages for one in
			// 30,000 messages): each regrowth copies it all.
			pages := int64(64)
			if maxPages > 0 {
				pages = min(pages, maxPages)
			}
			d.buf = make([]byte, 0, int(pages)*len(leaf.data))
		}
		d.buf = append(d.buf, leaf.data[start:end]...)
		if want > page && len(leaf.terms) > 0 || want == page && end < leaf.size {
			break // the next term begins: the doclist ended here
		}
	}
	if err := rows.Err(); err != nil {
		return segmentDoclist{}, fmt.Errorf("reading the word index: %w", err)
	}
	return d.decode()
}

// ftsLeaf is one leaf page: its data up to the footer, where its first id
// is (0: none before the first term), and its terms' offsets.
type ftsLeaf struct {
	data       []byte
	size       int // start of the footer
	firstRowid int
	terms      []int
}

func parseLeaf(b []byte) (ftsLeaf, error) {
	if len(b) < 4 {
		return ftsLeaf{}, errNotUnderstood
	}
	l := ftsLeaf{data: b, firstRowid: int(binary.BigEndian.Uint16(b)), size: int(binary.BigEndian.Uint16(b[2:]))}
	if l.size < 4 || l.size > len(b) {
		return ftsLeaf{}, errNotUnderstood
	}
	off := 0
	for p := b[l.size:]; len(p) > 0; {
		v, n := sqliteVarint(p)
		if n == 0 || v == 0 || v > uint64(l.size) {
			return ftsLeaf{}, errNotUnderstood
		}
		off += int(v)
		if off < 4 || off >= l.size {
			return ftsLeaf{}, errNotUnderstood
		}
		l.terms = append(l.terms, off)
		p = p[n:]
	}
	return l, nil
}

// find walks the page's terms for key; off is where its doclist starts.
// The first term on a page is whole, each later one shares a prefix with
// the one before it.
func (l ftsLeaf) find(key []byte) (off int, found bool, err error) {
	var term []byte
	for i, t := range l.terms {
		p := l.data[t:l.size]
		keep := 0
		if i > 0 {
			v, n := sqliteVarint(p)
			if n == 0 || v > uint64(len(term)) {
				return 0, false, errNotUnderstood
			}
			keep, p = int(v), p[n:]
		}
		v, n := sqliteVarint(p)
		if n == 0 || v > uint64(len(p)-n) {
			return 0, false, errNotUnderstood
		}
		term = append(term[:keep], p[n:n+int(v)]...)
		switch c := bytes.Compare(term, key); {
		case c == 0:
			return l.size - len(p) + n + int(v), true, nil
		case c > 0:
			return 0, false, nil
		}
	}
	return 0, false, nil
}

// termEnd is where the doclist starting at off ends on this page: the
// next term, or the footer.
func (l ftsLeaf) termEnd(off int) int {
	for _, t := range l.terms {
		if t > off {
			return t
		}
	}
	return l.size
}

// doclistDecoder decodes a doclist gathered from its pages; absolute
// lists where, in buf, an id is written whole rather than as a delta
// (the first of the doclist and the first on each later page).
type doclistDecoder struct {
	buf      []byte
	absolute []int
	counts   bool // also count each entry's positions
}

func (d *doclistDecoder) startAbsolute(at int) { d.absolute = append(d.absolute, at) }

// decode returns the doclist's entries. Each takes at least three bytes
// (id delta, size, one position), which bounds how many there can be: the
// slices are made once at that size (pages never written are never
// touched), not regrown entry by entry.
func (d *doclistDecoder) decode() (segmentDoclist, error) {
	l := segmentDoclist{ids: make([]int64, 0, len(d.buf)/3+1), freq: make([]float64, 0, len(d.buf)/3+1)}
	if d.counts {
		l.count = make([]int32, 0, len(d.buf)/3+1)
	}
	weights := [ftsColumns]float64{columnWeight('s'), columnWeight('f'), columnWeight('t'), columnWeight('b')}
	p, abs := 0, d.absolute
	var id int64
	for p < len(d.buf) {
		v, n := sqliteVarint(d.buf[p:])
		if n == 0 || v > math.MaxInt64-uint64(max(id, 0)) {
			return segmentDoclist{}, errNotUnderstood
		}
		switch {
		case len(abs) > 0 && abs[0] == p:
			if int64(v) <= id && p > 0 {
				return segmentDoclist{}, errNotUnderstood
			}
			id, abs = int64(v), abs[1:]
		case len(abs) > 0 && abs[0] < p, v == 0: // stepped over a page's first id, or no delta
			return segmentDoclist{}, errNotUnderstood
		default:
			id += int64(v)
		}
		p += n
		h, n := sqliteVarint(d.buf[p:])
		if n == 0 || h>>1 > uint64(len(d.buf)-p-n) {
			return segmentDoclist{}, errNotUnderstood
		}
		p += n
		pos := d.buf[p : p+int(h>>1)]
		p += len(pos)
		col, f, npos := 0, 0.0, int32(0)
		for len(pos) > 0 {
			v, n := sqliteVarint(pos)
			if n == 0 {
				return segmentDoclist{}, errNotUnderstood
			}
			pos = pos[n:]
			if v == 1 { // a column change, then the column
				c, n := sqliteVarint(pos)
				if n == 0 || c >= ftsColumns || int(c) <= col { // columns ascend from 0
					return segmentDoclist{}, errNotUnderstood
				}
				col, pos = int(c), pos[n:]
				continue
			}
			f += weights[col]
			npos++
		}
		l.ids, l.freq = append(l.ids, id), append(l.freq, f)
		if d.counts {
			l.count = append(l.count, npos)
		}
	}
	if len(abs) > 0 {
		return segmentDoclist{}, errNotUnderstood
	}
	return l, nil
}
