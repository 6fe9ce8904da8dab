// Package files provides the generic filesystem tools: read_file, list_dir,
// write_file and edit_file. Every path goes through the shared path policy
// (internal/pathpolicy) before anything is opened, and the writes are gated
// by default (medium risk) so they only run after an approval.
package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Limits bound what the tools read and write.
const (
	MaxReadBytes  = 2 << 20 // a file larger than this is read in part
	MaxWriteBytes = 4 << 20 // write_file refuses larger content
	MaxDirEntries = 1000    // list_dir shows at most this many entries
	defaultLines  = 2000    // read_file default line window
	maxLineChars  = 2000    // longer lines are cut
)

// Tools returns the four file tools bound to a path policy.
func Tools(p *pathpolicy.Policy) []tools.Tool {
	return []tools.Tool{
		&readFile{p: p}, &listDir{p: p}, &writeFile{p: p}, &editFile{p: p},
	}
}

// Register adds the file tools to a registry.
func Register(r *tools.Registry, p *pathpolicy.Policy) error {
	for _, t := range Tools(p) {
		if err := r.Register(t); err != nil {
			return err
		}
	}
	return nil
}

func errResult(format string, a ...any) (tools.Result, error) {
	return tools.Result{Content: fmt.Sprintf(format, a...), IsError: true}, nil
}

// policyError turns a path policy refusal into a result the model can read.
func policyError(err error) (tools.Result, error) {
	return tools.Result{Content: err.Error(), IsError: true}, nil
}

type readFile struct{ p *pathpolicy.Policy }

func (t *readFile) Spec() tools.Spec {
	return tools.Spec{
		Name:        "read_file",
		Description: "Read a text file. Returns numbered lines; use offset (1-based line) and limit to page through long files.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"path":{"type":"string","description":"File path; ~ is the home directory, relative paths start at the home directory"},
"offset":{"type":"integer","minimum":1,"description":"First line to return (1-based)"},
"limit":{"type":"integer","minimum":1,"maximum":10000,"description":"Number of lines (default 2000)"}},
"required":["path"],"additionalProperties":false}`),
		Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, UntrustedOutput: true,
		PathArgs: []string{"path"},
	}
}
func (t *readFile) Available(context.Context) error    { return nil }
func (t *readFile) Target(args json.RawMessage) string { return target(t.p, args, false) }

func (t *readFile) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	a, err := tools.ParseArgs(c.Args)
	if err != nil {
		return tools.Result{}, err
	}
	path, err := t.p.Resolve(a.String("path", ""))
	if err != nil {
		return policyError(err)
	}
	f, err := os.Open(path)
	if err != nil {
		return errResult("cannot open %s: %v", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return errResult("cannot stat %s: %v", path, err)
	}
	if st.IsDir() {
		return errResult("%s is a directory; use list_dir", path)
	}
	if !st.Mode().IsRegular() {
		return errResult("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxReadBytes))
	if err != nil {
		return errResult("reading %s: %v", path, err)
	}
	if looksBinary(data) {
		return errResult("%s looks like a binary file (%d bytes); only text files can be read", path, st.Size())
	}
	offset, limit := a.Int("offset", 1), a.Int("limit", defaultLines)
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if offset > len(lines) && len(lines) > 0 {
		return errResult("%s has %d lines; offset %d is past the end", path, len(lines), offset)
	}
	var b strings.Builder
	end := min(len(lines), offset-1+limit)
	for i := offset - 1; i < end; i++ {
		line := strings.TrimRight(lines[i], "\r\n")
		if utf8.RuneCountInString(line) > maxLineChars {
			line = string([]rune(line)[:maxLineChars]) + " [line cut]"
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, line)
	}
	switch {
	case int64(len(data)) < st.Size():
		fmt.Fprintf(&b, "[file is %d bytes; only the first %d were read]\n", st.Size(), len(data))
	case end < len(lines):
		fmt.Fprintf(&b, "[showing lines %d-%d of %d; continue with offset %d]\n", offset, end, len(lines), end+1)
	}
	if len(lines) == 0 {
		b.WriteString("[empty file]\n")
	}
	return tools.Result{Content: b.String()}, nil
}

func looksBinary(b []byte) bool {
	head := b[:min(len(b), 8000)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	return !utf8.Valid(head[:max(0, len(head)-4)])
}

type listDir struct{ p *pathpolicy.Policy }

func (t *listDir) Spec() tools.Spec {
	return tools.Spec{
		Name:        "list_dir",
		Description: "List a directory: names, types and sizes, directories first.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"path":{"type":"string","description":"Directory path; ~ is the home directory"}},
"required":["path"],"additionalProperties":false}`),
		Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, UntrustedOutput: true,
		PathArgs: []string{"path"},
	}
}
func (t *listDir) Available(context.Context) error    { return nil }
func (t *listDir) Target(args json.RawMessage) string { return target(t.p, args, false) }

func (t *listDir) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	a, err := tools.ParseArgs(c.Args)
	if err != nil {
		return tools.Result{}, err
	}
	path, err := t.p.Resolve(a.String("path", ""))
	if err != nil {
		return policyError(err)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return errResult("cannot list %s: %v", path, err)
	}
	sort.SliceStable(entries, func(i, j int) bool {
		if entries[i].IsDir() != entries[j].IsDir() {
			return entries[i].IsDir()
		}
		return entries[i].Name() < entries[j].Name()
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d entries)\n", path, len(entries))
	hidden := 0
	for i, e := range entries {
		if i >= MaxDirEntries {
			fmt.Fprintf(&b, "[%d more entries not shown]\n", len(entries)-i)
			break
		}
		full := filepath.Join(path, e.Name())
		if t.p.Check(full) != nil {
			hidden++ // sensitive names are not even listed
			continue
		}
		switch {
		case e.IsDir():
			fmt.Fprintf(&b, "%s/\n", e.Name())
		case e.Type()&fs.ModeSymlink != 0:
			fmt.Fprintf(&b, "%s@\n", e.Name())
		default:
			size := int64(-1)
			if info, err := e.Info(); err == nil {
				size = info.Size()
			}
			fmt.Fprintf(&b, "%s\t%d bytes\n", e.Name(), size)
		}
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "[%d sensitive entries hidden]\n", hidden)
	}
	return tools.Result{Content: b.String()}, nil
}

type writeFile struct{ p *pathpolicy.Policy }

func (t *writeFile) Spec() tools.Spec {
	return tools.Spec{
		Name:        "write_file",
		Description: "Create or overwrite a text file with the given content. Needs the user's approval.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"path":{"type":"string","description":"File path; ~ is the home directory"},
"content":{"type":"string","description":"The complete new content"}},
"required":["path","content"],"additionalProperties":false}`),
		Risk: tools.RiskMedium, PathArgs: []string{"path"},
	}
}
func (t *writeFile) Available(context.Context) error    { return nil }
func (t *writeFile) Target(args json.RawMessage) string { return target(t.p, args, true) }

func (t *writeFile) Preview(_ context.Context, args json.RawMessage) string {
	a, err := tools.ParseArgs(args)
	if err != nil {
		return ""
	}
	path, err := t.p.ResolveForWrite(a.String("path", ""))
	if err != nil {
		return "refused: " + err.Error()
	}
	state := "new file"
	if st, err := os.Stat(path); err == nil {
		state = fmt.Sprintf("replaces %d bytes", st.Size())
	}
	return fmt.Sprintf("write %d bytes to %s (%s)", len(a.String("content", "")), path, state)
}

func (t *writeFile) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	a, err := tools.ParseArgs(c.Args)
	if err != nil {
		return tools.Result{}, err
	}
	content := a.String("content", "")
	if len(content) > MaxWriteBytes {
		return errResult("content is %d bytes; at most %d can be written", len(content), MaxWriteBytes)
	}
	path, err := t.p.ResolveForWrite(a.String("path", ""))
	if err != nil {
		return policyError(err)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return errResult("%s is a directory", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return errResult("creating %s: %v", filepath.Dir(path), err)
	}
	if err := atomicWrite(path, []byte(content)); err != nil {
		return errResult("writing %s: %v", path, err)
	}
	return tools.Result{Content: fmt.Sprintf("wrote %d bytes to %s", len(content), path)}, nil
}

func atomicWrite(path string, data []byte) error {
	return atomicfile.Write(path, data, atomicfile.KeepMode)
}

type editFile struct{ p *pathpolicy.Policy }

func (t *editFile) Spec() tools.Spec {
	return tools.Spec{
		Name:        "edit_file",
		Description: "Replace exact text in a file. old_text must occur exactly once unless replace_all is true. Needs the user's approval.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"path":{"type":"string"},
"old_text":{"type":"string","minLength":1,"description":"Exact text to find"},
"new_text":{"type":"string","description":"Replacement text"},
"replace_all":{"type":"boolean","description":"Replace every occurrence"}},
"required":["path","old_text","new_text"],"additionalProperties":false}`),
		Risk: tools.RiskMedium, PathArgs: []string{"path"},
	}
}
func (t *editFile) Available(context.Context) error    { return nil }
func (t *editFile) Target(args json.RawMessage) string { return target(t.p, args, true) }

func (t *editFile) Preview(_ context.Context, args json.RawMessage) string {
	a, err := tools.ParseArgs(args)
	if err != nil {
		return ""
	}
	path, err := t.resolve(a.String("path", ""))
	if err != nil {
		return "refused: " + err.Error()
	}
	return fmt.Sprintf("edit %s: replace %q with %q", path, snippet(a.String("old_text", ""), 80), snippet(a.String("new_text", ""), 80))
}

func snippet(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// resolve checks path as a write (an edit writes: the places where a file
// runs code are refused, pathpolicy.ExecRules) and as a read (the file
// must exist).
func (t *editFile) resolve(path string) (string, error) {
	if _, err := t.p.ResolveForWrite(path); err != nil {
		return "", err
	}
	return t.p.Resolve(path)
}

func (t *editFile) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	a, err := tools.ParseArgs(c.Args)
	if err != nil {
		return tools.Result{}, err
	}
	path, err := t.resolve(a.String("path", ""))
	if err != nil {
		return policyError(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return errResult("cannot stat %s: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return errResult("%s is not a regular file", path)
	}
	if st.Size() > MaxWriteBytes {
		return errResult("%s is %d bytes; files over %d bytes cannot be edited", path, st.Size(), MaxWriteBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errResult("reading %s: %v", path, err)
	}
	old, repl := a.String("old_text", ""), a.String("new_text", "")
	n := strings.Count(string(data), old)
	switch {
	case n == 0:
		return errResult("old_text was not found in %s; nothing was changed", path)
	case n > 1 && !a.Bool("replace_all", false):
		return errResult("old_text occurs %d times in %s; give more context or set replace_all; nothing was changed", n, path)
	}
	out := strings.Replace(string(data), old, repl, map[bool]int{true: -1, false: 1}[a.Bool("replace_all", false)])
	if err := atomicWrite(path, []byte(out)); err != nil {
		return errResult("writing %s: %v", path, err)
	}
	if n > 1 && a.Bool("replace_all", false) {
		return tools.Result{Content: fmt.Sprintf("replaced %d occurrences in %s", n, path)}, nil
	}
	return tools.Result{Content: fmt.Sprintf("replaced 1 occurrence in %s", path)}, nil
}

// target is the policy rule target of a file call: the resolved path, or the
// expanded path when resolution fails (policy will refuse it anyway).
func target(p *pathpolicy.Policy, args json.RawMessage, write bool) string {
	a, err := tools.ParseArgs(args)
	if err != nil {
		return ""
	}
	raw := a.String("path", "")
	var res string
	if write {
		res, err = p.ResolveForWrite(raw)
	} else {
		res, err = p.Resolve(raw)
	}
	if err != nil {
		if errors.Is(err, pathpolicy.ErrSensitive) {
			return ""
		}
		res, _ = p.Expand(raw)
	}
	return res
}
