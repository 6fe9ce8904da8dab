package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/store"
)

// VerifyAudit walks the audit hash chain of this home (the newest tail
// rows; all when tail <= 0) without creating or migrating the database, and
// checks the anchor the daemon keeps outside it (AuditAnchorFile). ok is
// false with a nil error when the chain or the anchor is broken; a missing
// audit database is reported as fs.ErrNotExist.
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
	res, err := l.VerifyTail(ctx, tail)
	if err != nil || !res.OK {
		return res, err
	}
	anchor, ok, err := readAnchor(a.AuditAnchorFile())
	if err != nil || !ok {
		return res, err
	}
	if err := l.CheckAnchor(ctx, anchor); errors.Is(err, audit.ErrAnchor) {
		res.OK, res.FirstBad, res.Problem = false, anchor.ID, err.Error()
	} else if err != nil {
		return res, err
	}
	return res, nil
}

// AuditAnchorFile holds the newest audit row's id and hash, written by the
// daemon as rows are added. Delete it (or run `hestia audit verify
// --reanchor`) to accept the trail as it is now.
func (a *App) AuditAnchorFile() string { return filepath.Join(a.Paths.Data, "audit-anchor.json") }

func readAnchor(path string) (audit.Anchor, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return audit.Anchor{}, false, nil
	}
	if err != nil {
		return audit.Anchor{}, false, fmt.Errorf("reading the audit anchor: %w", err)
	}
	var an audit.Anchor
	if err := json.Unmarshal(b, &an); err != nil {
		return audit.Anchor{}, false, fmt.Errorf("reading the audit anchor %s: %w", path, err)
	}
	return an, true, nil
}

func writeAnchor(path string, an audit.Anchor) error {
	b, err := json.Marshal(an)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("writing the audit anchor: %w", err)
	}
	return nil
}

// Reanchor records the audit trail's current newest row as its anchor.
func (a *App) Reanchor(ctx context.Context) (audit.Anchor, error) {
	path := a.Paths.DB(audit.Schema.Name)
	sqldb, err := store.OpenExisting(ctx, path)
	if err != nil {
		return audit.Anchor{}, err
	}
	defer sqldb.Close()
	an, err := audit.New(&store.DB{DB: sqldb, Name: audit.Schema.Name, Path: path}, a.Now, a.Log).Head(ctx)
	if err != nil {
		return audit.Anchor{}, err
	}
	an.At = a.Now().UTC()
	return an, writeAnchor(a.AuditAnchorFile(), an)
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
	if status == doctor.Fail {
		// Keep the anchor as evidence; moving it forward would hide the
		// break. The user accepts the trail with audit verify --reanchor.
		return nil
	}
	a.AddWorker("audit-anchor", a.keepAuditAnchor)
	return nil
}

// keepAuditAnchor moves the anchor to the newest row every half minute and
// once more at shutdown.
func (a *App) keepAuditAnchor(ctx context.Context) error {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	var last audit.Anchor
	update := func(ctx context.Context) {
		path := a.Paths.DB(audit.Schema.Name)
		sqldb, err := store.OpenExisting(ctx, path)
		if err != nil {
			a.Log.Warn("audit anchor: opening the audit store", "err", err)
			return
		}
		defer sqldb.Close()
		an, err := audit.New(&store.DB{DB: sqldb, Name: audit.Schema.Name, Path: path}, a.Now, a.Log).Head(ctx)
		if err != nil || an.ID == last.ID {
			return
		}
		an.At = a.Now().UTC()
		if err := writeAnchor(a.AuditAnchorFile(), an); err != nil {
			a.Log.Warn("audit anchor", "err", err)
			return
		}
		last = an
	}
	update(ctx)
	for {
		select {
		case <-ctx.Done():
			update(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
			update(ctx)
		}
	}
}
