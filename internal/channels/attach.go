package channels

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/speech"
)

// Attachment is a file sent with a message (a photo, a PDF, a document,
// a video), fetched only if the relay accepts it.
type Attachment struct {
	// Name is the file name as the sender gave it (may be empty, may be
	// anything: the relay never uses it as a path).
	Name string
	// Mime is the content type the platform claims; the relay sniffs the
	// bytes and trusts those.
	Mime string
	// Size in bytes; 0 when the platform does not say.
	Size int64
	// Fetch downloads the file. limit is the most the relay will keep:
	// an implementation stops reading after limit+1 bytes (or returns an
	// error wrapping ErrTooLarge), so an oversized file is never held
	// whole in memory. Unlike a voice note's, the limit is the relay's:
	// adapters need no setting of their own.
	Fetch func(ctx context.Context, limit int64) ([]byte, error)
}

// ErrTooLarge may be wrapped by Attachment.Fetch when the platform says
// the file is over the limit before sending it.
var ErrTooLarge = errors.New("file is over the size limit")

// RefusedError is returned by Attachment.Fetch when the platform will not
// hand the file over for a reason the sender can act on ("Telegram lets
// bots download files up to 20 MB"); its Reason is shown to them.
type RefusedError struct {
	Reason string
	Err    error
}

func (e *RefusedError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Attachment defaults (Config.MaxFileBytes, MaxMessageBytes, MaxFiles).
const (
	DefaultMaxFileBytes    = 25 << 20
	DefaultMaxMessageBytes = 100 << 20
	DefaultMaxFiles        = 10
	// fetchTimeout bounds one file's download.
	fetchTimeout = 2 * time.Minute
	// maxStem bounds a saved file name's stem in bytes (before the
	// number prefix and the extension).
	maxStem = 80
)

// savedFile is one attachment on disk, named in the turn.
type savedFile struct {
	path string
	mime string
	size int64
}

// line is how the turn names the file for the assistant.
func (f savedFile) line() string { return AttachedLine(f.path, f.mime, f.size) }

// AttachedLine is the line a turn names a saved file with:
// "[attached: PATH — TYPE, SIZE]" (the adversarial suite builds its
// channel turns with it).
func AttachedLine(path, mime string, size int64) string {
	return fmt.Sprintf("[attached: %s — %s, %s]", path, mime, humanSize(size))
}

// receiveFiles fetches, checks and saves a message's attachments. Each
// refusal is answered in the conversation with its reason and audited;
// what was saved is returned in order.
func (r *Relay) receiveFiles(ctx context.Context, u Update) []savedFile {
	var out []savedFile
	budget := r.cfg.MaxMessageBytes
	for i, a := range u.Attachments {
		if i >= r.cfg.MaxFiles {
			r.refuseFile(ctx, u, a, fmt.Sprintf("only the first %d files of a message are kept.", r.cfg.MaxFiles))
			continue
		}
		f, reason := r.receiveFile(ctx, u, a, budget)
		if reason != "" {
			r.refuseFile(ctx, u, a, reason)
			continue
		}
		budget -= f.size
		out = append(out, f)
	}
	return out
}

// receiveFile checks one attachment against the limits, fetches it and
// saves it; a refusal returns the reason instead.
func (r *Relay) receiveFile(ctx context.Context, u Update, a Attachment, budget int64) (savedFile, string) {
	if r.cfg.InboxDir == "" {
		return savedFile{}, "receiving files is not set up here."
	}
	if a.Size > r.cfg.MaxFileBytes {
		return savedFile{}, fmt.Sprintf("it is %s; at most %s are accepted per file.", humanSize(a.Size), humanSize(r.cfg.MaxFileBytes))
	}
	if a.Size > budget {
		return savedFile{}, fmt.Sprintf("the files of one message may weigh %s together, and this one would go over.", humanSize(r.cfg.MaxMessageBytes))
	}
	if a.Fetch == nil {
		return savedFile{}, "the platform did not hand over the file."
	}
	limit := min(r.cfg.MaxFileBytes, budget)
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	data, err := a.Fetch(fctx, limit)
	cancel()
	switch {
	case errors.Is(err, ErrTooLarge), err == nil && int64(len(data)) > limit:
		if limit < r.cfg.MaxFileBytes {
			return savedFile{}, fmt.Sprintf("the files of one message may weigh %s together, and this one would go over.", humanSize(r.cfg.MaxMessageBytes))
		}
		return savedFile{}, fmt.Sprintf("it is larger than %s, the most accepted per file.", humanSize(r.cfg.MaxFileBytes))
	case err != nil:
		r.d.Log.Warn("fetching an attachment", "channel", r.name, "err", err)
		var re *RefusedError
		if errors.As(err, &re) && re.Reason != "" {
			return savedFile{}, strings.TrimSuffix(re.Reason, ".") + "."
		}
		return savedFile{}, "fetching it failed."
	case len(data) == 0:
		return savedFile{}, "it is empty."
	}
	mime, ext := contentType(a.Name, a.Mime, data)
	path, err := r.saveFile(u, safeStem(a.Name, mime), ext, data)
	if err != nil {
		r.d.Log.Error("saving an attachment", "channel", r.name, "err", err)
		return savedFile{}, "saving it failed on my side."
	}
	f := savedFile{path: path, mime: mime, size: int64(len(data))}
	r.d.Audit(ctx, "channel.attachment", "", fmt.Sprintf("%s file from %s saved: %s", r.cfg.Label, u.Sender, filepath.Base(path)),
		map[string]any{"channel": r.name, "sender": u.Sender, "name": truncate(a.Name, 200), "size": f.size, "mime": mime, "path": path})
	return f, ""
}

// refuseFile answers and audits a refused attachment.
func (r *Relay) refuseFile(ctx context.Context, u Update, a Attachment, reason string) {
	name := strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return -1
		}
		return c
	}, truncate(strings.TrimSpace(a.Name), 60))
	what := "that file"
	if name != "" {
		what = "the file “" + name + "”"
	}
	r.d.Audit(ctx, "channel.attachment_refused", "", "attachment refused: "+reason,
		map[string]any{"channel": r.name, "sender": u.Sender, "name": truncate(a.Name, 200), "size": a.Size, "mime": a.Mime, "reason": reason})
	r.reply(ctx, u, "I can't use "+what+": "+reason)
}

// saveFile writes data owner-only as INBOX/CHANNEL/YYYY-MM-DD/NNN-stem.ext,
// NNN the next free number of the day: created exclusively, so two files
// (or two relays) never share a name and nothing existing is overwritten.
func (r *Relay) saveFile(u Update, stem, ext string, data []byte) (string, error) {
	dir := filepath.Join(r.cfg.InboxDir, safeStem(r.name, ""), r.d.Clock().Format("2006-01-02"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the inbox folder: %w", err)
	}
	n := 1
	if entries, err := os.ReadDir(dir); err == nil {
		n = len(entries) + 1
	}
	for tries := 0; tries < 1000; tries++ {
		path := filepath.Join(dir, fmt.Sprintf("%03d-%s%s", n+tries, stem, ext))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("creating %s: %w", path, err)
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return "", fmt.Errorf("writing %s: %w", path, err)
		}
		return path, nil
	}
	return "", fmt.Errorf("no free file name in %s", dir)
}

// safeStem turns a sender's file name into the stem of a saved name: the
// base name only (no folders, whatever separators the sender used), no
// extension (the content decides it), no leading dots or dashes (no hidden
// files, nothing read as an option), letters, digits and . _ - + ( ) only,
// at most maxStem bytes. An empty result is named after the content's
// kind ("image", "document").
func safeStem(name, mime string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if ext := filepath.Ext(name); ext != "" && ext != name {
		name = strings.TrimSuffix(name, ext)
	}
	var b strings.Builder
	dash := false
	for _, c := range name {
		ok := unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("._+()", c)
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		if b.Len()+utf8.RuneLen(c) > maxStem {
			break
		}
		b.WriteRune(c)
		dash = false
	}
	s := strings.TrimLeft(strings.TrimRight(b.String(), "-."), ".-_")
	if s == "" {
		switch {
		case mime == "":
			s = "channel"
		case strings.HasPrefix(mime, "image/"):
			s = "image"
		case strings.HasPrefix(mime, "video/"):
			s = "video"
		case strings.HasPrefix(mime, "audio/"):
			s = "audio"
		default:
			s = "document"
		}
	}
	return s
}

// fileType is what the relay knows of a file extension: its content type
// and whether http.DetectContentType (or the audio sniffer) would have
// recognised such a file, so a name claiming it for other bytes is a lie.
type fileType struct {
	mime     string
	sniffed  bool // the sniffer recognises this format by its bytes
	zipBased bool // a zip container (DetectContentType says application/zip)
}

var extTypes = map[string]fileType{
	".pdf": {"application/pdf", true, false},
	".png": {"image/png", true, false}, ".jpg": {"image/jpeg", true, false}, ".jpeg": {"image/jpeg", true, false},
	".gif": {"image/gif", true, false}, ".webp": {"image/webp", true, false}, ".bmp": {"image/bmp", true, false},
	".ico":  {"image/x-icon", true, false},
	".heic": {"image/heic", false, false}, ".heif": {"image/heif", false, false}, ".tif": {"image/tiff", false, false}, ".tiff": {"image/tiff", false, false},
	".svg": {"image/svg+xml", false, false},
	".mp4": {"video/mp4", true, false}, ".webm": {"video/webm", true, false}, ".mov": {"video/quicktime", false, false},
	".ogg": {"audio/ogg", true, false}, ".oga": {"audio/ogg", true, false}, ".opus": {"audio/ogg", true, false},
	".mp3": {"audio/mpeg", true, false}, ".wav": {"audio/wave", true, false}, ".flac": {"audio/flac", true, false},
	".m4a": {"audio/mp4", true, false},
	".zip": {"application/zip", true, true}, ".gz": {"application/x-gzip", true, false},
	".docx": {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", true, true},
	".xlsx": {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", true, true},
	".pptx": {"application/vnd.openxmlformats-officedocument.presentationml.presentation", true, true},
	".odt":  {"application/vnd.oasis.opendocument.text", true, true},
	".ods":  {"application/vnd.oasis.opendocument.spreadsheet", true, true},
	".odp":  {"application/vnd.oasis.opendocument.presentation", true, true},
	".epub": {"application/epub+zip", true, true},
	".html": {"text/html", true, false}, ".htm": {"text/html", true, false},
	".rtf": {"text/rtf", true, false},
	".txt": {"text/plain", false, false}, ".text": {"text/plain", false, false}, ".log": {"text/plain", false, false},
	".md": {"text/markdown", false, false}, ".markdown": {"text/markdown", false, false},
	".csv": {"text/csv", false, false}, ".tsv": {"text/tab-separated-values", false, false},
	".json": {"application/json", false, false}, ".xml": {"text/xml", false, false},
	".ics": {"text/calendar", false, false}, ".vcf": {"text/vcard", false, false}, ".eml": {"message/rfc822", false, false},
	".yaml": {"text/yaml", false, false}, ".yml": {"text/yaml", false, false},
}

// isoMedia are the types of files in the ISO base media container.
var isoMedia = map[string]bool{"video/mp4": true, "audio/mp4": true, "video/quicktime": true, "image/heic": true, "image/heif": true}

// sniffedExt is the extension a sniffed content type is saved with.
var sniffedExt = map[string]string{
	"application/pdf": ".pdf", "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
	"image/webp": ".webp", "image/bmp": ".bmp", "image/x-icon": ".ico",
	"video/mp4": ".mp4", "video/webm": ".webm", "video/avi": ".avi",
	"audio/ogg": ".ogg", "application/ogg": ".ogg", "audio/mpeg": ".mp3", "audio/wave": ".wav", "audio/flac": ".flac",
	"audio/mp4": ".m4a", "audio/aiff": ".aiff", "audio/midi": ".mid",
	"application/zip": ".zip", "application/x-gzip": ".gz", "application/x-rar-compressed": ".rar",
	"text/html": ".html", "text/xml": ".xml", "text/plain": ".txt", "text/rtf": ".rtf",
	"application/postscript": ".ps", "application/wasm": ".wasm", "font/woff": ".woff", "font/ttf": ".ttf",
}

// textLike says whether a content type is text a sniffer calls text/plain.
func textLike(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "application/json" || mime == "message/rfc822"
}

// contentType decides what a file is from its bytes, and the extension
// it is saved with: the sender's extension where the bytes agree with it
// (or cannot contradict it), else the one of what the bytes are — so a
// "report.pdf" that is a web page is saved as .html, and the document
// tools, which go by extension, read it for what it is. The claimed type
// only names a file whose name has no extension (a photo).
func contentType(name, claimed string, data []byte) (string, string) {
	ext := strings.ToLower(filepath.Ext(strings.ReplaceAll(name, "\\", "/")))
	if len(ext) > 10 || strings.IndexFunc(ext[min(1, len(ext)):], func(c rune) bool { return (c < 'a' || c > 'z') && (c < '0' || c > '9') }) >= 0 {
		ext = "" // not an extension a file manager would show as one
	}
	claimed = strings.ToLower(strings.TrimSpace(strings.Split(claimed, ";")[0]))
	if ext == "" {
		ext = extForMime(claimed)
	}
	want, known := extTypes[ext]
	got := sniff(data)
	switch got {
	case "application/octet-stream":
		// The sniffer does not know these bytes: fine for formats it
		// would not know either (HEIC, a .mov), a lie for one it would.
		if known && want.sniffed {
			return got, ".bin"
		}
		if known {
			return want.mime, ext
		}
		if ext == "" {
			ext = ".bin"
		}
		return got, ext
	case "text/plain":
		if known && !textLike(want.mime) {
			return got, ".txt"
		}
		if known {
			return want.mime, ext
		}
		if ext == "" {
			ext = ".txt"
		}
		return got, ext
	case "application/zip":
		if known && want.zipBased {
			return want.mime, ext
		}
		return got, ".zip"
	}
	if known && want.mime == got {
		return got, ext
	}
	if known && isoMedia[got] && isoMedia[want.mime] {
		// One container (ISO base media, "ftyp") holds MP4 and M4A, a
		// QuickTime movie, a HEIC photo: the sniffers cannot tell them
		// apart, the extension can.
		return want.mime, ext
	}
	if e, ok := sniffedExt[got]; ok {
		return got, e
	}
	if ext == "" || known {
		ext = ".bin"
	}
	return got, ext
}

// extForMime is the extension of a claimed content type, from the table.
func extForMime(mime string) string {
	if mime == "" {
		return ""
	}
	if e, ok := sniffedExt[mime]; ok {
		return e
	}
	best := ""
	for e, t := range extTypes {
		if t.mime == mime && (best == "" || e < best) {
			best = e // deterministic among aliases
		}
	}
	return best
}

// sniff is the content type of data: net/http's sniffer (the WHATWG
// algorithm), with the speech package's audio signatures for what it
// leaves unknown (FLAC, M4A) or names as a container (Ogg).
func sniff(data []byte) string {
	ct := strings.TrimSpace(strings.Split(http.DetectContentType(data), ";")[0])
	switch ct {
	case "application/octet-stream", "application/ogg":
		switch speech.Sniff(data) {
		case "ogg":
			return "audio/ogg"
		case "flac":
			return "audio/flac"
		case "m4a":
			return "audio/mp4"
		case "mp3":
			return "audio/mpeg"
		}
	}
	return ct
}

// humanSize writes a byte count for people: "812 bytes", "120 KB", "3.4 MB".
func humanSize(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " bytes"
	case n < 1<<20:
		return strconv.FormatInt((n+1<<9)>>10, 10) + " KB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
}

// InboxUsage adds up the files under an inbox folder (hestia doctor
// reports it: received files are the user's data and are never deleted
// by Hestia). A missing folder is empty.
func InboxUsage(dir string) (files int, bytes int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				return fs.SkipAll
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			files++
			bytes += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("measuring the inbox %s: %w", dir, err)
	}
	return files, bytes, nil
}

// HumanSize is humanSize for the doctor's report.
func HumanSize(n int64) string { return humanSize(n) }
