package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/store"
)

// VerifyAudit walks the whole audit hash chain of this home without
// creating or migrating the database. ok is false with a nil error when the
// chain is broken; a missing audit database is reported as fs.ErrNotExist.
func (a *App) VerifyAudit(ctx context.Context, tail int) (audit.VerifyResult, error) {
	path := a.Paths.DB(audit.Schema.Name)
	if _, err := os.Stat(path); err != nil {
		return audit.VerifyResult{}, err
	}
	sqldb, err := store.OpenExisting(ctx, path)
	if err != nil {
		return audit.VerifyResult{}, err
	}
	defer sqldb.Close()
	l := audit.New(&store.DB{DB: sqldb, Name: audit.Schema.Name, Path: path}, a.Now, a.Log)
	return l.VerifyTail(ctx, tail)
}

// auditChainCheck is the doctor and system-page check of the whole chain.
func (a *App) auditChainCheck() doctor.Check {
	return doctor.Check{Name: "audit.chain", Run: func(ctx context.Context) (doctor.Status, string) {
		res, err := a.VerifyAudit(ctx, 0)
		return auditStatus(res, err)
	}}
}

func auditStatus(res audit.VerifyResult, err error) (doctor.Status, string) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return doctor.Skip, "no audit trail yet"
	case err != nil:
		return doctor.Fail, "could not read the audit trail: " + err.Error()
	case !res.OK:
		return doctor.Fail, fmt.Sprintf("hash chain broken at event %d of %d: %s (run `hestia audit verify`)", res.FirstBad, res.Count, res.Problem)
	}
	return doctor.OK, fmt.Sprintf("%d events, hash chain intact", res.Count)
}

// initAuditTail verifies the newest audit rows when the daemon starts and
// keeps the outcome as a check, so a break found at start stays visible on
// the system page even after new rows are appended.
func (a *App) initAuditTail(ctx context.Context) error {
	if a.Server == nil {
		return nil
	}
	res, err := a.VerifyAudit(ctx, audit.DefaultTail)
	status, detail := auditStatus(res, err)
	switch status {
	case doctor.Fail:
		a.Log.Error("audit trail verification at start failed", "detail", detail)
	case doctor.OK:
		detail = fmt.Sprintf("newest %d events verified at start", res.Count)
	}
	a.AddCheck(doctor.Check{Name: "audit.chain_at_start", Run: func(context.Context) (doctor.Status, string) { return status, detail }})
	return nil
}
