package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/hestia-dev/hestia/internal/config"
)

// startIMAP runs an in-memory IMAP server with one user on loopback.
func startIMAP(t *testing.T, user, pass string) int {
	t.Helper()
	mem := imapmemserver.New()
	u := imapmemserver.NewUser(user, pass)
	if err := u.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	mem.AddUser(u)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}},
		InsecureAuth: true,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

type authBackend struct{ user, pass string }

func (b authBackend) NewSession(*smtp.Conn) (smtp.Session, error) { return &authSession{b: b}, nil }

type authSession struct{ b authBackend }

func (s *authSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *authSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.b.user || pass != s.b.pass {
			return errors.New("invalid credentials")
		}
		return nil
	}), nil
}
func (s *authSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *authSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *authSession) Data(io.Reader) error                 { return nil }
func (s *authSession) Reset()                               {}
func (s *authSession) Logout() error                        { return nil }

// startSMTP runs a go-smtp server that accepts one PLAIN login.
func startSMTP(t *testing.T, user, pass string) int {
	t.Helper()
	srv := smtp.NewServer(authBackend{user, pass})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func mailInput(imapPort, smtpPort int, pass string) StepInput {
	return StepInput{Name: "home", Address: "anna@example.org", Password: pass,
		IMAPHost: "127.0.0.1", IMAPPort: imapPort, IMAPSecurity: "none",
		SMTPHost: "127.0.0.1", SMTPPort: smtpPort, SMTPSecurity: "none"}
}

func TestSetupPresetsAreValidConfig(t *testing.T) {
	for _, p := range MailPresets() {
		a := config.MailAccount{Name: p.ID, Address: "a@b.c", PasswordFile: "/x", IMAPHost: p.IMAPHost, IMAPPort: p.IMAPPort, IMAPSecurity: p.IMAPSecurity,
			SMTPHost: p.SMTPHost, SMTPPort: p.SMTPPort, SMTPSecurity: p.SMTPSecurity}
		cfg := config.Default()
		cfg.Mail.Accounts = []config.MailAccount{a}
		if err := cfg.Validate(); err != nil {
			t.Errorf("preset %s: %v", p.ID, err)
		}
		if p.Password == "" || p.Name == "" {
			t.Errorf("preset %s has no name or password help", p.ID)
		}
	}
	for _, p := range DAVPresets() {
		if !strings.HasPrefix(p.CalDAVURL, "https://") || !strings.HasPrefix(p.CardDAVURL, "https://") {
			t.Errorf("DAV preset %s: URLs must be https: %s %s", p.ID, p.CalDAVURL, p.CardDAVURL)
		}
	}
}

func TestSetupMailStoresPasswordInOwnerOnlyFile(t *testing.T) {
	s := newService(t, "")
	in := mailInput(startIMAP(t, "anna@example.org", "s3cret"), startSMTP(t, "anna@example.org", "s3cret"), "s3cret")
	out, err := s.SaveStep(context.Background(), StepMail, in)
	if err != nil {
		t.Fatal(err)
	}
	if out["mailboxes"] != 1 {
		t.Errorf("mailboxes = %v, want 1", out["mailboxes"])
	}
	secret := filepath.Join(SecretsDir(s.Paths), "mail-home")
	fi, err := os.Stat(secret)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secret mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(SecretsDir(s.Paths)); di.Mode().Perm() != 0o700 {
		t.Errorf("secrets dir mode %v, want 0700", di.Mode().Perm())
	}
	if b, _ := os.ReadFile(secret); strings.TrimSpace(string(b)) != "s3cret" {
		t.Errorf("secret file holds %q", b)
	}
	data, _ := os.ReadFile(s.Paths.ConfigFile())
	if bytes.Contains(data, []byte("s3cret")) {
		t.Fatalf("password written into config.toml:\n%s", data)
	}
	cfg, err := config.Parse(data, func(string) string { return "" })
	if err != nil {
		t.Fatalf("written config invalid: %v\n%s", err, data)
	}
	if len(cfg.Mail.Accounts) != 1 || cfg.Mail.Accounts[0].PasswordFile != secret || cfg.Mail.Accounts[0].Username != "anna@example.org" {
		t.Errorf("account = %+v", cfg.Mail.Accounts)
	}
	// Saving again replaces the entry instead of adding a duplicate.
	if _, err := s.SaveStep(context.Background(), StepMail, in); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(s.Paths.ConfigFile())
	if n := strings.Count(string(data), "[[mail.accounts]]"); n != 1 {
		t.Errorf("%d account entries after saving twice", n)
	}
}

func TestSetupMailFailuresNameThePart(t *testing.T) {
	imapPort, smtpPort := startIMAP(t, "anna@example.org", "right"), startSMTP(t, "anna@example.org", "smtp-only")
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	for _, tc := range []struct {
		name string
		in   StepInput
		part string
	}{
		{"imap refused", mailInput(closedPort, smtpPort, "right"), "IMAP connection"},
		{"imap password", mailInput(imapPort, smtpPort, "wrong"), "IMAP login as anna@example.org"},
		{"smtp password", mailInput(imapPort, smtpPort, "right"), "SMTP auth as anna@example.org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newService(t, "")
			_, err := s.SaveStep(context.Background(), StepMail, tc.in)
			var se *StepError
			if !errors.As(err, &se) || !strings.HasPrefix(se.Part, tc.part) {
				t.Fatalf("err = %v, want a StepError for %q", err, tc.part)
			}
			if _, err := os.Stat(s.Paths.ConfigFile()); err == nil {
				t.Error("config.toml written although the test failed")
			}
			if _, err := os.Stat(SecretsDir(s.Paths)); err == nil {
				t.Error("secret written although the test failed")
			}
		})
	}
}

func TestSetupRefusesBadInput(t *testing.T) {
	s := newService(t, "")
	for _, tc := range []struct {
		step string
		in   StepInput
		want string
	}{
		{StepMail, StepInput{Address: "anna@example.org"}, "missing password, imap_host, smtp_host"},
		{StepMail, StepInput{Address: "anna@example.org", Password: "p", IMAPHost: "imap.example.org", IMAPPort: 143, IMAPSecurity: "none", SMTPHost: "smtp.example.org", SMTPPort: 25, SMTPSecurity: "tls"}, "only a loopback host"},
		{StepModel, StepInput{BaseURL: "http://x/v1"}, "missing model"},
		{StepCalendar, StepInput{}, "either url"},
		{StepTelegram, StepInput{Token: "1:a"}, "owner_id"},
		{"nope", StepInput{}, `no setup step "nope"`},
	} {
		_, err := s.SaveStep(context.Background(), tc.step, tc.in)
		if !errors.Is(err, ErrStepInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.step, err, tc.want)
		}
	}
}

func modelServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"data":[{"id":"qwen3:4b"}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSetupModelStatusAndDismiss(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "")
	st, err := s.SetupStatus(ctx)
	if err != nil || !st.Needed || len(st.MailPresets) < 5 {
		t.Fatalf("fresh home: %+v %v", st, err)
	}
	srv := modelServer(t)
	_, err = s.SaveStep(ctx, StepModel, StepInput{Provider: "ollama", BaseURL: srv.URL + "/v1", Model: "llama9"})
	var se *StepError
	if !errors.As(err, &se) || se.Part != "model" || !strings.Contains(err.Error(), "qwen3:4b") {
		t.Fatalf("unknown model: err = %v", err)
	}
	if _, err := s.SaveStep(ctx, StepModel, StepInput{Provider: "ollama", BaseURL: srv.URL + "/v1", Model: "qwen3:4b"}); err != nil {
		t.Fatal(err)
	}
	st, _ = s.SetupStatus(ctx)
	if st.Needed || !st.ModelReady || !st.Configured[StepModel] {
		t.Errorf("after the model step: %+v", st)
	}

	s2 := newService(t, "")
	if err := s2.DismissSetup(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := s2.SetupStatus(ctx); st.Needed || !st.Dismissed {
		t.Errorf("after dismiss: %+v", st)
	}
}

func TestSetupDAVVdirFilesTelegram(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "")
	dav := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); r.Method != "PROPFIND" || u != "anna" || p != "pw" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusMultiStatus)
	}))
	defer dav.Close()
	tg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bot123:good/getMe" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"ok":false,"description":"Unauthorized"}`)
			return
		}
		io.WriteString(w, `{"ok":true,"result":{"username":"hestia_bot"}}`)
	}))
	defer tg.Close()

	_, err := s.SaveStep(ctx, StepCalendar, StepInput{Name: "work", URL: dav.URL + "/dav/", Username: "anna", Password: "bad"})
	var se *StepError
	if !errors.As(err, &se) || se.Part != "CalDAV" || !strings.Contains(err.Error(), "refused the user name or password") {
		t.Fatalf("bad DAV password: %v", err)
	}
	if _, err := s.SaveStep(ctx, StepCalendar, StepInput{Name: "work", URL: dav.URL + "/dav/", Username: "anna", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	folder := t.TempDir()
	if _, err := s.SaveStep(ctx, StepContacts, StepInput{Name: "phone", Path: filepath.Join(folder, "missing")}); !errors.As(err, &se) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing vdir: %v", err)
	}
	if _, err := s.SaveStep(ctx, StepContacts, StepInput{Name: "phone", Path: folder}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveStep(ctx, StepFiles, StepInput{FileRoots: []string{folder}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveStep(ctx, StepTelegram, StepInput{Token: "123:bad", OwnerID: 42, APIURL: tg.URL}); !errors.As(err, &se) || !strings.Contains(err.Error(), "refused the token") || strings.Contains(err.Error(), "123:bad") {
		t.Fatalf("bad token: %v", err)
	}
	out, err := s.SaveStep(ctx, StepTelegram, StepInput{Token: "123:good", OwnerID: 42, APIURL: tg.URL})
	if err != nil || out["bot"] != "hestia_bot" {
		t.Fatalf("telegram: %v %v", out, err)
	}
	data, _ := os.ReadFile(s.Paths.ConfigFile())
	cfg, err := config.Parse(data, func(string) string { return "" })
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if len(cfg.Calendar.CalDAV) != 1 || cfg.Calendar.CalDAV[0].PasswordFile == "" || len(cfg.Contacts.Sources) != 1 ||
		len(cfg.Agent.FileRoots) != 1 || cfg.Telegram.TokenFile == "" || cfg.Telegram.OwnerID != 42 {
		t.Errorf("config:\n%s", data)
	}
	if bytes.Contains(data, []byte("123:good")) || bytes.Contains(data, []byte(`"pw"`)) {
		t.Errorf("a secret is in config.toml:\n%s", data)
	}
	for _, f := range []string{cfg.Telegram.TokenFile, cfg.Calendar.CalDAV[0].PasswordFile} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, fi, err)
		}
	}
}

func TestSetupHTTP(t *testing.T) {
	s := newService(t, "")
	mux := http.NewServeMux()
	s.Routes(mux)
	do := func(method, path, body string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		var out map[string]any
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	if code, out := do("GET", "/api/setup", ""); code != 200 || out["needed"] != true {
		t.Fatalf("GET /api/setup: %d %v", code, out)
	}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	port := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	body, _ := json.Marshal(mailInput(port, port, "x"))
	code, out := do("POST", "/api/setup/mail/test", string(body))
	if code != 200 || out["ok"] != false || !strings.HasPrefix(out["part"].(string), "IMAP connection") {
		t.Fatalf("mail test: %d %v", code, out)
	}
	if code, out := do("POST", "/api/setup/files", `{"file_roots":[]}`); code != 400 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "file_roots") {
		t.Fatalf("files: %d %v", code, out)
	}
	srv := modelServer(t)
	if code, out := do("POST", "/api/setup/model", `{"base_url":"`+srv.URL+`/v1","model":"qwen3:4b"}`); code != 200 || out["ok"] != true {
		t.Fatalf("model save: %d %v", code, out)
	}
	if code, out := do("POST", "/api/setup/dismiss", ""); code != 200 || out["dismissed"] != true {
		t.Fatalf("dismiss: %d %v", code, out)
	}
}

func TestConfigExampleParses(t *testing.T) {
	data, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse(data, func(string) string { return "" }); err != nil {
		t.Fatalf("config.example.toml: %v", err)
	}
	// Every section of the configuration is documented in it.
	enc, _ := config.Default().TOML()
	for _, l := range strings.Split(enc, "\n") {
		if n, _, ok := header(strings.TrimSpace(l)); ok && !strings.Contains(n, ".") && !bytes.Contains(data, []byte("["+n+"]")) {
			t.Errorf("config.example.toml has no [%s] section", n)
		}
	}
}

// The commented [channels.*] examples in config.example.toml, uncommented,
// are a valid configuration: the documented keys are the ones that ship.
func TestChannelExamplesParse(t *testing.T) {
	data, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	start, end := strings.Index(s, "[channels]\n"), strings.Index(s, "\n[watch]")
	if start < 0 || end < start {
		t.Fatal("config.example.toml has no [channels] section before [watch]")
	}
	var b strings.Builder
	tables := 0
	for _, l := range strings.Split(s[start:end], "\n") {
		rest, ok := strings.CutPrefix(l, "# ")
		if !ok || !(strings.HasPrefix(rest, "[channels.") || strings.Contains(rest, " = ")) {
			continue
		}
		if strings.HasPrefix(rest, "[channels.") {
			tables++
		}
		b.WriteString(rest + "\n")
	}
	if tables < 6 {
		t.Fatalf("%d channel examples, want one per channel:\n%s", tables, b.String())
	}
	if _, err := config.Parse([]byte(b.String()), func(string) string { return "" }); err != nil {
		t.Fatalf("the channel examples do not parse:\n%s\n%v", b.String(), err)
	}
}
