package mail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Source is a folder `hestia mail import` registered: the daemon rescans
// it (Reconcile, so files removed there leave the mirror) until removed.
type Source struct {
	Path    string `json:"path"`
	Account string `json:"account"`
}

// AddSource registers the folder at path (made absolute) for rescans,
// replacing the account of an earlier registration. A file (an mbox) is
// refused: only a folder can gain mail.
func (s *Store) AddSource(ctx context.Context, path, account string) (Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Source{}, fmt.Errorf("resolving source %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Source{}, fmt.Errorf("registering source: %w", err)
	}
	if !fi.IsDir() {
		return Source{}, fmt.Errorf("registering source %s: not a folder", abs)
	}
	if account == "" {
		account = "local"
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO sources (path, account, added_at) VALUES (?, ?, ?)
		ON CONFLICT (path) DO UPDATE SET account = excluded.account`, abs, account, s.now().Unix()); err != nil {
		return Source{}, fmt.Errorf("registering source %s: %w", abs, err)
	}
	return Source{Path: abs, Account: account}, nil
}

// RemoveSource unregisters path; ErrSourceNotFound when it was not registered.
func (s *Store) RemoveSource(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("resolving source %s: %w", path, err)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM sources WHERE path = ?`, abs)
	if err != nil {
		return fmt.Errorf("removing source %s: %w", abs, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %s", ErrSourceNotFound, abs)
	}
	return nil
}

// ErrSourceNotFound: the folder is not a registered source.
var ErrSourceNotFound = errors.New("not a registered mail source")

// Sources lists the registered folders by path.
func (s *Store) Sources(ctx context.Context) ([]Source, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT path, account FROM sources ORDER BY path`)
	if err != nil {
		return nil, fmt.Errorf("listing mail sources: %w", err)
	}
	defer rows.Close()
	var out []Source
	for rows.Next() {
		var src Source
		if err := rows.Scan(&src.Path, &src.Account); err != nil {
			return nil, fmt.Errorf("listing mail sources: %w", err)
		}
		out = append(out, src)
	}
	return out, rows.Err()
}

// RescanSources reconciles every registered source: new files are
// mirrored and files removed since the last run leave the mirror. A
// folder that is gone is skipped with an error (its mail stays until the
// user removes the source) rather than deleting everything it held.
func (s *Store) RescanSources(ctx context.Context) (Progress, error) {
	srcs, err := s.Sources(ctx)
	if err != nil {
		return Progress{}, err
	}
	var total Progress
	var errs []error
	for _, src := range srcs {
		if _, err := os.Stat(src.Path); err != nil {
			errs = append(errs, fmt.Errorf("mail source %s: %w", src.Path, err))
			continue
		}
		p, err := s.Reconcile(ctx, src.Path, ImportOptions{Account: src.Account})
		total.Files += p.Files
		total.Added += p.Added
		total.Updated += p.Updated
		total.Skipped += p.Skipped
		total.Failed += p.Failed
		total.Removed += p.Removed
		total.Deleted += p.Deleted
		if err != nil {
			errs = append(errs, fmt.Errorf("rescanning %s: %w", src.Path, err))
		}
	}
	return total, errors.Join(errs...)
}
