package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/scheduler"
)

// TestBackgroundModelWorkNeedsConsent: on a fresh home whose model
// configuration includes a remote provider, wiki.promote and actions.scan
// send nothing to the model (their runs are journaled skipped) until the
// user allows it; the consent screen names the provider that would
// receive the mail.
func TestBackgroundModelWorkNeedsConsent(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("d", "record_mail_knowledge", `{"durable":true,"categories":["commitment"],"summary":"The roofer starts on 1 March.","facts":["Roof work starts 1 March"],"commitments":[],"people":["Lena Park"],"organisations":[],"attachments":[]}`)),
	)
	home := t.TempDir()
	maildir := filepath.Join(t.TempDir(), "Mail")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(maildir, d), 0o700)
	}
	raw := "Message-ID: <roof@roofs.example>\nFrom: Lena Park <lena@roofs.example>\nTo: me@example.org\nSubject: Roof contract signed\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nHi, the contract is signed. We start on 1 March.\nLena\n"
	os.WriteFile(filepath.Join(maildir, "new", "1767607200.1.host"), []byte(raw), 0o600)
	a := testApp(t, home)
	// Calls route to the fake; the hosted provider makes the setup remote.
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.LLM.Providers = map[string]config.LLMProvider{"hosted": {BaseURL: "https://api.hosted.example/v1"}}
	a.Config.Mail.Sources = []string{maildir}
	a.Config.Mail.Watch = false
	base, stop := start(t, a)
	defer stop()
	call := func(method, path string, body any, out any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if out != nil {
			json.Unmarshal(b, out)
		}
	}
	runJob := func(name string) scheduler.Run {
		t.Helper()
		var started struct {
			Run int64 `json:"run_id"`
		}
		call("POST", "/api/jobs/"+name+"/run", nil, &started)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var h struct{ Runs []scheduler.Run }
			call("GET", "/api/jobs/"+name+"/runs", nil, &h)
			if len(h.Runs) > 0 && h.Runs[0].ID == started.Run && h.Runs[0].Status != scheduler.StatusRunning {
				return h.Runs[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s did not finish: %+v", name, h.Runs)
			}
		}
	}
	var c Consent
	call("GET", "/api/consent", nil, &c)
	if c.Allowed || c.Decided || len(c.Remote) != 1 || !strings.Contains(c.Prompt, "hosted (api.hosted.example)") {
		t.Fatalf("fresh consent %+v", c)
	}
	if r := runJob("mail.reconcile"); r.Status != scheduler.StatusOK {
		t.Fatalf("reconcile %+v", r)
	}
	for _, job := range []string{"wiki.promote", "actions.scan"} {
		if r := runJob(job); r.Status != scheduler.StatusSkipped || !strings.Contains(r.Error, "hestia consent allow") {
			t.Errorf("%s without consent: %+v", job, r)
		}
	}
	if n := len(up.ChatRequests()); n != 0 {
		t.Fatalf("%d model requests before consent, want 0", n)
	}
	call("PUT", "/api/consent", map[string]bool{"allowed": true}, &c)
	if !c.Allowed || !c.Decided {
		t.Fatalf("after allow %+v", c)
	}
	if r := runJob("wiki.promote"); r.Status != scheduler.StatusOK {
		t.Fatalf("promote with consent %+v", r)
	}
	if n := len(up.ChatRequests()); n != 1 {
		t.Errorf("%d model requests after consent, want the promotion's 1", n)
	}
	// A yes covers the provider it named: another remote one asks again.
	a.Config.LLM.Providers["other"] = config.LLMProvider{BaseURL: "https://api.other.example/v1"}
	if c, err := a.Consent(); err != nil || c.Allowed {
		t.Errorf("consent after adding a provider: %+v %v", c, err)
	}
}

// TestConsentDefaults: local-only models may run background work
// unasked; a stored "no" holds for them too; a bad answer is refused.
func TestConsentDefaults(t *testing.T) {
	t.Parallel()
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL = "http://127.0.0.1:11434/v1"
	if err := a.backgroundAllowed(); err != nil {
		t.Errorf("local model, fresh home: %v", err)
	}
	if _, err := a.SetConsent(false); err != nil {
		t.Fatal(err)
	}
	if err := a.backgroundAllowed(); err == nil {
		t.Error("local model after deny: allowed")
	}
	os.WriteFile(a.consentPath(), []byte("{"), 0o600)
	if _, err := a.Consent(); err == nil || !strings.Contains(err.Error(), "consent") {
		t.Errorf("corrupt consent file: %v", err)
	}
}
