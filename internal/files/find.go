package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Find limits.
const (
	FindMaxWalk    = 200_000 // entries visited
	FindMaxResults = 1000
	findDefault    = 100
)

// FindTool is find_files: a bounded walk with name, size, time and type
// filters that needs no shell. Sensitive entries are skipped, symlinks are
// not followed.
func FindTool(p *pathpolicy.Policy, now func() time.Time) tools.Tool {
	if now == nil {
		now = time.Now
	}
	return &findFiles{p: p, now: now}
}

type findFiles struct {
	p   *pathpolicy.Policy
	now func() time.Time
}

func (t *findFiles) Spec() tools.Spec {
	return tools.Spec{
		Name:        "find_files",
		Description: "Find files under a folder by name pattern, size and modification time (no shell). Sizes like 100MB or 1.5GiB; times as 2024-05-01 or relative like 7d/12h. Results sorted by path, size or modified (largest/newest first).",
		Schema: json.RawMessage(`{"type":"object","properties":{
"root":{"type":"string","description":"Folder to search; ~ is the home directory (default ~)"},
"name":{"type":"string","maxLength":200,"description":"Glob on the file name, e.g. *.pdf (case-insensitive)"},
"min_size":{"type":"string","maxLength":20},"max_size":{"type":"string","maxLength":20},
"modified_after":{"type":"string","maxLength":40},"modified_before":{"type":"string","maxLength":40},
"type":{"type":"string","enum":["file","dir","any"]},
"sort":{"type":"string","enum":["path","size","modified"]},
"max_results":{"type":"integer","minimum":1,"maximum":1000}},
"additionalProperties":false}`),
		Risk: tools.RiskLow, ReadOnly: true, ParallelSafe: true, UntrustedOutput: true, PathArgs: []string{"root"},
	}
}

func (t *findFiles) Available(context.Context) error    { return nil }
func (t *findFiles) Target(args json.RawMessage) string { return targetOf(t.p, args, "root") }

type found struct {
	path  string
	size  int64
	mod   time.Time
	isDir bool
}

func (t *findFiles) Run(ctx context.Context, c tools.Call) (tools.Result, error) {
	a, err := tools.ParseArgs(c.Args)
	if err != nil {
		return tools.Result{}, err
	}
	root, err := t.p.Resolve(a.String("root", "~"))
	if err != nil {
		return policyError(err)
	}
	pattern := strings.ToLower(a.String("name", ""))
	if pattern != "" {
		if _, err := filepath.Match(pattern, ""); err != nil {
			return errResult("name pattern %q is malformed: %v", pattern, err)
		}
	}
	minSize, err := parseSize(a.String("min_size", ""))
	if err != nil {
		return errResult("min_size: %v", err)
	}
	maxSize, err := parseSize(a.String("max_size", ""))
	if err != nil {
		return errResult("max_size: %v", err)
	}
	after, err := parseTime(a.String("modified_after", ""), t.now())
	if err != nil {
		return errResult("modified_after: %v", err)
	}
	before, err := parseTime(a.String("modified_before", ""), t.now())
	if err != nil {
		return errResult("modified_before: %v", err)
	}
	kind := a.String("type", "file")
	limit := a.Int("max_results", findDefault)
	var hits []found
	visited, hidden := 0, 0
	cut := false
	walkErr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			return nil
		}
		visited++
		if visited > FindMaxWalk {
			cut = true
			return filepath.SkipAll
		}
		if p != root && t.p.Check(p) != nil {
			hidden++
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if p == root {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // not followed, not reported as a file
		}
		if (kind == "file" && d.IsDir()) || (kind == "dir" && !d.IsDir()) {
			return nil
		}
		if pattern != "" {
			if ok, _ := filepath.Match(pattern, strings.ToLower(d.Name())); !ok {
				return nil
			}
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		size := info.Size()
		if (minSize >= 0 && size < minSize) || (maxSize >= 0 && size > maxSize) {
			return nil
		}
		if (!after.IsZero() && !info.ModTime().After(after)) || (!before.IsZero() && !info.ModTime().Before(before)) {
			return nil
		}
		hits = append(hits, found{path: p, size: size, mod: info.ModTime(), isDir: d.IsDir()})
		return nil
	})
	if walkErr != nil && !errors.Is(walkErr, filepath.SkipAll) {
		return errResult("searching %s: %v", root, walkErr)
	}
	switch a.String("sort", "path") {
	case "size":
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].size > hits[j].size })
	case "modified":
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].mod.After(hits[j].mod) })
	default:
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].path < hits[j].path })
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d matches under %s", len(hits), root)
	if len(hits) > limit {
		fmt.Fprintf(&b, " (showing %d)", limit)
	}
	b.WriteString("\n")
	for _, h := range hits[:min(len(hits), limit)] {
		name := h.path
		if h.isDir {
			name += "/"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\n", humanSize(h.size), h.mod.UTC().Format("2006-01-02 15:04"), name)
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "[%d sensitive entries skipped]\n", hidden)
	}
	if cut {
		fmt.Fprintf(&b, "[stopped after visiting %d entries; search a narrower folder for complete results]\n", FindMaxWalk)
	}
	return tools.Result{Content: b.String()}, nil
}

func humanSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// parseSize reads 100, 100k, 100MB, 1.5GiB (k/M/G/T are 1024-based, as
// file managers show them); "" is -1 (no bound).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return -1, nil
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || num < 0 {
		return 0, fmt.Errorf("%q is not a size (examples: 500, 20k, 100MB, 1.5GiB)", s)
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
	m, ok := mult[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit (use B, KB, MB, GB, TB)", s)
	}
	return int64(num * m), nil
}

// parseTime reads a date, an RFC 3339 time, or an age like 7d / 12h / 30m.
func parseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	if n := len(s); n > 1 {
		if v, err := strconv.Atoi(s[:n-1]); err == nil && v >= 0 {
			switch s[n-1] {
			case 'd':
				return now.Add(-time.Duration(v) * 24 * time.Hour), nil
			case 'h':
				return now.Add(-time.Duration(v) * time.Hour), nil
			case 'm':
				return now.Add(-time.Duration(v) * time.Minute), nil
			case 'w':
				return now.Add(-time.Duration(v) * 7 * 24 * time.Hour), nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (use 2024-05-01, 2024-05-01T10:00:00Z or an age like 7d, 12h)", s)
}

// targetOf is the rule target of a path argument other than "path".
func targetOf(p *pathpolicy.Policy, args json.RawMessage, key string) string {
	a, err := tools.ParseArgs(args)
	if err != nil {
		return ""
	}
	res, err := p.Resolve(a.String(key, "~"))
	if err != nil {
		res, _ = p.Expand(a.String(key, "~"))
	}
	return res
}
