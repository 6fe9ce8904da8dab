package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/mail"
)

func TestMailRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testApp(t, t.TempDir())
	defer a.Close()
	m, err := a.OpenMail(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw := "Message-ID: <r@x>\nFrom: a@x.org\nTo: b@x.org\nSubject: Route test\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nrouted body text\n"
	if _, err := m.Store.Ingest(ctx, []mail.Item{{Account: "local", Mailbox: "INBOX", Path: "p", Raw: []byte(raw)}}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	m.Routes(mux)
	get := func(path string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var v map[string]any
		json.Unmarshal(rec.Body.Bytes(), &v)
		return rec.Code, v
	}
	code, v := get("/api/mail/search?q=routed")
	if code != 200 || len(v["messages"].([]any)) != 1 {
		t.Fatalf("search: %d %v", code, v)
	}
	if code, v := get("/api/mail/search?role=spamfolder"); code != 400 || !strings.Contains(v["error"].(map[string]any)["message"].(string), "role") {
		t.Errorf("bad search: %d %v", code, v)
	}
	if code, v := get("/api/mail/messages/1"); code != 200 || v["subject"] != "Route test" {
		t.Errorf("read: %d %v", code, v)
	}
	if code, _ := get("/api/mail/messages/99"); code != 404 {
		t.Errorf("missing: %d", code)
	}
	if code, _ := get("/api/mail/messages/x"); code != 400 {
		t.Errorf("bad id: %d", code)
	}
	if code, v := get("/api/mail/messages/1/thread"); code != 200 || v["count"].(float64) != 1 {
		t.Errorf("thread: %d %v", code, v)
	}
	if code, v := get("/api/mail/ops"); code != 200 || v["operations"] == nil {
		t.Errorf("ops: %d %v", code, v)
	}
}

func TestMailPassword(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "pw")
	os.WriteFile(good, []byte("s3cret\n"), 0o600)
	loose := filepath.Join(dir, "loose")
	os.WriteFile(loose, []byte("x"), 0o644)
	env := func(k string) string {
		if k == "PW" {
			return "fromenv"
		}
		return ""
	}
	cases := []struct {
		acc     config.MailAccount
		want    string
		wantErr string
	}{
		{config.MailAccount{Name: "a", PasswordEnv: "PW"}, "fromenv", ""},
		{config.MailAccount{Name: "a", PasswordEnv: "EMPTY"}, "", "EMPTY is empty"},
		{config.MailAccount{Name: "a", PasswordFile: good}, "s3cret", ""},
		{config.MailAccount{Name: "a", PasswordFile: loose}, "", "chmod 600"},
		{config.MailAccount{Name: "a"}, "", "no password_env"},
	}
	for _, c := range cases {
		got, err := Password(c.acc, env)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%+v: err %v, want %q", c.acc, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: %q %v", c.acc, got, err)
		}
	}
}
