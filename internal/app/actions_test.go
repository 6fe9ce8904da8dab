package app

import (
	"bufio"
	"context"
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
	"github.com/hestia-dev/hestia/internal/mail"
)

// TestActionCenterProposalWaitsAcrossRestart: a fixture thread arrives
// after the Action Center is enabled, one planner call turns it into a
// proposal with a mail_reply step, executing it waits for approval, the
// daemon restarts, the approval is asked again, and approving sends the
// reply through a real SMTP server exactly once.
func TestActionCenterProposalWaitsAcrossRestart(t *testing.T) {
	t.Parallel()
	sink, smtpPort := startSMTP(t)
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o700)
	}
	// The backlog present at activation is never planned.
	os.WriteFile(filepath.Join(md, "cur", "0:2,S"), []byte("Message-ID: <old@x>\nFrom: Old <old@example.org>\nTo: me@example.org\nSubject: Ancient\nDate: Mon, 5 Jan 2026 08:00:00 +0000\n\nPlease reply.\n"), 0o600)
	up := llmtest.New(t)
	plan := func(replyTo int64) llmtest.Turn {
		return llmtest.Text(`Here is the plan: {"needed": true, "kind": "scheduling", "priority": "high", "deadline": "2026-03-10T17:00:00Z",
		"summary": "Ann asks whether Tuesday or Wednesday works for the installer.", "confidence": 0.9,
		"steps": [{"title": "Reply that Tuesday works", "tool": "mail_reply", "args": {"id": ` + jsonNum(replyTo) + `, "body": "Tuesday works for me."}}, {"title": "Add the visit to the calendar", "manual": true}]}`)
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte("s3cret"), 0o600)
	home := t.TempDir()
	configure := func(a *App) {
		a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
		a.Config.Mail.Accounts = []config.MailAccount{{Name: "me", Address: "me@example.org", PasswordFile: pwFile, SMTPHost: "127.0.0.1", SMTPPort: smtpPort, SMTPSecurity: "none"}}
	}
	importMail := func(a *App) {
		m, err := a.OpenMail(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Store.Import(context.Background(), md, mail.ImportOptions{Account: "me"}); err != nil {
			t.Fatal(err)
		}
	}
	a := testApp(t, home)
	configure(a)
	importMail(a)
	base, stop := start(t, a)
	call := func(a *App, base, method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	before, err := a.Jobs.Get(context.Background(), "actions.scan")
	if err != nil {
		t.Fatal(err)
	}
	if code, b := call(a, base, "PUT", "/api/actions/settings", `{"enabled":true,"language":"en"}`); code != 200 {
		t.Fatalf("enable: %d %s", code, b)
	}
	if code, b := call(a, base, "PUT", "/api/actions/settings", `{"enabled":true,"language":""}`); code != 400 || !strings.Contains(b, "language") {
		t.Fatalf("bad settings: %d %s", code, b)
	}
	// Enabling kicks the actions.scan job; let that run finish before new
	// mail arrives, so the manual scan below is the one that plans it.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		j, err := a.Jobs.Get(context.Background(), "actions.scan")
		if err == nil && !j.Running && j.LastRun != nil && j.LastRun.EndedAt != nil && (before.LastRun == nil || j.LastRun.ID != before.LastRun.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scan kicked by enabling did not finish: %+v %v", j, err)
		}
	}
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: Ann <ann@example.org>\nTo: me@example.org\nSubject: Solar installer\nDate: Mon, 2 Mar 2026 10:00:00 +0000\n\nThe installer can come on Tuesday or Wednesday.\n"), 0o600)
	os.WriteFile(filepath.Join(md, "cur", "2:2,S"), []byte("Message-ID: <b@x>\nFrom: Ann <ann@example.org>\nTo: me@example.org\nSubject: Re: Solar installer\nIn-Reply-To: <a@x>\nDate: Mon, 2 Mar 2026 11:00:00 +0000\n\nWhich day works for you?\n"), 0o600)
	os.WriteFile(filepath.Join(md, "cur", "3:2,S"), []byte("Message-ID: <c@x>\nFrom: no-reply@shop.example\nTo: me@example.org\nSubject: Your order\nDate: Mon, 2 Mar 2026 12:00:00 +0000\n\nShipped.\n"), 0o600)
	importMail(a)
	m, _ := a.OpenMail(context.Background())
	r, err := m.Store.Search(context.Background(), mail.Query{Subject: "Solar installer", Limit: 5, PerMessage: true})
	if err != nil || len(r.Messages) != 2 {
		t.Fatalf("fixture thread: %+v %v", r.Messages, err)
	}
	up.Push(plan(r.Messages[0].ID)) // the newest message
	code, b := call(a, base, "POST", "/api/actions/scan", "")
	var scan struct {
		Messages, Filtered, Threads int
		Calls                       int `json:"planner_calls"`
		Created                     int
	}
	json.Unmarshal([]byte(b), &scan)
	if code != 200 || scan.Messages != 3 || scan.Filtered != 1 || scan.Calls != 1 || scan.Created != 1 {
		t.Fatalf("scan: %d %s", code, b)
	}
	_, b = call(a, base, "GET", "/api/actions", "")
	var list struct {
		Actions []struct {
			ID      int64
			Kind    string
			Summary string
			Steps   []struct{ Tool, State string }
		}
		Counts map[string]int
	}
	json.Unmarshal([]byte(b), &list)
	if len(list.Actions) != 1 || list.Actions[0].Kind != "scheduling" || list.Counts["new"] != 1 || len(list.Actions[0].Steps) != 2 || list.Actions[0].Steps[0].Tool != "mail_reply" {
		t.Fatalf("actions: %s", b)
	}
	id := list.Actions[0].ID
	idPath := "/api/actions/" + jsonNum(id)
	if code, b := call(a, base, "POST", idPath+"/execute", ""); code != 202 {
		t.Fatalf("execute: %d %s", code, b)
	}
	waitApproval := func(a *App, base string) string {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			_, b := call(a, base, "GET", "/api/approvals", "")
			var p struct {
				Approvals []struct {
					ID, Tool string
					NoExpiry bool `json:"no_expiry"`
				}
			}
			json.Unmarshal([]byte(b), &p)
			if len(p.Approvals) == 1 && p.Approvals[0].Tool == "mail_reply" && p.Approvals[0].NoExpiry {
				return p.Approvals[0].ID
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("no waiting mail_reply approval")
		return ""
	}
	waitApproval(a, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(sink.rcpts) != 0 {
		t.Fatal("the reply went out without approval")
	}

	a2 := testApp(t, home)
	configure(a2)
	base2, stop2 := start(t, a2)
	defer stop2()
	// An attached client (the Action Center page) and the same approval.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base2+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+a2.Token.Value())
	if ev, err := http.DefaultClient.Do(req); err == nil {
		defer ev.Body.Close()
		go io.Copy(io.Discard, bufio.NewReader(ev.Body))
	}
	apID := waitApproval(a2, base2)
	if code, b := call(a2, base2, "POST", "/api/approvals/"+apID, `{"decision":"approve"}`); code != 200 {
		t.Fatalf("approve: %d %s", code, b)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, b = call(a2, base2, "GET", idPath, "")
		if strings.Contains(b, `"state":"done"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("step not done: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.rcpts) != 1 || sink.rcpts[0][0] != "ann@example.org" || !strings.Contains(sink.data[0], "Tuesday works for me.") {
		t.Fatalf("SMTP got %v", sink.rcpts)
	}
	if n := len(up.ChatRequests()); n != 1 {
		t.Fatalf("planner calls %d, want 1", n)
	}
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }
