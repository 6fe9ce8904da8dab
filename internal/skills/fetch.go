package skills

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Bounds on what an install may bring in.
const (
	maxDownload  = 10 << 20
	maxFiles     = 200
	maxTotalSize = 4 << 20
)

// Fetcher downloads a URL's body (at most maxDownload bytes).
type Fetcher func(ctx context.Context, u string) ([]byte, error)

// HTTPFetcher fetches over https, or http to a loopback host.
func HTTPFetcher(hc *http.Client) Fetcher {
	if hc == nil {
		hc = &http.Client{}
	}
	return func(ctx context.Context, raw string) ([]byte, error) {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("skill URL: %w", err)
		}
		host := u.Hostname()
		ip := net.ParseIP(host)
		loop := host == "localhost" || ip != nil && ip.IsLoopback()
		if u.Scheme != "https" && !(u.Scheme == "http" && loop) {
			return nil, fmt.Errorf("skill URL %s must be https (http only for this machine)", u.Redacted())
		}
		req, err := http.NewRequestWithContext(ctx, "GET", raw, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("downloading the skill: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("downloading the skill: %s answered %s", u.Redacted(), resp.Status)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxDownload+1))
		if err != nil {
			return nil, fmt.Errorf("downloading the skill: %w", err)
		}
		if len(b) > maxDownload {
			return nil, fmt.Errorf("the skill download is larger than %d bytes", maxDownload)
		}
		return b, nil
	}
}

func isURL(s string) bool { return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") }

// populate fills stage from src.
func populate(ctx context.Context, stage, src string, fetch Fetcher) error {
	if isURL(src) {
		if fetch == nil {
			fetch = HTTPFetcher(nil)
		}
		b, err := fetch(ctx, src)
		if err != nil {
			return err
		}
		return unpack(stage, b, path.Base(strings.SplitN(src, "?", 2)[0]))
	}
	info, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("skill source: %w", err)
	}
	if info.IsDir() {
		return copyTree(src, stage)
	}
	if info.Size() > maxDownload {
		return fmt.Errorf("%s is larger than %d bytes", src, maxDownload)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return unpack(stage, b, filepath.Base(src))
}

// unpack writes an archive (by its magic bytes) or a lone SKILL.md.
func unpack(stage string, b []byte, name string) error {
	switch {
	case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
		return untar(stage, b)
	case bytes.HasPrefix(b, []byte("PK\x03\x04")):
		return unzip(stage, b)
	case bytes.HasPrefix(bytes.TrimPrefix(b, []byte("\ufeff")), []byte("---")):
		return os.WriteFile(filepath.Join(stage, "SKILL.md"), b, 0o600)
	}
	return fmt.Errorf("%s is neither a skill folder, a SKILL.md, a .tar.gz nor a .zip", name)
}

// safeJoin refuses archive names that would land outside stage.
func safeJoin(stage, name string) (string, error) {
	n := filepath.ToSlash(name)
	if n == "" || strings.HasPrefix(n, "/") || strings.Contains(n, "\\") || strings.ContainsRune(n, 0) || (len(n) > 1 && n[1] == ':') {
		return "", fmt.Errorf("archive entry %q is not a plain relative path", name)
	}
	for _, seg := range strings.Split(n, "/") {
		if seg == ".." {
			return "", fmt.Errorf("archive entry %q leaves the skill folder", name)
		}
	}
	return filepath.Join(stage, filepath.FromSlash(path.Clean(n))), nil
}

type budget struct{ files, bytes int }

func (b *budget) take(n int64) error {
	b.files++
	b.bytes += int(n)
	if b.files > maxFiles {
		return fmt.Errorf("the skill has more than %d files", maxFiles)
	}
	if b.bytes > maxTotalSize {
		return fmt.Errorf("the skill is larger than %d bytes unpacked", maxTotalSize)
	}
	return nil
}

func writeEntry(dest string, r io.Reader, size int64, bud *budget) error {
	if err := bud.take(size); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(dest, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = errors.New("archive entry size does not match its header")
	}
	return err
}

func untar(stage string, b []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("reading the .tar.gz: %w", err)
	}
	tr := tar.NewReader(io.LimitReader(zr, maxTotalSize*2))
	var bud budget
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the .tar.gz: %w", err)
		}
		dest, err := safeJoin(stage, h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dest, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if h.Size < 0 || h.Size > maxTotalSize {
				return fmt.Errorf("archive entry %q is too large", h.Name)
			}
			if err := writeEntry(dest, tr, h.Size, &bud); err != nil {
				return fmt.Errorf("unpacking %q: %w", h.Name, err)
			}
		case tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("archive entry %q is a link or device; a skill holds plain files only", h.Name)
		}
	}
}

func unzip(stage string, b []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("reading the .zip: %w", err)
	}
	var bud budget
	for _, f := range zr.File {
		dest, err := safeJoin(stage, f.Name)
		if err != nil {
			return err
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(dest, 0o700); err != nil {
				return err
			}
		case mode.IsRegular():
			if f.UncompressedSize64 > maxTotalSize {
				return fmt.Errorf("archive entry %q is too large", f.Name)
			}
			rc, err := f.Open()
			if err != nil {
				return fmt.Errorf("unpacking %q: %w", f.Name, err)
			}
			err = writeEntry(dest, rc, int64(f.UncompressedSize64), &bud)
			rc.Close()
			if err != nil {
				return fmt.Errorf("unpacking %q: %w", f.Name, err)
			}
		default:
			return fmt.Errorf("archive entry %q is a link or device; a skill holds plain files only", f.Name)
		}
	}
	return nil
}

// copyTree copies a local skill folder; symlinks and special files are
// refused rather than followed.
func copyTree(src, dst string) error {
	var bud budget
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		if d.Name() == ".git" && d.IsDir() {
			return filepath.SkipDir
		}
		dest := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dest, 0o700)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return writeEntry(dest, f, info.Size(), &bud)
		default:
			return fmt.Errorf("%s is a link or special file; a skill holds plain files only", rel)
		}
	})
}
