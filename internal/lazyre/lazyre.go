// Package lazyre holds package-level regular expressions that compile on
// first use instead of at program start. Every package's init runs in every
// process of the one hestia binary, so a CLI command that answers in a few
// milliseconds would otherwise pay for compiling every pattern of the daemon
// (tens of milliseconds over the whole program).
package lazyre

import (
	"io"
	"regexp"
	"strconv"
	"sync"
)

// Regexp is a regular expression compiled on first use. Its methods are
// those of regexp.Regexp that do not change it; Get returns the compiled
// expression for anything else.
//
// A package-level `var x = New("...")` is static data: New inlines to a
// composite literal of a constant, which the compiler lays out in the
// binary, so declaring one costs a process nothing at start (no
// allocation, no closure). The fields below are set once, by Get.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp // set by once; nil when expr does not compile
	err  error
}

// New returns expr, to be compiled on first use. A bad expression panics
// there, as regexp.MustCompile would at start; New is meant for constant
// expressions that tests exercise.
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// Get returns the compiled expression. It panics, on every call, when the
// expression does not compile.
func (x *Regexp) Get() *regexp.Regexp {
	x.once.Do(func() { x.re, x.err = regexp.Compile(x.expr) })
	if x.err != nil {
		panic("regexp: Compile(" + strconv.Quote(x.expr) + "): " + x.err.Error())
	}
	return x.re
}

// String returns the source text without compiling it.
func (x *Regexp) String() string { return x.expr }

// Expand is regexp.Regexp.Expand.
func (x *Regexp) Expand(dst []byte, template []byte, src []byte, match []int) []byte {
	return x.Get().Expand(dst, template, src, match)
}

// ExpandString is regexp.Regexp.ExpandString.
func (x *Regexp) ExpandString(dst []byte, template string, src string, match []int) []byte {
	return x.Get().ExpandString(dst, template, src, match)
}

// Find is regexp.Regexp.Find.
func (x *Regexp) Find(b []byte) []byte { return x.Get().Find(b) }

// FindAll is regexp.Regexp.FindAll.
func (x *Regexp) FindAll(b []byte, n int) [][]byte { return x.Get().FindAll(b, n) }

// FindAllIndex is regexp.Regexp.FindAllIndex.
func (x *Regexp) FindAllIndex(b []byte, n int) [][]int { return x.Get().FindAllIndex(b, n) }

// FindAllString is regexp.Regexp.FindAllString.
func (x *Regexp) FindAllString(s string, n int) []string { return x.Get().FindAllString(s, n) }

// FindAllStringIndex is regexp.Regexp.FindAllStringIndex.
func (x *Regexp) FindAllStringIndex(s string, n int) [][]int { return x.Get().FindAllStringIndex(s, n) }

// FindAllStringSubmatch is regexp.Regexp.FindAllStringSubmatch.
func (x *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return x.Get().FindAllStringSubmatch(s, n)
}

// FindAllStringSubmatchIndex is regexp.Regexp.FindAllStringSubmatchIndex.
func (x *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return x.Get().FindAllStringSubmatchIndex(s, n)
}

// FindAllSubmatch is regexp.Regexp.FindAllSubmatch.
func (x *Regexp) FindAllSubmatch(b []byte, n int) [][][]byte { return x.Get().FindAllSubmatch(b, n) }

// FindAllSubmatchIndex is regexp.Regexp.FindAllSubmatchIndex.
func (x *Regexp) FindAllSubmatchIndex(b []byte, n int) [][]int {
	return x.Get().FindAllSubmatchIndex(b, n)
}

// FindIndex is regexp.Regexp.FindIndex.
func (x *Regexp) FindIndex(b []byte) []int { return x.Get().FindIndex(b) }

// FindReaderIndex is regexp.Regexp.FindReaderIndex.
func (x *Regexp) FindReaderIndex(r io.RuneReader) []int { return x.Get().FindReaderIndex(r) }

// FindReaderSubmatchIndex is regexp.Regexp.FindReaderSubmatchIndex.
func (x *Regexp) FindReaderSubmatchIndex(r io.RuneReader) []int {
	return x.Get().FindReaderSubmatchIndex(r)
}

// FindString is regexp.Regexp.FindString.
func (x *Regexp) FindString(s string) string { return x.Get().FindString(s) }

// FindStringIndex is regexp.Regexp.FindStringIndex.
func (x *Regexp) FindStringIndex(s string) []int { return x.Get().FindStringIndex(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (x *Regexp) FindStringSubmatch(s string) []string { return x.Get().FindStringSubmatch(s) }

// FindStringSubmatchIndex is regexp.Regexp.FindStringSubmatchIndex.
func (x *Regexp) FindStringSubmatchIndex(s string) []int { return x.Get().FindStringSubmatchIndex(s) }

// FindSubmatch is regexp.Regexp.FindSubmatch.
func (x *Regexp) FindSubmatch(b []byte) [][]byte { return x.Get().FindSubmatch(b) }

// FindSubmatchIndex is regexp.Regexp.FindSubmatchIndex.
func (x *Regexp) FindSubmatchIndex(b []byte) []int { return x.Get().FindSubmatchIndex(b) }

// LiteralPrefix is regexp.Regexp.LiteralPrefix.
func (x *Regexp) LiteralPrefix() (string, bool) { return x.Get().LiteralPrefix() }

// Match is regexp.Regexp.Match.
func (x *Regexp) Match(b []byte) bool { return x.Get().Match(b) }

// MatchReader is regexp.Regexp.MatchReader.
func (x *Regexp) MatchReader(r io.RuneReader) bool { return x.Get().MatchReader(r) }

// MatchString is regexp.Regexp.MatchString.
func (x *Regexp) MatchString(s string) bool { return x.Get().MatchString(s) }

// NumSubexp is regexp.Regexp.NumSubexp.
func (x *Regexp) NumSubexp() int { return x.Get().NumSubexp() }

// ReplaceAll is regexp.Regexp.ReplaceAll.
func (x *Regexp) ReplaceAll(src, repl []byte) []byte { return x.Get().ReplaceAll(src, repl) }

// ReplaceAllFunc is regexp.Regexp.ReplaceAllFunc.
func (x *Regexp) ReplaceAllFunc(src []byte, repl func([]byte) []byte) []byte {
	return x.Get().ReplaceAllFunc(src, repl)
}

// ReplaceAllLiteral is regexp.Regexp.ReplaceAllLiteral.
func (x *Regexp) ReplaceAllLiteral(src, repl []byte) []byte {
	return x.Get().ReplaceAllLiteral(src, repl)
}

// ReplaceAllLiteralString is regexp.Regexp.ReplaceAllLiteralString.
func (x *Regexp) ReplaceAllLiteralString(src, repl string) string {
	return x.Get().ReplaceAllLiteralString(src, repl)
}

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (x *Regexp) ReplaceAllString(src, repl string) string {
	return x.Get().ReplaceAllString(src, repl)
}

// ReplaceAllStringFunc is regexp.Regexp.ReplaceAllStringFunc.
func (x *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return x.Get().ReplaceAllStringFunc(src, repl)
}

// Split is regexp.Regexp.Split.
func (x *Regexp) Split(s string, n int) []string { return x.Get().Split(s, n) }

// SubexpIndex is regexp.Regexp.SubexpIndex.
func (x *Regexp) SubexpIndex(name string) int { return x.Get().SubexpIndex(name) }

// SubexpNames is regexp.Regexp.SubexpNames.
func (x *Regexp) SubexpNames() []string { return x.Get().SubexpNames() }
