package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/tools"
)

// world is a loopback test server standing in for public hosts: the fake
// resolver answers public addresses for *.test names, and the dialer sends
// connections to those addresses to the server. Nothing leaves the machine.
type world struct {
	srv    *httptest.Server
	dials  atomic.Int32
	fetch  *Fetcher
	public netip.Addr
}

func newWorld(t *testing.T, allow ...string) *world {
	t.Helper()
	w := &world{public: netip.MustParseAddr("93.184.216.34")}
	mux := http.NewServeMux()
	mux.HandleFunc("/article", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(rw, `<html><head><title>Contract law basics</title><script>steal()</script><style>p{}</style></head><body>
<nav>Home | About</nav><article><h1>Contract law basics</h1><p>A contract may be terminated by either party with notice as agreed.</p>
<p>Courts look at the termination clause first, then at statutory notice periods.</p><p>`+strings.Repeat("More detail about contracts and notice periods. ", 20)+`</p></article></body></html>`)
	})
	mux.HandleFunc("/plain", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(rw, "just text")
	})
	mux.HandleFunc("/data.json", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprint(rw, `{"a":1,"b":[true]}`)
	})
	mux.HandleFunc("/bin", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/octet-stream")
		rw.Write([]byte{0, 1, 2})
	})
	mux.HandleFunc("/big", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain")
		rw.Write([]byte(strings.Repeat("x", 3000)))
	})
	mux.HandleFunc("/to-loopback", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, w.srv.URL+"/plain", http.StatusFound)
	})
	mux.HandleFunc("/to-metadata", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/to-private-name", func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, "http://intranet.test/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/hop/", func(rw http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/hop/"), "%d", &n)
		if n == 0 {
			fmt.Fprint(rw, "arrived")
			return
		}
		http.Redirect(rw, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
	w.srv = httptest.NewServer(mux)
	t.Cleanup(w.srv.Close)
	srvAddr := w.srv.Listener.Addr().String()
	g := &Guard{
		Allow: allow,
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "site.test", "other.test":
				return []netip.Addr{w.public}, nil
			case "intranet.test":
				return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
			case "rebind.test":
				return []netip.Addr{w.public, netip.MustParseAddr("127.0.0.1")}, nil
			case "metadata.test":
				return []netip.Addr{netip.MustParseAddr("::ffff:169.254.169.254")}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			w.dials.Add(1)
			host, _, _ := net.SplitHostPort(addr)
			if host == w.public.String() {
				addr = srvAddr
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	w.fetch = New(Fetcher{Guard: g, MaxBytes: 2000, PDF: docs.InProcess{}})
	return w
}

func (w *world) url(path string) string {
	_, port, _ := net.SplitHostPort(w.srv.Listener.Addr().String())
	return "http://site.test:" + port + path
}

func (w *world) call(t *testing.T, u string) (string, bool) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"url": u})
	res, err := w.fetch.Tools("")[0].Run(context.Background(), tools.Call{Args: args})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content, res.IsError
}

func TestFetchReadable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.fetch.MaxBytes = 1 << 20
	out, isErr := w.call(t, w.url("/article"))
	if isErr || !strings.Contains(out, "title: Contract law basics") || !strings.Contains(out, "terminated by either party") || strings.Contains(out, "steal()") || strings.Contains(out, "p{}") {
		t.Fatalf("%s", out)
	}
	out, isErr = w.call(t, w.url("/data.json"))
	if isErr || !strings.Contains(out, "\"a\": 1") {
		t.Fatalf("%s", out)
	}
	out, isErr = w.call(t, w.url("/hop/5"))
	if isErr || !strings.Contains(out, "arrived") || !strings.Contains(out, "requested: ") {
		t.Fatalf("five redirects: %s", out)
	}
	if s := FetchSpec(); !s.UntrustedOutput || !s.Egress || !s.ReadOnly {
		t.Fatalf("web_fetch must be untrusted egress: %+v", s)
	}
}

func TestFetchRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	_, port, _ := net.SplitHostPort(w.srv.Listener.Addr().String())
	cases := []struct{ url, want string }{
		{w.srv.URL + "/plain", "127.0.0.1 is a loopback address"},
		{"http://localhost:" + port + "/plain", "is this machine"},
		{"http://[::1]:" + port + "/", "::1 is a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "loopback"},
		{"http://169.254.169.254/latest/meta-data/", "link-local"},
		{"http://metadata.test/", "link-local"},
		{"http://10.0.0.1/", "private"},
		{"http://192.168.1.1/", "private"},
		{"http://0.0.0.0:" + port + "/", "unspecified"},
		{"http://intranet.test/", "intranet.test (resolves to 10.1.2.3) is a private address"},
		{"http://rebind.test:" + port + "/plain", "loopback"},
		{w.url("/to-loopback"), "loopback"},
		{w.url("/to-metadata"), "link-local"},
		{w.url("/to-private-name"), "private"},
		{w.url("/hop/6"), "more than 5 redirects"},
		{w.url("/bin"), "application/octet-stream; web_fetch reads HTML, plain text, JSON and PDF only"},
		{"ftp://site.test/x", "only http and https"},
		{"file:///etc/passwd", "only http and https"},
		{"http://user:pw@site.test/", "user name or password"},
		{"http://nosuch.test/", "no such host"},
		{"http://" + strings.Repeat("a", 3000), "at most 2048"},
	}
	for _, c := range cases {
		before := w.dials.Load()
		out, isErr := w.call(t, c.url)
		if !isErr || !strings.Contains(out, c.want) {
			t.Errorf("%s: %s (want %q)", c.url, out, c.want)
		}
		if strings.Contains(c.want, "loopback") || strings.Contains(c.want, "private") || strings.Contains(c.want, "link-local") {
			if !strings.HasPrefix(out, "refused: ") && !strings.Contains(out, "redirect") {
				t.Errorf("%s: SSRF refusal does not say refused: %s", c.url, out)
			}
			if !strings.Contains(c.url, "/to-") && w.dials.Load() != before {
				t.Errorf("%s: a blocked address was dialled", c.url)
			}
		}
	}
	out, isErr := w.call(t, w.url("/big"))
	if isErr || !strings.Contains(out, "cut at 2000 bytes") {
		t.Fatalf("%s", out)
	}
}

func TestFetchAllowList(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "127.0.0.1")
	out, isErr := w.call(t, w.srv.URL+"/plain")
	if isErr || !strings.Contains(out, "just text") {
		t.Fatalf("allow-listed loopback: %s", out)
	}
}

func TestWebSearch(t *testing.T) {
	t.Parallel()
	var gotQ string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		gotQ = r.URL.Query().Get("q")
		if r.URL.Query().Get("format") != "json" {
			http.Error(rw, "format", 400)
			return
		}
		fmt.Fprint(rw, `{"results":[{"url":"https://a.example/","title":"A  title","content":"snippet one"},{"url":"https://b.example/","title":"B","content":"two"}]}`)
	}))
	defer srv.Close()
	f := New(Fetcher{})
	res, _ := f.Tools(srv.URL)[1].Run(context.Background(), tools.Call{Args: json.RawMessage(`{"query":"contract termination","max_results":1}`)})
	if res.IsError || gotQ != "contract termination" || !strings.Contains(res.Content, "1. A title\n   https://a.example/") || strings.Contains(res.Content, "b.example") {
		t.Fatalf("%+v", res)
	}
	res, _ = f.Tools("")[1].Run(context.Background(), tools.Call{Args: json.RawMessage(`{"query":"x"}`)})
	if !res.IsError || !strings.Contains(res.Content, "not configured") {
		t.Fatalf("%+v", res)
	}
}
