// Package storetest holds what the stores' tests share.
package storetest

import (
	"context"
	"sync/atomic"
)

// WatchedContext counts how often its Done channel is asked for:
// database/sql and the SQLite driver ask once per statement run with a
// context that can end, to watch it from a goroutine (see
// store.ReadContext).
type WatchedContext struct {
	context.Context
	asked atomic.Int64
}

// Done implements context.Context, counting the call.
func (c *WatchedContext) Done() <-chan struct{} {
	c.asked.Add(1)
	return c.Context.Done()
}

// Watches reports how often Done was asked for.
func (c *WatchedContext) Watches() int64 { return c.asked.Load() }
