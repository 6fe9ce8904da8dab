package docs

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// openZip checks an Office/EPUB archive's central directory before anything
// is inflated: the entry count, the total declared uncompressed size, ZIP64
// and multi-disk archives. Each entry is later read through a reader capped
// at its declared size, so a lying header cannot inflate past the budget.
func openZip(data []byte, lim Limits) (*zipDoc, error) {
	if err := checkEOCD(data); err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a valid ZIP container: %w", err)
	}
	if len(zr.File) > lim.MaxArchiveEntries {
		return nil, fmt.Errorf("the archive has %d entries, over the limit of %d: %w", len(zr.File), lim.MaxArchiveEntries, ErrTooLarge)
	}
	var total uint64
	byName := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		if f.UncompressedSize64 >= 0xffffffff || f.CompressedSize64 >= 0xffffffff {
			return nil, errors.New("ZIP64 archives are refused")
		}
		total += f.UncompressedSize64
		if total > uint64(lim.MaxArchiveBytes) {
			return nil, fmt.Errorf("the archive declares more than %d bytes of content: %w", lim.MaxArchiveBytes, ErrTooLarge)
		}
		// Deflate cannot expand past ~1032:1; a higher declared ratio is a
		// crafted entry.
		if f.CompressedSize64 > 0 && f.UncompressedSize64/f.CompressedSize64 > 1100 {
			return nil, fmt.Errorf("archive entry %q claims a %d:1 compression ratio; refused as a ZIP bomb", f.Name, f.UncompressedSize64/f.CompressedSize64)
		}
		byName[strings.TrimPrefix(f.Name, "/")] = f
	}
	return &zipDoc{files: zr.File, byName: byName, budget: int64(lim.MaxArchiveBytes)}, nil
}

// checkEOCD refuses multi-disk and ZIP64 end records.
func checkEOCD(data []byte) error {
	if len(data) < 22 {
		return errors.New("file is too short to be a ZIP container")
	}
	from := max(0, len(data)-22-65535)
	i := bytes.LastIndex(data[from:], []byte("PK\x05\x06"))
	if i < 0 {
		return errors.New("not a ZIP container (no end-of-directory record)")
	}
	rec := data[from+i:]
	if len(rec) < 22 {
		return errors.New("truncated ZIP end-of-directory record")
	}
	if binary.LittleEndian.Uint16(rec[4:]) != 0 || binary.LittleEndian.Uint16(rec[6:]) != 0 {
		return errors.New("multi-part ZIP archives are refused")
	}
	if from+i >= 20 && bytes.Equal(data[from+i-20:from+i-16], []byte("PK\x06\x07")) {
		return errors.New("ZIP64 archives are refused")
	}
	return nil
}

type zipDoc struct {
	files  []*zip.File
	byName map[string]*zip.File
	budget int64 // bytes still allowed to inflate
}

// read inflates one entry, at most its declared size and the remaining budget.
func (z *zipDoc) read(name string) ([]byte, error) {
	f, ok := z.byName[strings.TrimPrefix(name, "/")]
	if !ok {
		return nil, fmt.Errorf("the archive has no %s: %w", name, errMissing)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("opening %s in the archive: %w", name, err)
	}
	defer rc.Close()
	limit := min(int64(f.UncompressedSize64), z.budget)
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("inflating %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s inflates past its declared size or the archive budget: %w", name, ErrTooLarge)
	}
	z.budget -= int64(len(data))
	return data, nil
}

var errMissing = errors.New("missing archive entry")

// names lists entries with a prefix and suffix, in archive order.
func (z *zipDoc) names(prefix, suffix string) []string {
	var out []string
	for _, f := range z.files {
		if strings.HasPrefix(f.Name, prefix) && strings.HasSuffix(f.Name, suffix) {
			out = append(out, f.Name)
		}
	}
	return out
}

// resolveRel resolves a relationship target against the part that holds it.
func resolveRel(base, target string) string {
	if strings.HasPrefix(target, "/") {
		return strings.TrimPrefix(target, "/")
	}
	return path.Clean(path.Join(path.Dir(base), target))
}

// xmlDecoder is a decoder that does not fetch or expand anything external:
// encoding/xml resolves no external entities, and Strict=false tolerates
// the sloppy markup real files have.
func xmlDecoder(data []byte) *xml.Decoder {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = false
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	return d
}

func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}
