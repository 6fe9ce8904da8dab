package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// No token ever reaches the log, an error or a printed value: run every
// path (connect, refresh, rotation, a provider that echoes the token in
// its error, revocation) with debug logging and look for them.
func TestTokensNeverLoggedNorInErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{Rotate: true, ClientSecret: "client-secret-value"}, nil)
	e.connect(t)
	secrets := map[string]bool{"client-secret-value": true}
	g := readGrant(t, e.dir, "work")
	secrets[g.RefreshToken] = true
	src, _ := e.m.Source("work", Any)
	var errs []error
	for range 3 {
		e.clock.Advance(2 * time.Hour)
		tok, err := src.Token(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		secrets[tok.AccessToken] = true
		secrets[readGrant(t, e.dir, "work").RefreshToken] = true
		// Printing or logging a Token by mistake shows no secret.
		e.opts.Log.Info("oops", "tok", tok)
		for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
			if s := fmt.Sprintf(f, tok); strings.Contains(s, tok.AccessToken) {
				t.Errorf("%s prints the token: %s", f, s)
			}
		}
		gr := readGrant(t, e.dir, "work")
		e.opts.Log.Info("oops", "grant", &gr)
		if s := fmt.Sprintf("%v %+v %#v", &gr, &gr, &gr); strings.Contains(s, gr.RefreshToken) {
			t.Errorf("a grant prints its refresh token: %s", s)
		}
	}
	// A provider that quotes the refresh token back in its error.
	rt := readGrant(t, e.dir, "work").RefreshToken
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":"invalid_request","error_description":"bad token %s or secret %s"}`, r.PostForm.Get("refresh_token"), r.PostForm.Get("client_secret"))
	}))
	defer echo.Close()
	e.acct.Provider.TokenURL = echo.URL
	e.acct.Provider.SecretInHeader = false
	m2 := e.manager(t)
	e.clock.Advance(2 * time.Hour)
	src2, _ := m2.Source("work", Any)
	_, err := src2.Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("echoing provider: %v", err)
	}
	errs = append(errs, err)
	// Revocation, then every failure of a disconnected account.
	e.acct.Provider.TokenURL = e.srv.TokenURL()
	if _, err := e.manager(t).Disconnect(context.Background(), "work"); err != nil {
		t.Fatal(err)
	}
	_, err = src.Token(context.Background())
	errs = append(errs, err)
	logs := e.log.String()
	if !strings.Contains(logs, "oauthRefreshed") || !strings.Contains(logs, "oauthConnected") {
		t.Errorf("the log lacks the expected events:\n%s", logs)
	}
	for s := range secrets {
		if s == "" {
			t.Fatal("empty secret collected")
		}
		if strings.Contains(logs, s) {
			t.Errorf("the log holds a secret %q…", s[:6])
		}
		for _, err := range errs {
			if err != nil && strings.Contains(err.Error(), s) {
				t.Errorf("an error holds a secret: %v", err)
			}
		}
	}
	if rt == "" {
		t.Fatal("no refresh token read")
	}
}

// A damaged token file is a reconnect error naming the file, and never
// quotes the file's content.
func TestMalformedTokenFiles(t *testing.T) {
	t.Parallel()
	const secret = "rt-SECRET-in-a-damaged-file"
	cases := map[string]string{
		"not json":        "{\"refresh_token\": \"" + secret + "\"",
		"garbage":         secret,
		"empty":           "",
		"wrong type":      `{"version":1,"account":"work","client_id":"hestia-test","refresh_token":["` + secret + `"]}`,
		"no refresh":      `{"version":1,"account":"work","client_id":"hestia-test","scopes":["` + secret + `"]}`,
		"newer":           `{"version":9,"account":"work","client_id":"hestia-test","refresh_token":"` + secret + `"}`,
		"no version":      `{"account":"work","client_id":"hestia-test","refresh_token":"` + secret + `"}`,
		"other account":   `{"version":1,"account":"home","client_id":"hestia-test","refresh_token":"` + secret + `"}`,
		"trailing data":   `{"version":1,"account":"work","client_id":"hestia-test","refresh_token":"x"} {"` + secret + `":1}`,
		"bad expiry type": `{"version":1,"account":"work","client_id":"hestia-test","refresh_token":"x","access":{"":{"token":"` + secret + `","expiry":5}}}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.Options{}, nil)
			os.MkdirAll(e.dir, 0o700)
			path := filepath.Join(e.dir, "work.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			src, _ := e.m.Source("work", Any)
			_, err := src.Token(context.Background())
			if !errors.Is(err, ErrReconnect) || !strings.Contains(err.Error(), path) {
				t.Errorf("err = %v, want a reconnect error naming %s", err, path)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the file: %v", err)
			}
			st, serr := e.m.Status("work")
			if serr != nil || st.State != StateReconnect {
				t.Errorf("status = %+v, %v", st, serr)
			}
		})
	}
}

// A token file someone made readable by others is closed again, with a
// warning; a folder made loose is tightened when written.
func TestTokenFileModeRepaired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	e.connect(t)
	path := filepath.Join(e.dir, "work.json")
	os.Chmod(path, 0o644)
	os.Chmod(e.dir, 0o755)
	m2 := e.manager(t)
	if st, err := m2.Status("work"); err != nil || st.State != StateOK {
		t.Fatalf("status: %+v %v", st, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	if !strings.Contains(e.log.String(), "oauthTokenFileNotPrivate") {
		t.Error("no warning about the loose file")
	}
	e.clock.Advance(2 * time.Hour)
	src, _ := m2.Source("work", Any)
	if _, err := src.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	if di, _ := os.Stat(e.dir); di.Mode().Perm() != 0o700 {
		t.Errorf("folder mode = %v, want 0700", di.Mode().Perm())
	}
	if leftovers, _ := filepath.Glob(filepath.Join(e.dir, ".*tmp*")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestParseTokenResponse(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	r, err := parseTokenResponse(200, "application/json; charset=utf-8", []byte(`{"access_token":"a","token_type":"bearer","expires_in":"60","refresh_token":"r","scope":"x y"}`), now)
	if err != nil || r.Access.AccessToken != "a" || r.Refresh != "r" || !r.Access.Expiry.Equal(now.Add(time.Minute)) || len(r.Scopes) != 2 {
		t.Errorf("json: %+v %v", r, err)
	}
	r, err = parseTokenResponse(200, "application/x-www-form-urlencoded", []byte(`access_token=a&expires_in=30`), now)
	if err != nil || r.Access.AccessToken != "a" || !r.Access.Expiry.Equal(now.Add(30*time.Second)) {
		t.Errorf("form: %+v %v", r, err)
	}
	for body, want := range map[string]string{
		`{"token_type":"Bearer"}`:                  "without an access_token",
		`{"access_token":"a","token_type":"mac"}`:  "only Bearer",
		`{"access_token":"a","expires_in":-1}`:     "not a number of seconds",
		`{"access_token":"a","expires_in":"soon"}`: "not a number of seconds",
		`<html>`: "not a token response",
	} {
		if _, err := parseTokenResponse(200, "application/json", []byte(body), now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	_, err = parseTokenResponse(502, "text/html", []byte(`<html>bad gateway</html>`), now)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Status != 502 || !Retryable(err) {
		t.Errorf("502: %v", err)
	}
}

// The log's keys follow the style: static messages, camelCase keys.
func TestLogMessagesAreStatic(t *testing.T) {
	t.Parallel()
	var seen []string
	h := slog.New(handlerFunc(func(r slog.Record) { seen = append(seen, r.Message) }))
	e := newEnv(t, oauthtest.Options{}, nil)
	e.opts.Log = h
	e.m = e.manager(t)
	e.connect(t)
	for _, m := range seen {
		if strings.ContainsAny(m, " :") {
			t.Errorf("log message %q is not a static camelCase name", m)
		}
	}
}

type handlerFunc func(slog.Record)

func (f handlerFunc) Enabled(context.Context, slog.Level) bool      { return true }
func (f handlerFunc) Handle(_ context.Context, r slog.Record) error { f(r); return nil }
func (f handlerFunc) WithAttrs([]slog.Attr) slog.Handler            { return f }
func (f handlerFunc) WithGroup(string) slog.Handler                 { return f }
