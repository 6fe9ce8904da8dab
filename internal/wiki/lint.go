package wiki

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Lint finding kinds.
const (
	LintBrokenLink  = "broken_link"
	LintSelfLink    = "self_link"
	LintOrphan      = "orphan"
	LintDuplicate   = "duplicate_title"
	LintNoFrontMatt = "missing_front_matter"
	LintReviewDue   = "review_due"
	LintFileProblem = "file_problem"
	maxLintFindings = 5000
)

// Finding is one lint report line.
type Finding struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Line   int    `json:"line,omitempty"`
	Detail string `json:"detail"`
}

// Lint reports broken links, links to the page itself, orphan pages (no
// page links to them), duplicate titles, pages without front matter, past
// review_by dates and files the index could only partly read (malformed
// front matter, invalid UTF-8, binary content, oversized files). Special
// files and sources/ are not expected to be linked or to carry front
// matter.
func (w *Wiki) Lint(ctx context.Context) ([]Finding, error) {
	out := []Finding{}
	add := func(f Finding) bool {
		out = append(out, f)
		return len(out) < maxLintFindings
	}
	rows, err := w.db.QueryContext(ctx, `SELECT p.path, l.target, l.heading, l.line,
		EXISTS (SELECT 1 FROM page_keys k WHERE k.key = l.target_key),
		EXISTS (SELECT 1 FROM page_keys k WHERE k.key = l.target_key AND k.page_id = l.page_id)
		FROM links l JOIN pages p ON p.id = l.page_id ORDER BY p.path, l.line`)
	if err != nil {
		return nil, fmt.Errorf("linting links: %w", err)
	}
	for rows.Next() {
		var f Finding
		var target, heading string
		var exists, self bool
		if err := rows.Scan(&f.Path, &target, &heading, &f.Line, &exists, &self); err != nil {
			rows.Close()
			return nil, err
		}
		switch {
		case !exists:
			f.Kind, f.Detail = LintBrokenLink, fmt.Sprintf("[[%s]] points to no page", target)
		case self && target != "":
			f.Kind, f.Detail = LintSelfLink, fmt.Sprintf("[[%s]] links the page to itself", target)
		default:
			continue
		}
		if !add(f) {
			break
		}
	}
	rows.Close()
	pages, err := w.db.QueryContext(ctx, `SELECT p.path, p.kind, p.title, p.has_fm, p.review_by, p.problems,
		EXISTS (SELECT 1 FROM links l WHERE l.page_id != p.id AND l.target_key IN (SELECT key FROM page_keys WHERE page_id = p.id))
		FROM pages p ORDER BY p.path`)
	if err != nil {
		return nil, fmt.Errorf("linting pages: %w", err)
	}
	defer pages.Close()
	titles := map[string][]string{}
	today := w.now().Format(time.DateOnly)
	for pages.Next() {
		var p, kind, title, review, problems string
		var hasFM, linked bool
		if err := pages.Scan(&p, &kind, &title, &hasFM, &review, &problems, &linked); err != nil {
			return nil, err
		}
		var probs []string
		_ = json.Unmarshal([]byte(problems), &probs)
		for _, pr := range probs {
			add(Finding{Kind: LintFileProblem, Path: p, Detail: pr})
		}
		if kind != KindPage {
			continue
		}
		if !hasFM {
			add(Finding{Kind: LintNoFrontMatt, Path: p, Detail: "no YAML front matter (title, tags, sources…)"})
		}
		if !linked {
			add(Finding{Kind: LintOrphan, Path: p, Detail: "no page links here"})
		}
		if review != "" {
			if d, err := parseDate(review); err == nil && d.Format(time.DateOnly) < today {
				add(Finding{Kind: LintReviewDue, Path: p, Detail: "review_by " + review + " has passed"})
			}
		}
		if k := strings.ToLower(strings.TrimSpace(title)); k != "" {
			titles[k] = append(titles[k], p)
		}
	}
	if err := pages.Err(); err != nil {
		return nil, err
	}
	var dups []string
	for k, ps := range titles {
		if len(ps) > 1 {
			dups = append(dups, k)
		}
	}
	sort.Strings(dups)
	for _, k := range dups {
		ps := titles[k]
		for _, p := range ps {
			add(Finding{Kind: LintDuplicate, Path: p, Detail: fmt.Sprintf("title %q is also used by %s", k, strings.Join(others(ps, p), ", "))})
		}
	}
	if len(out) > maxLintFindings {
		out = out[:maxLintFindings]
	}
	return out, nil
}

func others(all []string, self string) []string {
	var out []string
	for _, p := range all {
		if p != self {
			out = append(out, p)
		}
	}
	return out
}
