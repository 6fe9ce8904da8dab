package config

import (
	"path/filepath"
	"strconv"
	"time"
)

// WikiConfig configures the Markdown wiki (long-term memory).
type WikiConfig struct {
	// Path is the wiki folder; empty means DATA/wiki. It may be an
	// existing Obsidian vault.
	Path string `toml:"path"`
	// Watch keeps the index current with edits made in other editors.
	Watch bool `toml:"watch"`
	// Promote turns on the mail → wiki promotion job; PromoteInterval
	// spaces its runs and PromoteBatch bounds threads per run.
	Promote         bool     `toml:"promote"`
	PromoteInterval Duration `toml:"promote_interval"`
	PromoteBatch    int      `toml:"promote_batch"`
}

// Root is the wiki folder in effect: Path, or DATA/wiki when unset.
func (w WikiConfig) Root(p Paths) string {
	if w.Path != "" {
		return w.Path
	}
	return filepath.Join(p.Data, "wiki")
}

func defaultWiki() WikiConfig {
	return WikiConfig{Watch: true, Promote: true, PromoteInterval: Duration(30 * time.Minute), PromoteBatch: 20}
}

func (w WikiConfig) validate() []error {
	var errs []error
	if w.Path != "" && !filepath.IsAbs(w.Path) {
		errs = append(errs, &Error{Key: "wiki.path", Value: w.Path, Allowed: "an absolute path"})
	}
	if w.PromoteInterval.D() < time.Minute || w.PromoteInterval.D() > 7*24*time.Hour {
		errs = append(errs, &Error{Key: "wiki.promote_interval", Value: w.PromoteInterval.D().String(), Allowed: "a duration between 1m and 168h"})
	}
	if w.PromoteBatch < 1 || w.PromoteBatch > 500 {
		errs = append(errs, &Error{Key: "wiki.promote_batch", Value: strconv.Itoa(w.PromoteBatch), Allowed: "1 to 500"})
	}
	return errs
}
