// Package doctor runs live health checks of an installation in parallel,
// each with a short timeout, and reports them for `hestia doctor` and the
// system page.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hestia-dev/hestia/internal/backup"
	"github.com/hestia-dev/hestia/internal/lock"
	"github.com/hestia-dev/hestia/internal/store"
)

// Status of one check.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // worth knowing, not a failure
	Fail Status = "fail"
	Skip Status = "skip" // not applicable (e.g. nothing configured)
)

// Result is the outcome of one check.
type Result struct {
	Name     string        `json:"name"`
	Status   Status        `json:"status"`
	Detail   string        `json:"detail"`
	Duration time.Duration `json:"duration_ns"`
}

// Check is one named probe. Run must honour ctx.
type Check struct {
	Name string
	Run  func(ctx context.Context) (Status, string)
}

// Run executes every check concurrently, each under its own timeout, and
// returns results in name order.
func Run(ctx context.Context, checks []Check, timeout time.Duration) []Result {
	results := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runOne(ctx, c, timeout)
		}()
	}
	wg.Wait()
	sort.SliceStable(results, func(i, j int) bool { return results[i].Name < results[j].Name })
	return results
}

func runOne(ctx context.Context, c Check, timeout time.Duration) (r Result) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	type out struct {
		s Status
		d string
	}
	ch := make(chan out, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- out{Fail, fmt.Sprintf("check crashed: %v", p)}
			}
		}()
		s, d := c.Run(cctx)
		ch <- out{s, d}
	}()
	select {
	case o := <-ch:
		r = Result{Name: c.Name, Status: o.s, Detail: o.d}
	case <-cctx.Done():
		r = Result{Name: c.Name, Status: Fail, Detail: fmt.Sprintf("timed out after %s", timeout)}
	}
	r.Duration = time.Since(start)
	return r
}

// Failed reports whether any result failed.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

// HomeWritable checks that files can be created in dir.
func HomeWritable(dir string) Check {
	return Check{Name: "home.writable", Run: func(ctx context.Context) (Status, string) {
		f, err := os.CreateTemp(dir, ".doctor-*")
		if err != nil {
			return Fail, fmt.Sprintf("cannot write to %s: %v", dir, err)
		}
		name := f.Name()
		f.Close()
		os.Remove(name)
		return OK, dir
	}}
}

// DiskSpace warns below warnBytes free and fails below failBytes.
func DiskSpace(dir string, warnBytes, failBytes uint64) Check {
	return Check{Name: "disk.space", Run: func(ctx context.Context) (Status, string) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return Fail, fmt.Sprintf("statfs %s: %v", dir, err)
		}
		free := st.Bavail * uint64(st.Bsize)
		detail := fmt.Sprintf("%s free on the volume holding %s", human(free), dir)
		switch {
		case free < failBytes:
			return Fail, detail
		case free < warnBytes:
			return Warn, detail
		}
		return OK, detail
	}}
}

func human(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}

// Stores returns one check per database file found in dbDir: it opens the
// file read-only in spirit (no migration) and runs PRAGMA quick_check.
func Stores(dbDir string) ([]Check, error) {
	dbs, err := backup.Databases(dbDir)
	if err != nil {
		return nil, err
	}
	var checks []Check
	for _, path := range dbs {
		name := strings.TrimSuffix(filepath.Base(path), ".db")
		checks = append(checks, Check{Name: "store." + name, Run: func(ctx context.Context) (Status, string) {
			db, err := store.OpenExisting(ctx, path)
			if err != nil {
				return Fail, err.Error()
			}
			defer db.Close()
			if err := store.IntegrityCheck(ctx, db, false); err != nil {
				return Fail, fmt.Sprintf("%s: %v", path, err)
			}
			var v int
			db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
			return OK, fmt.Sprintf("%s (schema v%d)", path, v)
		}})
	}
	return checks, nil
}

// Daemon checks whether a daemon holds the home's lock and answers /health.
// A stopped daemon is a warning: doctor is often run before starting it.
func Daemon(lockPath, healthURL string, client *http.Client) Check {
	return Check{Name: "daemon", Run: func(ctx context.Context) (Status, string) {
		held, pid := lock.Held(lockPath)
		if !held {
			return Warn, "not running (start it with `hestia serve`)"
		}
		req, err := http.NewRequestWithContext(ctx, "GET", healthURL, nil)
		if err != nil {
			return Fail, err.Error()
		}
		resp, err := client.Do(req)
		if err != nil {
			return Fail, fmt.Sprintf("pid %d holds the lock but %s does not answer: %v", pid, healthURL, errors.Unwrap(err))
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return Fail, fmt.Sprintf("%s answered %s", healthURL, resp.Status)
		}
		return OK, fmt.Sprintf("pid %d, %s", pid, healthURL)
	}}
}

// HTTPReachable checks a model endpoint: any answer below 500 other than an
// auth rejection means reachable.
func HTTPReachable(name, url, bearer string, client *http.Client) Check {
	return Check{Name: name, Run: func(ctx context.Context) (Status, string) {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return Fail, fmt.Sprintf("bad URL %q: %v", url, err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			return Fail, fmt.Sprintf("%s unreachable: %v", url, errors.Unwrap(err))
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode == 401 || resp.StatusCode == 403:
			return Fail, fmt.Sprintf("%s rejected the API key (%s)", url, resp.Status)
		case resp.StatusCode >= 500:
			return Fail, fmt.Sprintf("%s answered %s", url, resp.Status)
		}
		return OK, fmt.Sprintf("%s answered %s", url, resp.Status)
	}}
}

// Memo returns c with each result reused for ttl: whoever asks within ttl
// of a run gets that run's result, and concurrent callers wait for the one
// run in progress. Checks that call other services (a model endpoint) are
// wrapped so polling the system page cannot turn into a request per poll.
func Memo(c Check, ttl time.Duration, now func() time.Time) Check {
	if now == nil {
		now = time.Now
	}
	var mu sync.Mutex // guards the fields below; held while c runs
	var at time.Time
	var status Status
	var detail string
	return Check{Name: c.Name, Run: func(ctx context.Context) (Status, string) {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && now().Sub(at) < ttl {
			return status, detail
		}
		// A timeout is cached too: a hung endpoint must not be asked again
		// on every poll.
		status, detail = c.Run(ctx)
		at = now()
		return status, detail
	}}
}
