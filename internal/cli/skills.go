package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/hestia-dev/hestia/internal/skills"
)

// runSkills installs, lists, removes and scans skills. It works on the
// skills folder directly (daemon running or not); the daemon sees changes
// at its next turn.
func runSkills(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("missing subcommand: install, list, remove or scan")
	}
	switch args[0] {
	case "install":
		return skillsInstall(ctx, env, args[1:])
	case "list":
		return skillsList(ctx, env, args[1:])
	case "remove":
		return skillsRemove(ctx, env, args[1:])
	case "scan":
		return skillsScan(ctx, env, args[1:])
	default:
		return usagef("unknown subcommand %q: install, list, remove or scan", args[0])
	}
}

func openSkills(ctx context.Context, env *Env) (*skills.Store, func(), error) {
	a, err := env.openApp()
	if err != nil {
		return nil, nil, err
	}
	st, err := a.OpenSkills(ctx)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return st, func() { a.Close() }, nil
}

// argFirst moves a leading positional argument behind the flags.
func argFirst(args []string) []string { return nameFirst(args) }

func printFindings(env *Env, fs []skills.Finding) {
	for _, f := range fs {
		fmt.Fprintf(env.Stdout, "  %s\n", f)
		if f.Excerpt != "" {
			fmt.Fprintf(env.Stdout, "      %s\n", f.Excerpt)
		}
	}
}

func skillsInstall(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("skills install")
	accept := fs.Bool("accept-risk", false, "install even though the scan found risky content (after reviewing it)")
	if err := parse(fs, argFirst(args), 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia skills install PATH|URL [--accept-risk]")
	}
	st, done, err := openSkills(ctx, env)
	if err != nil {
		return err
	}
	defer done()
	sk, findings, err := st.Install(ctx, fs.Arg(0), skills.InstallOptions{AcceptRisk: *accept})
	if len(findings) > 0 {
		fmt.Fprintf(env.Stdout, "The scan found %d risky items:\n", len(findings))
		printFindings(env, findings)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Installed skill %s (%s) into %s\n", sk.Name, sk.Description, sk.Dir)
	if sk.Manifest == nil {
		fmt.Fprintln(env.Stdout, "It has no TOOLS.json: while loaded it may use read-only tools only.")
	}
	return nil
}

func skillsList(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("skills list")
	asJSON := fs.Bool("json", false, "print the skills as JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	st, done, err := openSkills(ctx, env)
	if err != nil {
		return err
	}
	defer done()
	list, err := st.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []*skills.Skill{}
		}
		return writeJSON(env.Stdout, map[string]any{"skills": list})
	}
	if len(list) == 0 {
		fmt.Fprintln(env.Stdout, "No skills installed (hestia skills install PATH|URL).")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tTOOLS\tSTATUS\tDESCRIPTION")
	for _, sk := range list {
		tools := "read-only"
		if sk.Manifest != nil {
			var n []string
			for _, g := range sk.Manifest.Tools {
				n = append(n, g.Name)
			}
			tools = strings.Join(n, ",")
		}
		status := "ok"
		switch {
		case sk.Blocked != "":
			status = "blocked: " + sk.Blocked
		case sk.AcceptedRisk:
			status = fmt.Sprintf("ok (risk accepted, %d findings)", len(sk.Findings))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sk.Name, sk.Version, tools, status, sk.Description)
	}
	return tw.Flush()
}

func skillsRemove(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("skills remove")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia skills remove NAME")
	}
	st, done, err := openSkills(ctx, env)
	if err != nil {
		return err
	}
	defer done()
	if err := st.Remove(ctx, fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Removed skill %s\n", fs.Arg(0))
	return nil
}

// skillsScan scans a folder before installing it, or an installed skill
// again (accepting its current content with --accept-risk).
func skillsScan(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("skills scan")
	accept := fs.Bool("accept-risk", false, "accept an installed skill's current content despite findings")
	if err := parse(fs, argFirst(args), 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia skills scan NAME|PATH [--accept-risk]")
	}
	target := fs.Arg(0)
	if info, err := os.Stat(target); err == nil && info.IsDir() {
		findings, err := skills.Scan(target)
		if err != nil {
			return err
		}
		return reportScan(env, target, findings)
	}
	st, done, err := openSkills(ctx, env)
	if err != nil {
		return err
	}
	defer done()
	sk, findings, err := st.Rescan(ctx, target, *accept)
	if errors.Is(err, skills.ErrNotFound) {
		return fmt.Errorf("%s is neither an installed skill nor a folder", target)
	}
	if err != nil {
		return err
	}
	if sk.Blocked != "" {
		fmt.Fprintf(env.Stdout, "%s is blocked: %s\n", sk.Name, sk.Blocked)
	}
	return reportScan(env, target, findings)
}

func reportScan(env *Env, target string, findings []skills.Finding) error {
	if len(findings) == 0 {
		fmt.Fprintf(env.Stdout, "%s: no findings (%d rules)\n", target, skills.PatternCount())
		return nil
	}
	fmt.Fprintf(env.Stdout, "%s: %d findings\n", target, len(findings))
	printFindings(env, findings)
	return fmt.Errorf("the scan found %d risky items", len(findings))
}
