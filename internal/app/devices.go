package app

import (
	"context"

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
	a.Server.SetAuthenticator(reg)
	reg.Routes(a.Server.API())
	return nil
}
