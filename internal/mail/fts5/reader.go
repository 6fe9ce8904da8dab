package fts5

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
// the %_data table: the word's doclist, row ids delta-coded and each row's
// positions by column. Reader.Word reads those pages and decodes them,
// following FTS5's record formats (fts5_index.c: structure record, leaf
// pages with a 4-byte header and a footer of term offsets,
// prefix-compressed terms, doclists that run on across pages).
//
// It reads only what it fully understands: the first structure layout,
// no incremental merge in progress, every byte of the doclist accounted
// for. Anything else reports ok=false and the caller asks the fts5vocab
// table instead, which is always right. Where segments overlap, the
// newest entry of a row wins and an entry without positions (a delete)
// hides the row, as FTS5's own merge does.

// Segment is one segment of the index: its id and leaf page range.
type Segment struct {
	ID, First, Last int64
}

// Segments parses a structure record (layout 1) into its segments,
// newest first; ok is false for any other layout, a merge in progress or
// a damaged record.
func Segments(rec []byte) (segs []Segment, ok bool) {
	if len(rec) < 4 || rec[0] == 0xff { // 0xff000001: the second layout (tombstones)
		return nil, false
	}
	p := rec[4:]
	next := func() (int64, bool) {
		v, n := Varint(p)
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
	var all [][]Segment
	for l := int64(0); l < levels; l++ {
		merging, ok1 := next()
		n, ok2 := next()
		if !ok1 || !ok2 || merging != 0 || n > total {
			return nil, false
		}
		var level []Segment
		for i := int64(0); i < n; i++ {
			id, ok1 := next()
			first, ok2 := next()
			last, ok3 := next()
			if !ok1 || !ok2 || !ok3 || id <= 0 || id > 0xffff || first <= 0 || last < first {
				return nil, false
			}
			level = append(level, Segment{id, first, last})
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

// LeafRowid is the %_data id of a segment's leaf page
// (FTS5_SEGMENT_ROWID: segment id above 37 bits of page number, height
// and doclist-index flag).
func LeafRowid(seg, page int64) int64 { return seg<<37 + page }

// errNotUnderstood marks pages the reader leaves to FTS5.
var errNotUnderstood = errors.New("index pages not understood")

// errTooLong marks a doclist longer than its reader's page limit.
var errTooLong = errors.New("doclist longer than the limit")

// Word returns the rows holding word (id order) with its weighted
// frequency in each, decoded from the index pages for the structure
// record structure (the %_data row 10 read in the same transaction). ok is
// false when the reader cannot say; the caller then asks FTS5.
func (r *Reader) Word(ctx context.Context, q Querier, word string, structure []byte) (ids []int64, freq []float64, ok bool, err error) {
	l, ok, err := r.Entries(ctx, q, word, structure, 0, false)
	return l.IDs, l.Freq, ok, err
}

// Entries is Word with each row's number of positions (Doclist.Count)
// when counts is set; ok is also false when a segment's doclist runs over
// more than maxPages pages (0: no limit).
func (r *Reader) Entries(ctx context.Context, q Querier, word string, structure []byte, maxPages int64, counts bool) (merged Doclist, ok bool, err error) {
	segs, ok := Segments(structure)
	if !ok {
		return Doclist{}, false, nil
	}
	key := []byte("0" + word) // the main index's terms start with '0'
	firsts, err := r.firstPages(ctx, q, segs, key)
	if err != nil {
		return Doclist{}, false, err
	}
	var lists []Doclist
	for i, seg := range segs {
		first := firsts[i]
		if first.block == nil { // no such page
			return Doclist{}, false, nil
		}
		page := first.page
		if page < seg.First || page > seg.Last {
			return Doclist{}, false, nil
		}
		list, err := r.readDoclist(ctx, q, seg, page, first.block, key, maxPages, counts)
		if errors.Is(err, errNotUnderstood) || errors.Is(err, errTooLong) {
			return Doclist{}, false, nil
		}
		if err != nil {
			return Doclist{}, false, err
		}
		lists = append(lists, list)
	}
	if len(lists) == 1 { // one segment (after a merge): only deletes to drop, in place
		l := lists[0]
		n := 0
		for i, id := range l.IDs {
			if l.Freq[i] > 0 {
				l.IDs[n], l.Freq[n] = id, l.Freq[i]
				if l.Count != nil {
					l.Count[n] = l.Count[i]
				}
				n++
			}
		}
		l.IDs, l.Freq = l.IDs[:n], l.Freq[:n]
		if l.Count != nil {
			l.Count = l.Count[:n]
		}
		return l, true, nil
	}
	// Several: a k-way merge by id; on equal ids the newest segment's
	// entry (the lowest list index) decides.
	total := 0
	for _, l := range lists {
		total += len(l.IDs)
	}
	merged = Doclist{IDs: make([]int64, 0, total), Freq: make([]float64, 0, total)}
	if counts {
		merged.Count = make([]int32, 0, total)
	}
	at := make([]int, len(lists))
	for {
		best := -1
		for i, l := range lists {
			if at[i] < len(l.IDs) && (best < 0 || l.IDs[at[i]] < lists[best].IDs[at[best]]) {
				best = i
			}
		}
		if best < 0 {
			return merged, true, nil
		}
		b := lists[best]
		id, f := b.IDs[at[best]], b.Freq[at[best]]
		if f > 0 {
			merged.IDs, merged.Freq = append(merged.IDs, id), append(merged.Freq, f)
			if counts {
				merged.Count = append(merged.Count, b.Count[at[best]])
			}
		}
		for i, l := range lists {
			if at[i] < len(l.IDs) && l.IDs[at[i]] == id {
				at[i]++
			}
		}
	}
}

// Doclist is a word's doclist: row ids ascending, the weighted frequency
// of each (in one segment's, 0 is an entry without positions: a delete),
// and when asked for, the number of its positions.
type Doclist struct {
	IDs   []int64
	Freq  []float64
	Count []int32
}

// firstPage is the leaf page of a segment where a term is or would be;
// block is nil when the segment has no such page.
type firstPage struct {
	page  int64
	block []byte
}

// firstPages reads, for each of segs, the leaf page where key is or would
// be (by the term index), in one statement.
func (r *Reader) firstPages(ctx context.Context, q Querier, segs []Segment, key []byte) ([]firstPage, error) {
	list := make([]byte, 0, 24*len(segs))
	list = append(list, '[')
	for i, seg := range segs {
		if i > 0 {
			list = append(list, ',')
		}
		list = fmt.Appendf(list, "[%d,%d]", seg.ID, seg.First)
	}
	list = append(list, ']')
	rows, err := q.QueryContext(ctx, r.firstSQL, string(list), key)
	if err != nil {
		return nil, fmt.Errorf("reading the word index: %w", err)
	}
	defer rows.Close()
	out := make([]firstPage, len(segs))
	for rows.Next() {
		var i int
		var id int64
		var block []byte
		if err := rows.Scan(&i, &id, &block); err != nil {
			return nil, fmt.Errorf("reading the word index: %w", err)
		}
		if i < 0 || i >= len(segs) || block == nil {
			return nil, fmt.Errorf("reading the word index: segment %d of %d", i, len(segs))
		}
		out[i] = firstPage{page: id - LeafRowid(segs[i].ID, 0), block: block}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the word index: %w", err)
	}
	return out, nil
}

// readDoclist decodes key's doclist in seg, which starts on leaf page
// page (first, already read) and may run on over the following pages,
// with counts when counts is set; errTooLong when it runs over more than
// maxPages pages (0: no limit).
func (r *Reader) readDoclist(ctx context.Context, q Querier, seg Segment, page int64, first []byte, key []byte, maxPages int64, counts bool) (Doclist, error) {
	d := doclistDecoder{counts: counts, weights: r.weights}
	done, err := d.addPage(first, true, key)
	if err != nil || done || page == seg.Last {
		if err != nil {
			return Doclist{}, err
		}
		return d.decode()
	}
	rows, err := q.QueryContext(ctx, r.blocksSQL, LeafRowid(seg.ID, page+1), LeafRowid(seg.ID, seg.Last))
	if err != nil {
		return Doclist{}, fmt.Errorf("reading the word index: %w", err)
	}
	defer rows.Close()
	for want := page + 1; rows.Next(); want++ {
		if maxPages > 0 && want-page >= maxPages {
			return Doclist{}, errTooLong
		}
		var id int64
		var block sql.RawBytes // copied into d.buf before the next row
		if err := rows.Scan(&id, &block); err != nil {
			return Doclist{}, fmt.Errorf("reading the word index: %w", err)
		}
		if id != LeafRowid(seg.ID, want) { // a missing page
			return Doclist{}, errNotUnderstood
		}
		if done, err := d.addPage(block, false, key); err != nil {
			return Doclist{}, err
		} else if done {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return Doclist{}, fmt.Errorf("reading the word index: %w", err)
	}
	return d.decode()
}

// addPage adds what block, a leaf page, holds of key's doclist: from key
// on the page where it starts (first), else from the page's header up to
// its first term. done reports that the doclist ended on this page (or,
// on the first, that key is not there).
func (d *doclistDecoder) addPage(block []byte, first bool, key []byte) (done bool, err error) {
	leaf, err := parseLeaf(block)
	if err != nil {
		return false, err
	}
	var start, end int
	if first {
		// The page the term index names: find the term on it.
		off, found, err := leaf.find(key)
		if err != nil || !found {
			return true, err
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
				return false, errNotUnderstood
			}
			d.startAbsolute(len(d.buf) + leaf.firstRowid - start)
		}
	}
	if first && end < leaf.size {
		// The next term begins on this page: the whole doclist is
		// here, decoded in place (the caller's copy of the page).
		d.buf = leaf.data[start:end]
		return true, nil
	}
	if d.buf == nil {
		// Room for a doclist of a few pages; a common word's (~45 pages
		// for one in 30,000 messages) regrows a few times.
		d.buf = make([]byte, 0, 8*len(leaf.data))
	}
	d.buf = append(d.buf, leaf.data[start:end]...)
	return !first && len(leaf.terms) > 0, nil
}

// leaf is one leaf page: its data up to the footer, where its first id
// is (0: none before the first term), and its terms' offsets.
type leaf struct {
	data       []byte
	size       int // start of the footer
	firstRowid int
	terms      []int
}

func parseLeaf(b []byte) (leaf, error) {
	if len(b) < 4 {
		return leaf{}, errNotUnderstood
	}
	l := leaf{data: b, firstRowid: int(binary.BigEndian.Uint16(b)), size: int(binary.BigEndian.Uint16(b[2:]))}
	if l.size < 4 || l.size > len(b) {
		return leaf{}, errNotUnderstood
	}
	off := 0
	for p := b[l.size:]; len(p) > 0; {
		v, n := Varint(p)
		if n == 0 || v == 0 || v > uint64(l.size) {
			return leaf{}, errNotUnderstood
		}
		off += int(v)
		if off < 4 || off >= l.size {
			return leaf{}, errNotUnderstood
		}
		l.terms = append(l.terms, off)
		p = p[n:]
	}
	return l, nil
}

// find walks the page's terms for key; off is where its doclist starts.
// The first term on a page is whole, each later one shares a prefix with
// the one before it.
func (l leaf) find(key []byte) (off int, found bool, err error) {
	var term []byte
	for i, t := range l.terms {
		p := l.data[t:l.size]
		keep := 0
		if i > 0 {
			v, n := Varint(p)
			if n == 0 || v > uint64(len(term)) {
				return 0, false, errNotUnderstood
			}
			keep, p = int(v), p[n:]
		}
		v, n := Varint(p)
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
func (l leaf) termEnd(off int) int {
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
	counts   bool      // also count each entry's positions
	weights  []float64 // by column
}

func (d *doclistDecoder) startAbsolute(at int) { d.absolute = append(d.absolute, at) }

// decode returns the doclist's entries. Each takes at least three bytes
// (id delta, size, one position), which bounds how many there can be: the
// slices are made once at that size (pages never written are never
// touched), not regrown entry by entry.
func (d *doclistDecoder) decode() (Doclist, error) {
	l := Doclist{IDs: make([]int64, 0, len(d.buf)/3+1), Freq: make([]float64, 0, len(d.buf)/3+1)}
	if d.counts {
		l.Count = make([]int32, 0, len(d.buf)/3+1)
	}
	weights := d.weights
	p, abs := 0, d.absolute
	var id int64
	for p < len(d.buf) {
		v, n := Varint(d.buf[p:])
		if n == 0 || v > math.MaxInt64-uint64(max(id, 0)) {
			return Doclist{}, errNotUnderstood
		}
		switch {
		case len(abs) > 0 && abs[0] == p:
			if int64(v) <= id && p > 0 {
				return Doclist{}, errNotUnderstood
			}
			id, abs = int64(v), abs[1:]
		case len(abs) > 0 && abs[0] < p, v == 0: // stepped over a page's first id, or no delta
			return Doclist{}, errNotUnderstood
		default:
			id += int64(v)
		}
		p += n
		h, n := Varint(d.buf[p:])
		if n == 0 || h>>1 > uint64(len(d.buf)-p-n) {
			return Doclist{}, errNotUnderstood
		}
		p += n
		pos := d.buf[p : p+int(h>>1)]
		p += len(pos)
		col, f, npos := 0, 0.0, int32(0)
		for len(pos) > 0 {
			v, n := Varint(pos)
			if n == 0 {
				return Doclist{}, errNotUnderstood
			}
			pos = pos[n:]
			if v == 1 { // a column change, then the column
				c, n := Varint(pos)
				if n == 0 || c >= uint64(len(weights)) || int(c) <= col { // columns ascend from 0
					return Doclist{}, errNotUnderstood
				}
				col, pos = int(c), pos[n:]
				continue
			}
			f += weights[col]
			npos++
		}
		l.IDs, l.Freq = append(l.IDs, id), append(l.Freq, f)
		if d.counts {
			l.Count = append(l.Count, npos)
		}
	}
	if len(abs) > 0 {
		return Doclist{}, errNotUnderstood
	}
	return l, nil
}
