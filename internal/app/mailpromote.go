package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mailpromote"
	"github.com/hestia-dev/hestia/internal/wiki"
)

// registerMailPromoter runs the mail → wiki promotion job ([wiki] promote).
// It reads the mail mirror through its own handle (read-only use), writes
// notes through the wiki, and calls the model through the budget guard.
func (a *App) registerMailPromoter(ctx context.Context, w *wiki.Wiki) error {
	cfg := a.Config.Wiki
	if !cfg.Promote || a.Chat == nil {
		return nil
	}
	ms, err := mail.Open(ctx, mail.Options{DBPath: a.Paths.DB(mail.Schema.Name), BlobDir: filepath.Join(a.Paths.Data, "mail", "blobs"),
		Logger: a.Log.With("component", "mail-promoter"), Now: a.Now})
	if err != nil {
		return err
	}
	a.OnClose(ms.Close)
	db, err := a.OpenStore(ctx, mailpromote.Schema)
	if err != nil {
		return err
	}
	p := &mailpromote.Promoter{Mail: ms, Wiki: w, DB: db, LLM: a.Chat, Tier: llm.Tier3, Log: a.Log.With("component", "mail-promoter"), Now: a.Now}
	// A built-in job: `hestia jobs run wiki.promote` promotes a batch now.
	return a.builtinJob(ctx, "wiki.promote", cfg.PromoteInterval.D(), 30*time.Minute, func(ctx context.Context) error {
		if err := a.backgroundAllowed(); err != nil {
			return err // consent.go: no mail leaves for the model unasked
		}
		st, err := p.RunBatch(ctx, cfg.PromoteBatch)
		if err == nil && st.Considered > 0 {
			p.Log.Info("mailPromoted", "promoted", st.Promoted, "skipped", st.Skipped, "filtered", st.Filtered, "deferred", st.Deferred, "unchanged", st.Unchanged)
		}
		return err
	})
}
