package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/devices"
)

// initDevices opens the device registry and makes it the daemon's
// authenticator: per-device scoped tokens beside the local admin token,
// pairing that creates a device, and the device routes.
func (a *App) initDevices(ctx context.Context) error {
	db, err := a.OpenStore(ctx, devices.Schema)
	if err != nil {
		return err
	}
	if a.Server == nil {
		return nil
	}
	reg, err := devices.Open(ctx, devices.Options{DB: db, Local: a.Token, Clock: a.Now, Logger: a.Log.With("component", "devices")})
	if err != nil {
		return err
	}
	a.Devices = reg
	// Write requests of paired devices are audited with who made them.
	// The audit log opens with the agent, after this; until then (and in
	// builds without it) nothing is recorded.
	reg.SetAudit(func(ctx context.Context, typ, summary string, data any) {
		if a.core.audit != nil {
			a.core.audit.Record(ctx, audit.Entry{Type: typ, Summary: summary, Data: data})
		}
	})
	a.Server.SetAuthenticator(reg)
	reg.Routes(a.Server.API())
	return nil
}
