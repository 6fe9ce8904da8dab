// Package docs reads local documents for the agent with hard bounds:
// document_info, document_read and document_search over one explicitly
// named file at a time.
//
// Extraction of outside files is the risky part, so it never runs in the
// daemon: the Extractor re-executes the hestia binary as `hestia extract`,
// feeds it the file's bytes on stdin and reads a JSON document back. The
// child caps its own address space and CPU time (rlimit), the parent kills
// its process group at the timeout, the input is capped before it is read
// and Office/EPUB ZIP directories are checked before anything is inflated.
// A hostile file can therefore fail its own extraction, never the daemon.
//
// Extracted documents live in a small LRU keyed by resolved path, size and
// modification time. Cursors carry a fingerprint of that key, so a cursor
// from an older version of a file is refused instead of pointing into
// different text. Everything the tools return is document text, which is
// untrusted: the tools declare UntrustedOutput so the turn is tainted.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// `document_info`/`document_read`/`document_search` over one local file: PDF (text layer, pages
// kept), DOCX, ODT, PPTX, XLSX/ODS, HTML, RTF, EPUB, Markdown, text; extraction in a re-executed
// `hestia extract` child (rlimit, timeout, input cap, ZIP-bomb checks), which also reads
// web_fetch's pages as `Article` (readability only when a tokenizer pass estimates the DOM under
// 500,000 nodes — misnested formatting elements are re-created per element, so a 4.5 MB page made
// 2 GB —, else the streaming reader's whole-page text with a warning naming the limit); LRU cache
// keyed by path+size+mtime; fingerprinted cursors; lexical + semantic search fused with RRF. PDF
// via `ledongthuc/pdf` (our own page-tree walk and content-stream text); the Office/ODF/EPUB
// readers are small `encoding/xml` walkers because no maintained pure-Go reader covers them
// (excelize covers XLSX only).
package docs

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Format is a supported document format.
type Format string

// Supported formats.
const (
	PDF      Format = "pdf"
	DOCX     Format = "docx"
	ODT      Format = "odt"
	PPTX     Format = "pptx"
	XLSX     Format = "xlsx"
	ODS      Format = "ods"
	HTML     Format = "html"
	RTF      Format = "rtf"
	EPUB     Format = "epub"
	Markdown Format = "markdown"
	Text     Format = "text"
)

var extensions = map[string]Format{
	".pdf": PDF, ".docx": DOCX, ".odt": ODT, ".pptx": PPTX, ".xlsx": XLSX, ".ods": ODS,
	".html": HTML, ".htm": HTML, ".xhtml": HTML, ".rtf": RTF, ".epub": EPUB,
	".md": Markdown, ".markdown": Markdown, ".txt": Text, ".text": Text, ".csv": Text, ".log": Text,
}

// ErrUnsupported is wrapped when a file's extension is not a document format.
var ErrUnsupported = errors.New("unsupported document format")

// ErrNoText is wrapped when a document has no extractable text (an
// image-only PDF); the tools report it as no_extractable_text.
var ErrNoText = errors.New("no_extractable_text")

// ErrTooLarge is wrapped when an input or archive exceeds a limit.
var ErrTooLarge = errors.New("document exceeds a size limit")

// FormatOf picks the format from the file extension.
func FormatOf(path string) (Format, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if f, ok := extensions[ext]; ok {
		return f, nil
	}
	var known []string
	for e := range extensions {
		known = append(known, e)
	}
	sort.Strings(known)
	if ext == "" {
		return "", fmt.Errorf("%s has no file extension; supported: %s: %w", filepath.Base(path), strings.Join(known, " "), ErrUnsupported)
	}
	return "", fmt.Errorf("%s files are not supported; supported: %s: %w", ext, strings.Join(known, " "), ErrUnsupported)
}

// Page is one logical page: a PDF page, a PPTX slide, an XLSX/ODS sheet, an
// EPUB chapter, or the whole text of formats without pages.
type Page struct {
	Number int    `json:"number"` // from 1
	Label  string `json:"label,omitempty"`
	Text   string `json:"text"`
}

// Heading is a title found in the document, located by page and byte offset.
type Heading struct {
	Title  string `json:"title"`
	Level  int    `json:"level,omitempty"`
	Page   int    `json:"page"`
	Offset int    `json:"offset"`
}

// Document is an extracted document.
type Document struct {
	Format Format `json:"format"`
	// Title is the page's title (Article only).
	Title    string    `json:"title,omitempty"`
	Pages    []Page    `json:"pages"`
	Headings []Heading `json:"headings,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
}

// Chars counts the document's characters.
func (d *Document) Chars() int {
	n := 0
	for _, p := range d.Pages {
		n += utf8.RuneCountInString(p.Text)
	}
	return n
}

func (d *Document) bytes() int {
	n := 0
	for _, p := range d.Pages {
		n += len(p.Text)
	}
	return n
}

// Limits bound extraction. Zero fields take the defaults.
type Limits struct {
	MaxInputBytes     int64         // file size cap (default 25 MiB, at most 100 MiB)
	MaxArchiveBytes   int64         // declared uncompressed ZIP content (default 64 MiB, at most 256 MiB)
	MaxArchiveEntries int           // ZIP entries (default 10,000)
	MaxChars          int           // extracted characters (default 8 million, at most 32 million)
	Timeout           time.Duration // child run time (default 15 s, 1–60 s)
	MemoryBytes       int64         // child address-space limit (default 2 GiB)
}

// Defaults.
const (
	DefaultMaxInputBytes     = 25 << 20
	DefaultMaxArchiveBytes   = 64 << 20
	DefaultMaxArchiveEntries = 10_000
	DefaultMaxChars          = 8_000_000
	DefaultTimeout           = 15 * time.Second
	DefaultMemoryBytes       = 2 << 30
)

// WithDefaults fills zero fields and clamps the rest to their ranges.
func (l Limits) WithDefaults() Limits {
	if l.MaxInputBytes <= 0 {
		l.MaxInputBytes = DefaultMaxInputBytes
	}
	l.MaxInputBytes = min(l.MaxInputBytes, 100<<20)
	if l.MaxArchiveBytes <= 0 {
		l.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	l.MaxArchiveBytes = min(l.MaxArchiveBytes, 256<<20)
	if l.MaxArchiveEntries <= 0 {
		l.MaxArchiveEntries = DefaultMaxArchiveEntries
	}
	if l.MaxChars <= 0 {
		l.MaxChars = DefaultMaxChars
	}
	l.MaxChars = min(l.MaxChars, 32_000_000)
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	l.Timeout = max(time.Second, min(l.Timeout, time.Minute))
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	return l
}
