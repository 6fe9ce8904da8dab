package docs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Read bounds.
const (
	DefaultReadChars = 6000
	MaxReadChars     = 12000
	MaxReadPages     = 3
	MaxHeadings      = 50
)

// Tools returns document_info, document_read and document_search.
func (s *Service) Tools() []tools.Tool {
	read := func(name, desc, schema string, fn func(context.Context, tools.Args) (any, error)) tools.Tool {
		return &tools.Func{
			S: tools.Spec{Name: name, Description: desc, Schema: json.RawMessage(schema),
				Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, UntrustedOutput: true, PathArgs: []string{"path"}, MaxResult: 40_000},
			Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
				a, err := tools.ParseArgs(c.Args)
				if err != nil {
					return tools.Result{}, err
				}
				out, err := fn(ctx, a)
				if err != nil {
					return tools.Result{Content: refusal(err), IsError: true}, nil
				}
				b, err := tools.Canonical(out)
				if err != nil {
					return tools.Result{}, err
				}
				return tools.Result{Content: string(b)}, nil
			},
		}
	}
	return []tools.Tool{
		read("document_info", "Describe a local document (PDF, DOCX, ODT, PPTX, XLSX, ODS, HTML, RTF, EPUB, Markdown, text): format, size, pages, characters, warnings and up to 50 headings with cursors for document_read. Returns no body text.",
			`{"type":"object","properties":{"path":{"type":"string","minLength":1,"description":"The document's path; ~ is the home directory"}},"required":["path"],"additionalProperties":false}`,
			s.info),
		read("document_read", "Read part of a local document: by page (1-based) or by a cursor from document_info/document_search/an earlier read. Default 6000 characters and 1 page; at most 12000 characters and 3 pages. Follow navigation.next_cursor while has_more.",
			`{"type":"object","properties":{"path":{"type":"string","minLength":1},"page":{"type":"integer","minimum":1},"cursor":{"type":"string","minLength":1},"max_chars":{"type":"integer","minimum":100,"maximum":12000},"max_pages":{"type":"integer","minimum":1,"maximum":3}},"required":["path"],"additionalProperties":false}`,
			s.read),
		read("document_search", "Search one local document for a query (lexical and, when embeddings work, semantic, fused). Returns up to 10 excerpts with page, offset and a cursor for document_read.",
			`{"type":"object","properties":{"path":{"type":"string","minLength":1},"query":{"type":"string","minLength":1,"maxLength":500},"max_results":{"type":"integer","minimum":1,"maximum":10},"context_chars":{"type":"integer","minimum":50,"maximum":800}},"required":["path","query"],"additionalProperties":false}`,
			s.search),
	}
}

// refusal words an error for the model, naming the reason.
func refusal(err error) string {
	switch {
	case errors.Is(err, ErrNoText):
		return "no_extractable_text: " + err.Error()
	case errors.Is(err, ErrStaleCursor):
		return "stale_cursor: " + err.Error()
	case errors.Is(err, ErrTooLarge):
		return "too_large: " + err.Error()
	case errors.Is(err, ErrUnsupported):
		return "unsupported_format: " + err.Error()
	}
	return err.Error()
}

// Info is document_info's result.
type Info struct {
	Name     string        `json:"name"`
	Path     string        `json:"path"`
	Format   Format        `json:"format"`
	Size     int64         `json:"size_bytes"`
	Modified string        `json:"modified"`
	Pages    int           `json:"pages"`
	Chars    int           `json:"characters"`
	Warnings []string      `json:"warnings,omitempty"`
	Headings []InfoHeading `json:"headings,omitempty"`
	More     int           `json:"more_headings,omitempty"`
}

// InfoHeading is one heading with its cursor.
type InfoHeading struct {
	Title  string `json:"title"`
	Level  int    `json:"level,omitempty"`
	Page   int    `json:"page"`
	Cursor string `json:"cursor"`
}

func (s *Service) info(ctx context.Context, a tools.Args) (any, error) {
	e, err := s.open(ctx, a.String("path", ""))
	if err != nil {
		return nil, err
	}
	out := Info{Name: filepath.Base(e.path), Path: e.path, Format: e.doc.Format, Size: e.size, Modified: e.mtime.UTC().Format("2006-01-02T15:04:05Z"),
		Pages: len(e.doc.Pages), Chars: e.doc.Chars(), Warnings: e.doc.Warnings}
	for i, h := range e.doc.Headings {
		if i >= MaxHeadings {
			out.More = len(e.doc.Headings) - MaxHeadings
			break
		}
		out.Headings = append(out.Headings, InfoHeading{Title: trunc(h.Title, 200), Level: h.Level, Page: h.Page, Cursor: e.cursor(h.Page, max(0, h.Offset))})
	}
	return out, nil
}

// ReadResult is document_read's result.
type ReadResult struct {
	Path       string     `json:"path"`
	Format     Format     `json:"format"`
	TotalPages int        `json:"total_pages"`
	Selection  Selection  `json:"selection"`
	Pages      []ReadPage `json:"pages"`
	Navigation Navigation `json:"navigation"`
}

// Selection says what part of the document a read returned.
type Selection struct {
	StartPage   int `json:"start_page"`
	StartOffset int `json:"start_offset"`
	EndPage     int `json:"end_page"`
	EndOffset   int `json:"end_offset"`
	Chars       int `json:"characters"`
}

// ReadPage is the text read from one page.
type ReadPage struct {
	Page  int    `json:"page"`
	Label string `json:"label,omitempty"`
	Text  string `json:"text"`
}

// Navigation continues a read.
type Navigation struct {
	HasMore    bool   `json:"has_more"`
	NextCursor string `json:"next_cursor,omitempty"`
}

func (s *Service) read(ctx context.Context, a tools.Args) (any, error) {
	if _, hasPage := a["page"]; hasPage {
		if _, hasCursor := a["cursor"]; hasCursor {
			return nil, errors.New("give either page or cursor, not both")
		}
	}
	e, err := s.open(ctx, a.String("path", ""))
	if err != nil {
		return nil, err
	}
	page, offset := a.Int("page", 1), 0
	if c := a.String("cursor", ""); c != "" {
		if page, offset, err = e.parseCursor(c); err != nil {
			return nil, err
		}
	}
	if page > len(e.doc.Pages) {
		return nil, fmt.Errorf("page %d is past the end: %s has %d pages", page, filepath.Base(e.path), len(e.doc.Pages))
	}
	maxChars := min(a.Int("max_chars", DefaultReadChars), MaxReadChars)
	maxPages := min(a.Int("max_pages", 1), MaxReadPages)
	out := ReadResult{Path: e.path, Format: e.doc.Format, TotalPages: len(e.doc.Pages), Selection: Selection{StartPage: page, StartOffset: offset}}
	left := maxChars
	p, off := page, offset
	for p <= len(e.doc.Pages) && p < page+maxPages && left > 0 {
		text := e.doc.Pages[p-1].Text
		end := advance(text, off, left)
		if end < len(text) {
			// End at a line or sentence boundary when one is near.
			end = boundary(text, off, end)
		}
		piece := text[off:end]
		left -= utf8.RuneCountInString(piece)
		out.Pages = append(out.Pages, ReadPage{Page: p, Label: e.doc.Pages[p-1].Label, Text: piece})
		out.Selection.Chars += utf8.RuneCountInString(piece)
		out.Selection.EndPage, out.Selection.EndOffset = p, end
		if end < len(text) {
			off = end
			break
		}
		p, off = p+1, 0
	}
	// (p, off) is where reading stopped: inside a page, or at the start of
	// the page after the last one read.
	if p <= len(e.doc.Pages) {
		out.Navigation = Navigation{HasMore: true, NextCursor: e.cursor(p, off)}
	}
	return out, nil
}

// SearchResult is document_search's result.
type SearchResult struct {
	Path     string         `json:"path"`
	Format   Format         `json:"format"`
	Query    string         `json:"query"`
	Matches  []Match        `json:"matches"`
	Lexical  int            `json:"lexical_candidates"`
	Semantic SemanticStatus `json:"semantic"`
	Warnings []string       `json:"warnings,omitempty"`
}

// Match is one excerpt.
type Match struct {
	Page    int    `json:"page"`
	Offset  int    `json:"offset"`
	Cursor  string `json:"cursor"`
	Excerpt string `json:"excerpt"`
	Via     string `json:"via"` // lexical, semantic or both
}

func (s *Service) search(ctx context.Context, a tools.Args) (any, error) {
	query := strings.TrimSpace(a.String("query", ""))
	if query == "" {
		return nil, errors.New("query is empty")
	}
	e, err := s.open(ctx, a.String("path", ""))
	if err != nil {
		return nil, err
	}
	n := min(a.Int("max_results", defaultResults), maxResults)
	ctxChars := min(a.Int("context_chars", defaultContext), maxContext)
	lex := lexical(e.chunks, query)
	sem, st := s.semantic(ctx, e, query)
	lists := [][]int64{toIDs(lex)}
	if len(sem) > 0 {
		lists = append(lists, toIDs(sem))
	}
	inLex, inSem := set(lex), set(sem)
	out := SearchResult{Path: e.path, Format: e.doc.Format, Query: query, Lexical: len(lex), Semantic: st, Matches: []Match{}}
	if len(e.chunks) > maxSemantic && s.Embedder != nil {
		out.Warnings = append(out.Warnings, fmt.Sprintf("semantic ranking looked at %d evenly spaced chunks of %d; lexical search covered all text", maxSemantic, len(e.chunks)))
	}
	terms := queryTerms(query)
	seen := map[[2]int]bool{}
	for _, f := range search.RRF(search.K, lists...) {
		if len(out.Matches) >= n {
			break
		}
		c := e.chunks[f.ID]
		ex, from := excerpt(e.doc.Pages[c.page-1].Text, c, terms, ctxChars)
		if seen[[2]int{c.page, from}] {
			continue // overlapping chunks found the same spot
		}
		seen[[2]int{c.page, from}] = true
		via := "lexical"
		switch {
		case inLex[int(f.ID)] && inSem[int(f.ID)]:
			via = "both"
		case inSem[int(f.ID)]:
			via = "semantic"
		}
		out.Matches = append(out.Matches, Match{Page: c.page, Offset: from, Cursor: e.cursor(c.page, from), Excerpt: ex, Via: via})
	}
	return out, nil
}

func toIDs(xs []int) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

func set(xs []int) map[int]bool {
	m := make(map[int]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
