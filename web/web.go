// Package web serves Hestia's progressive web app: the UI built from the
// TypeScript sources in this directory into dist/ and embedded in the binary.
//
// The handler is deliberately boring: files from the build, the SPA fallback
// to index.html for client-side routes, precompressed variants when the build
// made them, and cache headers that let hashed assets live forever while
// index.html and the service worker are always revalidated (otherwise a
// browser could keep running an old UI against a new daemon). When the UI was
// never built it answers with a page that says how to build it.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// dist holds the build output. "all:" keeps dotfiles so the committed
// placeholder dist/.keep satisfies the pattern in a fresh checkout.
//
//go:embed all:dist
var dist embed.FS

// Handler serves the embedded build. Mount it at "/" without auth: it only
// serves static files; every API route lives on its own authenticated prefix.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		// fs.Sub only fails for an invalid name; "dist" is a constant.
		panic(err)
	}
	return NewHandler(sub)
}

// NewHandler serves the UI from fsys, whose root holds index.html. It reads
// files per request, so os.DirFS("web/dist") gives a live development view.
func NewHandler(fsys fs.FS) http.Handler {
	return &handler{fsys: fsys}
}

type handler struct {
	fsys fs.FS
}

// apiPrefixes are never answered with the SPA: a client calling an unknown
// API route must get a JSON 404, not an HTML page it cannot parse.
var apiPrefixes = []string{"/api/", "/v1/"}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, p := range apiPrefixes {
		if strings.HasPrefix(r.URL.Path, p) || r.URL.Path == strings.TrimSuffix(p, "/") {
			httpjson.Error(w, http.StatusNotFound, "not_found", "no such API route: "+r.URL.Path)
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	setSecurityHeaders(w)

	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	// Precompressed siblings and the placeholder are build details, not URLs.
	if strings.HasSuffix(name, ".br") || strings.HasSuffix(name, ".gz") || path.Base(name) == ".keep" {
		http.NotFound(w, r)
		return
	}
	if h.serveFile(w, r, name) {
		return
	}
	if name != "index.html" && looksLikeAsset(name) {
		http.NotFound(w, r)
		return
	}
	// A client-side route (/chat/12, /usage): the app decides what to show.
	if !h.serveFile(w, r, "index.html") {
		serveNotBuilt(w, r)
	}
}

// serveFile writes name if it is a regular file in the build and reports
// whether it did.
func (h *handler) serveFile(w http.ResponseWriter, r *http.Request, name string) bool {
	st, err := fs.Stat(h.fsys, name)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	body, encoding := h.pickVariant(r, name)
	if body == nil {
		var err error
		if body, err = fs.ReadFile(h.fsys, name); err != nil {
			return false
		}
	}
	hdr := w.Header()
	hdr.Set("Content-Type", contentType(name))
	hdr.Set("Cache-Control", cacheControl(name))
	hdr.Add("Vary", "Accept-Encoding")
	if encoding != "" {
		hdr.Set("Content-Encoding", encoding)
	}
	sum := sha256.Sum256(body)
	// The tag differs per encoding: caches must not serve gzip bytes to a
	// client that negotiated identity.
	hdr.Set("ETag", `"`+hex.EncodeToString(sum[:12])+encoding+`"`)
	http.ServeContent(w, r, name, time.Time{}, strings.NewReader(string(body)))
	return true
}

// pickVariant returns the brotli or gzip sibling of name when the build
// emitted one and the client accepts it.
func (h *handler) pickVariant(r *http.Request, name string) ([]byte, string) {
	accepted := acceptedEncodings(r.Header.Get("Accept-Encoding"))
	for _, v := range []struct{ ext, enc string }{{".br", "br"}, {".gz", "gzip"}} {
		if !accepted[v.enc] {
			continue
		}
		if b, err := fs.ReadFile(h.fsys, name+v.ext); err == nil {
			return b, v.enc
		}
	}
	return nil, ""
}

// acceptedEncodings parses Accept-Encoding (RFC 9110 section 12.5.3),
// honouring q=0 as a refusal.
func acceptedEncodings(header string) map[string]bool {
	out := map[string]bool{}
	for _, part := range strings.Split(header, ",") {
		fields := strings.Split(part, ";")
		coding := strings.ToLower(strings.TrimSpace(fields[0]))
		if coding == "" {
			continue
		}
		ok := true
		for _, p := range fields[1:] {
			p = strings.ReplaceAll(strings.TrimSpace(p), " ", "")
			if q, found := strings.CutPrefix(strings.ToLower(p), "q="); found {
				ok = strings.Trim(q, "0.") != ""
			}
		}
		out[coding] = ok
	}
	if star, ok := out["*"]; ok {
		for _, c := range []string{"br", "gzip"} {
			if _, set := out[c]; !set {
				out[c] = star
			}
		}
	}
	return out
}

// looksLikeAsset reports whether a missing path was a file request (which
// deserves a 404) rather than a client-side route (which gets index.html).
func looksLikeAsset(name string) bool {
	return strings.HasPrefix(name, "assets/") || path.Ext(name) != ""
}

func cacheControl(name string) string {
	switch {
	case strings.HasPrefix(name, "assets/"):
		// Vite puts content hashes in these names: a new build means new URLs.
		return "public, max-age=31536000, immutable"
	case name == "index.html", name == "sw.js", strings.HasSuffix(name, ".webmanifest"):
		return "no-cache"
	default:
		return "public, max-age=3600"
	}
}

var extraTypes = map[string]string{
	".webmanifest": "application/manifest+json",
	".woff2":       "font/woff2",
	".ico":         "image/x-icon",
	".map":         "application/json",
	".txt":         "text/plain; charset=utf-8",
}

func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := extraTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

func setSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	// Markdown from the model is sanitised in the app; the policy is the
	// second wall: no inline or foreign scripts, no framing, API on self only.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; "+
		"style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; "+
		"font-src 'self' data:; manifest-src 'self'; worker-src 'self'; object-src 'none'; "+
		"base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
}

// notBuiltPage is shown when the binary was built without the UI. It is a
// real page (a person opened the URL) with the command that fixes it.
const notBuiltPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hestia — web UI not built</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1.25rem;color:#1f2328;background:#fbfaf8}
h1{font-size:1.4rem}code{background:#efece6;padding:.1rem .35rem;border-radius:.3rem}
@media (prefers-color-scheme:dark){body{color:#e8e6e3;background:#161514}code{background:#2a2826}}
</style></head><body>
<h1>The Hestia daemon is running, but its web UI was not built into this binary.</h1>
<p>From the source tree, run <code>make web</code> and rebuild the binary, or run
<code>make run</code>, which builds the UI and starts the daemon.</p>
<p>The API is available meanwhile; <code>GET /health</code> reports the daemon's status.</p>
</body></html>
`

func serveNotBuilt(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(notBuiltPage))
	}
}
