package wiki

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch keeps the index current with edits made outside Hestia until ctx
// ends: filesystem events start a short quiet period, after which the
// folder is reconciled (only changed files are read). Events are an
// optimisation; Reconcile on start stays the authority, so a missed event
// only delays a change until the next event or restart. kicked, when not
// nil, receives the stats of every reconcile the watcher ran (tests).
func (w *Wiki) Watch(ctx context.Context, quiet time.Duration, kicked func(ReconcileStats)) error {
	if quiet <= 0 {
		quiet = 300 * time.Millisecond
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("starting wiki watcher: %w", err)
	}
	defer fw.Close()
	addTree := func(dir string) {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if p != w.root && skipName(d.Name()) {
				return filepath.SkipDir
			}
			if err := fw.Add(p); err != nil {
				w.log.Warn("wikiWatchAdd", "path", p, "err", err)
			}
			return nil
		})
	}
	addTree(w.root)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			// An overflow loses events: reconcile everything soon.
			w.log.Warn("wikiWatch", "err", err)
			timer.Reset(quiet)
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if skipName(filepath.Base(ev.Name)) && !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
				continue // our own temporaries and editor swap files
			}
			if ev.Has(fsnotify.Create) {
				addTree(ev.Name) // a new folder (no-op for a file)
			}
			timer.Reset(quiet)
		case <-timer.C:
			st, err := w.Reconcile(ctx)
			if err != nil && ctx.Err() == nil {
				w.log.Warn("wikiReconcile", "err", err)
			}
			if kicked != nil {
				kicked(st)
			}
		}
	}
}
