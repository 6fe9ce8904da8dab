package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/adversarial"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"
)

// runSelftest is `hestia selftest security [--json] [--run TEXT]`: the
// adversarial suite against this install's policy configuration and trust
// rules, each case in a throwaway sandbox (the install's data is only read:
// its trust rules are copied).
func runSelftest(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 || args[0] != "security" {
		return usagef("usage: hestia selftest security [--json] [--run TEXT]")
	}
	flags := env.flags("selftest security")
	asJSON := flags.Bool("json", false, "print every outcome as JSON")
	only := flags.String("run", "", "only cases whose name contains TEXT")
	if err := parse(flags, args[1:], 0); err != nil {
		return err
	}
	paths, cfg, err := env.load()
	if err != nil {
		return err
	}
	threshold, err := policy.ParseThreshold(cfg.Policy.AutoApprove)
	if err != nil {
		return err
	}
	rules, err := installRules(ctx, paths)
	if err != nil {
		return err
	}
	pol := policy.Config{AutoApprove: threshold, DenyPrefixes: cfg.Policy.DenyPrefixes, NoTaint: !cfg.Safety.Taint}
	// The origin matrix runs with the whole suite, or alone with --run matrix.
	var matrix *adversarial.MatrixReport
	if *only == "" || strings.Contains("origin matrix", *only) {
		m := adversarial.RunMatrix(ctx, adversarial.Options{Policy: pol, Rules: rules})
		matrix = &m
	}
	var cases []adversarial.Case
	skipped := 0
	for _, c := range adversarial.Cases() {
		if *only != "" && !strings.Contains(c.Name, *only) {
			continue
		}
		if !adversarial.Applicable(c, cfg.Policy.DenyPrefixes) {
			skipped++
			continue
		}
		cases = append(cases, c)
	}
	if len(cases) == 0 && matrix == nil {
		return usagef("no case matches --run %q", *only)
	}
	start := time.Now()
	rep := adversarial.RunAll(ctx, cases, adversarial.Options{Policy: pol, Rules: rules})
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(struct {
			adversarial.Report
			Skipped int                       `json:"skipped"`
			Rules   int                       `json:"install_rules"`
			Matrix  *adversarial.MatrixReport `json:"origin_matrix,omitempty"`
		}{rep, skipped, len(rules), matrix})
	} else {
		printSelftest(env, rep, skipped+rep.Skipped, len(rules), time.Since(start))
		if rep.SkipReason != "" {
			fmt.Fprintf(env.Stdout, "%d sandbox-escape cases skipped: %s\n", rep.Skipped, rep.SkipReason)
		}
		if matrix != nil {
			printMatrix(env, *matrix)
		}
	}
	if rep.Failed > 0 || matrix != nil && matrix.Failed > 0 {
		return exitError{1}
	}
	return nil
}

// installRules reads the install's trust rules without creating or
// migrating its policy store.
func installRules(ctx context.Context, paths config.Paths) ([]policy.Rule, error) {
	path := paths.DB(policy.Schema.Name)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	sqldb, err := store.OpenExisting(ctx, path)
	if err != nil {
		return nil, err
	}
	defer sqldb.Close()
	rs, err := policy.NewRuleStore(ctx, &store.DB{DB: sqldb, Name: policy.Schema.Name, Path: path}, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the install's trust rules: %w", err)
	}
	return rs.List(ctx)
}

func printSelftest(env *Env, rep adversarial.Report, skipped, rules int, took time.Duration) {
	type tally struct{ pass, fail int }
	cats := map[string]*tally{}
	for _, o := range rep.Outcomes {
		t := cats[o.Category]
		if t == nil {
			t = &tally{}
			cats[o.Category] = t
		}
		if o.Passed {
			t.pass++
		} else {
			t.fail++
		}
	}
	names := make([]string, 0, len(cats))
	for n := range cats {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(env.Stdout, "Security self-test against this install's policy (%d trust rules copied into each sandbox)\n\n", rules)
	for _, n := range names {
		fmt.Fprintf(env.Stdout, "  %-46s %3d passed  %3d failed\n", n, cats[n].pass, cats[n].fail)
	}
	for _, o := range rep.Outcomes {
		if !o.Passed {
			fmt.Fprintf(env.Stdout, "\nFAIL %s\n  %s\n", o.Name, strings.Join(o.Problems, "\n  "))
		}
	}
	fmt.Fprintf(env.Stdout, "\n%d cases: %d passed, %d failed", rep.Total, rep.Passed, rep.Failed)
	if skipped > 0 {
		fmt.Fprintf(env.Stdout, ", %d skipped (their source tool is disabled by policy.deny_prefixes)", skipped)
	}
	fmt.Fprintf(env.Stdout, " in %s\n", took.Round(time.Millisecond))
}

func printMatrix(env *Env, m adversarial.MatrixReport) {
	fmt.Fprintf(env.Stdout, "\nOrigin matrix: %d origins × %d side-effecting tools × %d conditions (clean, tainted, rule-allowed, deny-ruled) = %d cells: %d passed, %d failed (%d ran, %d asked, %d refused)\n",
		m.Origins, m.Tools, m.Conditions, m.Cells, m.Passed, m.Failed, m.Ran, m.Cards, m.Refused)
	for _, f := range m.Failures {
		fmt.Fprintf(env.Stdout, "FAIL %s\n", f)
	}
}
