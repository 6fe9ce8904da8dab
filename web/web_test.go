package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func builtFS(t *testing.T) fstest.MapFS {
	return fstest.MapFS{
		"index.html":              {Data: []byte("<!doctype html><title>Hestia</title>")},
		"sw.js":                   {Data: []byte("self.addEventListener('fetch',()=>{})")},
		"manifest.webmanifest":    {Data: []byte(`{"name":"Hestia"}`)},
		"icon.svg":                {Data: []byte("<svg/>")},
		"assets/app-abc123.js":    {Data: []byte("console.log('plain')")},
		"assets/app-abc123.js.gz": {Data: gz(t, "console.log('gzip')")},
		"assets/app-abc123.js.br": {Data: []byte("BROTLI-BYTES")},
		"assets/style-def456.css": {Data: []byte("body{}")},
		".keep":                   {Data: nil},
	}
}

type result struct {
	status int
	hdr    http.Header
	body   string
}

func do(t *testing.T, h http.Handler, method, target string, hdr map[string]string) result {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return result{rec.Code, rec.Result().Header, string(b)}
}

func TestHandlerServesBuild(t *testing.T) {
	t.Parallel()
	h := NewHandler(builtFS(t))
	tests := []struct {
		name, method, target, accept string
		status                       int
		body, ctype, cache, encoding string
	}{
		{"root is index", "GET", "/", "", 200, "<title>Hestia</title>", "text/html", "no-cache", ""},
		{"index by name", "GET", "/index.html", "", 200, "<title>Hestia</title>", "text/html", "no-cache", ""},
		{"spa route falls back", "GET", "/chat/42", "", 200, "<title>Hestia</title>", "text/html", "no-cache", ""},
		{"nested spa route", "GET", "/settings/pair", "", 200, "<title>Hestia</title>", "text/html", "no-cache", ""},
		{"service worker never cached", "GET", "/sw.js", "", 200, "addEventListener", "javascript", "no-cache", ""},
		{"manifest type", "GET", "/manifest.webmanifest", "", 200, "Hestia", "application/manifest+json", "no-cache", ""},
		{"hashed asset immutable", "GET", "/assets/style-def456.css", "", 200, "body{}", "text/css", "immutable", ""},
		{"identity when nothing accepted", "GET", "/assets/app-abc123.js", "", 200, "plain", "javascript", "immutable", ""},
		{"gzip negotiated", "GET", "/assets/app-abc123.js", "gzip, deflate", 200, "", "javascript", "immutable", "gzip"},
		{"brotli preferred", "GET", "/assets/app-abc123.js", "gzip, br", 200, "BROTLI-BYTES", "javascript", "immutable", "br"},
		{"brotli refused with q=0", "GET", "/assets/app-abc123.js", "br;q=0, gzip", 200, "", "javascript", "immutable", "gzip"},
		{"wildcard accepts", "GET", "/assets/app-abc123.js", "*", 200, "BROTLI-BYTES", "javascript", "immutable", "br"},
		{"other static file", "GET", "/icon.svg", "", 200, "<svg/>", "image/svg+xml", "max-age=3600", ""},
		{"missing asset is 404", "GET", "/assets/gone-999.js", "", 404, "", "", "", ""},
		{"missing file with extension is 404", "GET", "/favicon.png", "", 404, "", "", "", ""},
		{"compressed sibling not addressable", "GET", "/assets/app-abc123.js.gz", "", 404, "", "", "", ""},
		{"placeholder hidden", "GET", "/.keep", "", 404, "", "", "", ""},
		{"traversal stays inside", "GET", "/../../etc/passwd", "", 200, "<title>Hestia</title>", "text/html", "no-cache", ""},
		{"traversal to a file stays inside", "GET", "/../../etc/hostname.txt", "", 404, "", "", "", ""},
		{"unknown api route is json 404", "GET", "/api/nope", "", 404, `"not_found"`, "application/json", "no-store", ""},
		{"unknown v1 route is json 404", "POST", "/v1/nope", "", 404, `"not_found"`, "application/json", "no-store", ""},
		{"post rejected", "POST", "/", "", 405, "", "", "", ""},
		{"head works", "HEAD", "/", "", 200, "", "text/html", "no-cache", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hdr := map[string]string{}
			if tc.accept != "" {
				hdr["Accept-Encoding"] = tc.accept
			}
			res := do(t, h, tc.method, tc.target, hdr)
			if res.status != tc.status {
				t.Fatalf("status = %d, want %d (body %q)", res.status, tc.status, res.body)
			}
			if !strings.Contains(res.body, tc.body) {
				t.Errorf("body %q does not contain %q", res.body, tc.body)
			}
			if got := res.hdr.Get("Content-Type"); !strings.Contains(got, tc.ctype) {
				t.Errorf("Content-Type = %q, want it to contain %q", got, tc.ctype)
			}
			if got := res.hdr.Get("Cache-Control"); !strings.Contains(got, tc.cache) {
				t.Errorf("Cache-Control = %q, want it to contain %q", got, tc.cache)
			}
			if got := res.hdr.Get("Content-Encoding"); got != tc.encoding {
				t.Errorf("Content-Encoding = %q, want %q", got, tc.encoding)
			}
			if tc.encoding == "gzip" {
				zr, err := gzip.NewReader(strings.NewReader(res.body))
				if err != nil {
					t.Fatalf("gzip body: %v", err)
				}
				plain, _ := io.ReadAll(zr)
				if string(plain) != "console.log('gzip')" {
					t.Errorf("gunzipped = %q", plain)
				}
			}
		})
	}
}

func TestHandlerRevalidation(t *testing.T) {
	t.Parallel()
	h := NewHandler(builtFS(t))
	first := do(t, h, "GET", "/", nil)
	tag := first.hdr.Get("ETag")
	if tag == "" {
		t.Fatal("index.html has no ETag")
	}
	again := do(t, h, "GET", "/", map[string]string{"If-None-Match": tag})
	if again.status != http.StatusNotModified {
		t.Fatalf("revalidation status = %d, want 304", again.status)
	}
	gzTag := do(t, h, "GET", "/assets/app-abc123.js", map[string]string{"Accept-Encoding": "gzip"}).hdr.Get("ETag")
	plainTag := do(t, h, "GET", "/assets/app-abc123.js", nil).hdr.Get("ETag")
	if gzTag == plainTag {
		t.Errorf("gzip and identity responses share ETag %s", gzTag)
	}
	if csp := first.hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP = %q, want script-src 'self'", csp)
	}
}

func TestHandlerNotBuilt(t *testing.T) {
	t.Parallel()
	h := NewHandler(fstest.MapFS{".keep": {Data: nil}})
	for _, target := range []string{"/", "/chat/3", "/index.html"} {
		res := do(t, h, "GET", target, nil)
		if res.status != http.StatusServiceUnavailable {
			t.Errorf("%s: status = %d, want 503", target, res.status)
		}
		if !strings.Contains(res.body, "make web") || !strings.Contains(res.body, "make run") {
			t.Errorf("%s: page does not say how to build: %q", target, res.body)
		}
		if ct := res.hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("%s: Content-Type = %q", target, ct)
		}
	}
	if res := do(t, h, "GET", "/assets/app.js", nil); res.status != http.StatusNotFound {
		t.Errorf("asset without build: status = %d, want 404", res.status)
	}
}

// TestEmbeddedHandler checks the real embedded tree: it must work both in a
// fresh checkout (only .keep) and after `make web`.
func TestEmbeddedHandler(t *testing.T) {
	t.Parallel()
	res := do(t, Handler(), "GET", "/", nil)
	switch res.status {
	case http.StatusOK:
		if !strings.Contains(res.body, "<div id=\"app\"") {
			t.Errorf("built index.html lacks the app root: %.200q", res.body)
		}
	case http.StatusServiceUnavailable:
		if !strings.Contains(res.body, "make web") {
			t.Errorf("not-built page lacks instructions")
		}
	default:
		t.Fatalf("status = %d", res.status)
	}
}
