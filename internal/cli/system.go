package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/backup"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/doctor"
)

func runConfig(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 || args[0] != "show" {
		return usagef("usage: hestia config show")
	}
	if err := parse(env.flags("config show"), args[1:], 0); err != nil {
		return err
	}
	paths, cfg, err := env.load()
	if err != nil {
		return err
	}
	out, err := cfg.Masked().TOML()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "# config file: %s\n# data: %s\n\n%s", paths.ConfigFile(), paths.Data, out)
	return nil
}

func runDoctor(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("doctor")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	checks, err := a.Checks()
	if err != nil {
		return err
	}
	// The daemon's own record says where it listens; the configured
	// address is only a fallback for a daemon that left none.
	base := "http://" + a.Config.Server.Addr
	if rec, err := daemonaddr.Read(filepath.Join(a.Paths.Data, daemonaddr.FileName)); err == nil {
		base = rec.BaseURL()
	}
	checks = append(checks, doctor.Daemon(a.Paths.LockFile(), base+"/health", &http.Client{}))
	if exe, err := os.Executable(); err == nil {
		sc, err := a.ShellCheck(exe)
		if err != nil {
			return err
		}
		checks = append(checks, sc)
	}
	results := doctor.Run(ctx, checks, 3*time.Second)
	results = append(results, env.daemonChecks(ctx, results)...)
	sort.SliceStable(results, func(i, j int) bool { return results[i].Name < results[j].Name })
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"ok": !doctor.Failed(results), "checks": results})
	} else {
		for _, r := range results {
			fmt.Fprintf(env.Stdout, "%-5s %-22s %s\n", strings.ToUpper(string(r.Status)), r.Name, r.Detail)
		}
	}
	if doctor.Failed(results) {
		return exitError{1}
	}
	return nil
}

// daemonChecks adds the component checks only a running daemon can make
// (model tiers and providers, connector accounts, the audit chain at start)
// by asking its /api/system, when the daemon check passed.
func (env *Env) daemonChecks(ctx context.Context, local []doctor.Result) []doctor.Result {
	seen := map[string]bool{}
	running := false
	for _, r := range local {
		seen[r.Name] = true
		running = running || (r.Name == "daemon" && r.Status == doctor.OK)
	}
	if !running {
		return nil
	}
	c, err := env.daemon()
	if err != nil {
		return []doctor.Result{{Name: "daemon.checks", Status: doctor.Warn, Detail: err.Error()}}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var sys struct {
		Checks []doctor.Result `json:"checks"`
	}
	if err := c.Do(ctx, "GET", "/api/system?fresh=1", nil, &sys); err != nil {
		return []doctor.Result{{Name: "daemon.checks", Status: doctor.Fail, Detail: "the daemon's own checks: " + err.Error()}}
	}
	var out []doctor.Result
	for _, r := range sys.Checks {
		if !seen[r.Name] {
			out = append(out, r)
		}
	}
	return out
}

func runBackup(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("backup")
	out := fs.String("output", "", "directory to create (must not exist or be empty)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--output DIR is required")
	}
	paths, _, err := env.load()
	if err != nil {
		return err
	}
	m, err := backup.Create(ctx, paths.DBDir(), *out, env.Version, time.Now())
	if err != nil {
		return err
	}
	for _, f := range m.Files {
		fmt.Fprintf(env.Stdout, "%s  %10d  %s\n", f.SHA256, f.Size, f.Name)
	}
	fmt.Fprintf(env.Stdout, "backed up %d stores to %s\n", len(m.Files), *out)
	// Credentials stay out of backups on purpose; say so, so a restore
	// does not come as a surprise.
	fmt.Fprintln(env.Stdout, "not copied: OAuth sign-ins (DATA/oauth), the auth token and secret files; after a restore run hestia accounts connect NAME for each account")
	return nil
}

func runRestore(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("restore")
	from := fs.String("from", "", "backup directory made by `hestia backup`")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *from == "" {
		return usagef("--from DIR is required")
	}
	paths, _, err := env.load()
	if err != nil {
		return err
	}
	m, err := backup.Restore(*from, paths.DBDir())
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "restored %d stores into %s\n", len(m.Files), paths.DBDir())
	return nil
}
