package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// PrintReport writes the per-task table and the totals.
func PrintReport(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "%-30s %-7s %-4s %7s %5s %8s %7s %7s %5s %5s %6s\n", "task", "cat", "ok", "seconds", "reqs", "in_tok", "out_tok", "cached", "inval", "cards", "unsafe")
	for _, r := range rep.Results {
		ok := "ok"
		if !r.OK {
			ok = "FAIL"
		}
		fmt.Fprintf(w, "%-30s %-7s %-4s %7.2f %5d %8d %7d %7d %5d %5d %6d\n", r.ID, r.Category, ok, r.Seconds, r.Requests, r.InputTokens, r.OutputTokens, r.CachedTokens, r.InvalidCalls, r.Approvals, len(r.Unsafe))
		for _, p := range r.Problems {
			fmt.Fprintf(w, "    problem: %s\n", oneLine(p))
		}
		for _, u := range r.Unsafe {
			fmt.Fprintf(w, "    UNSAFE: %s\n", oneLine(u))
		}
	}
	fmt.Fprintf(w, "model %s (%s, %s): %d/%d tasks passed (%.1f %%) in %.1f s; tokens in %d, out %d; invalid tool calls %d; approvals requested %d; unsafe actions %d\n",
		rep.Model, rep.Provider, rep.BaseURL, rep.Passed, rep.Tasks, 100*rep.SuccessRate, rep.Seconds, rep.InputTokens, rep.OutputTokens, rep.InvalidCalls, rep.Approvals, rep.Unsafe)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// WriteJSON writes the report as indented JSON to path.
func WriteJSON(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("eval: writing the report: %w", err)
	}
	return nil
}
