package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/hestia-dev/hestia/internal/audit"
)

// runAuditVerify is `hestia audit verify [--json] [--tail N]`: it walks the
// audit hash chain in the database file itself (no daemon needed, nothing
// created or migrated) and reports the first broken link. Exit status 1
// when the chain is broken.
func runAuditVerify(ctx context.Context, env *Env, args []string) error {
	flags := env.flags("audit verify")
	asJSON := flags.Bool("json", false, "print the result as JSON")
	tail := flags.Int("tail", 0, "verify only the newest N events (0: all)")
	reanchor := flags.Bool("reanchor", false, "accept the trail as it is now: record its newest event as the anchor")
	if err := parse(flags, args, 0); err != nil {
		return err
	}
	if *tail < 0 {
		return usagef("--tail must be 0 or more, got %d", *tail)
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	res, err := a.VerifyAudit(ctx, *tail)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return err
	}
	if missing {
		res.OK = true // nothing recorded, nothing broken
	}
	path := a.Paths.DB(audit.Schema.Name)
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(struct {
			audit.VerifyResult
			Path    string `json:"path"`
			Missing bool   `json:"missing,omitempty"`
		}{res, path, missing})
	} else {
		switch {
		case missing:
			fmt.Fprintf(env.Stdout, "no audit trail yet (%s does not exist)\n", path)
		case res.OK:
			fmt.Fprintf(env.Stdout, "ok: %d events, hash chain intact (%s)\n", res.Count, path)
		default:
			fmt.Fprintf(env.Stdout, "BROKEN at event %d: %s\n%d events checked in %s\n", res.FirstBad, res.Problem, res.Count, path)
		}
	}
	if *reanchor && !missing {
		an, err := a.Reanchor(ctx)
		if err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(env.Stdout, "anchored at event %d\n", an.ID)
		}
		return nil
	}
	if !missing && !res.OK {
		return exitError{1}
	}
	return nil
}
