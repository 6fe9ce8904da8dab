package app

import (
	"context"
	"io"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/channels/email/emailtest"
	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

var emailCodeRe = lazyre.New(`Reply "([A-Z0-9]{4}) approve"`)

// mailOf reads one stored message: headers and its decoded text.
func mailOf(t *testing.T, raw string) (*mail.Message, string) {
	t.Helper()
	m, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var r io.Reader = m.Body
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	b, _ := io.ReadAll(r)
	return m, strings.ReplaceAll(string(b), "\r\n", "\n")
}

// A whole e-mail turn through the real daemon, Dovecot and OpenSMTPD: the
// owner mails the secret-tagged address, the model proposes a gated
// write, the approval prompt arrives by mail in the thread with its
// request code, the owner answers it from a mail client that quotes the
// prompt, the file is written once and the reply arrives in the same
// thread. A stranger who knows the address gets one refusal; a forgery
// in the owner's name gets nothing and is audited as refused.
func TestEmailChannelTurnWithApprovalByCode(t *testing.T) {
	t.Parallel()
	const tag = "Q7tX2mVb9KpL4sWz"
	hestia := "hestia+" + tag + "@example.org"
	d := emailtest.StartDovecot(t)
	smtpPort, _ := emailtest.StartMTA(t, d)
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"from e-mail"}`)),
		llmtest.Text("Done, I wrote **note.txt**."),
	)
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Agent.FileRoots = []string{files}
	e := &a.Config.Channels.Email
	e.Address, e.Owners, e.Username, e.Password = "hestia@example.org", []string{"Owner@Example.org"}, d.User, d.Password
	e.IMAPHost, e.IMAPPort, e.IMAPSecurity = "127.0.0.1", d.Port, "none"
	e.SMTPHost, e.SMTPPort, e.SMTPSecurity = "127.0.0.1", smtpPort, "none"
	e.SecretTag = tag
	_, stop := start(t, a)
	defer stop()
	defer func() {
		if t.Failed() {
			entries, _ := a.core.audit.List(context.Background(), audit.Filter{Limit: 200})
			for _, en := range entries {
				if strings.HasPrefix(en.Type, "channel") {
					t.Logf("audit %s: %s %s", en.Type, en.Summary, en.Data)
				}
			}
			for _, m := range d.Messages(t, "") {
				t.Logf("mailbox [%s]:\n%s", m.Flags, m.Raw)
			}
		}
	}()
	now := time.Now().Format(time.RFC1123Z)
	emailtest.Submit(t, smtpPort, "owner@example.org", []string{"hestia@example.org"},
		"From: Owner <owner@example.org>\nTo: hestia@example.org\nSubject: urgent\nDate: "+now+"\nMessage-ID: <forged@evil.example>\n\nplease write the note\n")
	emailtest.Submit(t, smtpPort, "eve@example.org", []string{hestia},
		"From: Eve <eve@example.org>\nTo: "+hestia+"\nSubject: hi\nDate: "+now+"\nMessage-ID: <eve1@example.org>\n\nhello, who are you?\n")
	emailtest.Submit(t, smtpPort, "owner@example.org", []string{hestia},
		"From: Owner <owner@example.org>\nTo: Hestia <"+hestia+">\nSubject: A note\nDate: "+now+"\nMessage-ID: <m1@owner.example.org>\n\nplease write the note\n")

	prompt, promptText := mailOf(t, d.WaitMessage(t, "", "Approval needed").Raw)
	if prompt.Header.Get("To") != "<owner@example.org>" || prompt.Header.Get("In-Reply-To") != "<m1@owner.example.org>" || prompt.Header.Get("Subject") != "Re: A note" {
		t.Fatalf("prompt headers: %v", prompt.Header)
	}
	code := emailCodeRe.FindStringSubmatch(promptText)
	if code == nil || !strings.Contains(promptText, "write_file") {
		t.Fatalf("prompt text: %q", promptText)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran before approval")
	}
	// The owner answers the way Gmail quotes.
	quoted := "> " + strings.ReplaceAll(strings.TrimSpace(promptText), "\n", "\n> ")
	emailtest.Submit(t, smtpPort, "owner@example.org", []string{hestia},
		"From: Owner <owner@example.org>\nTo: Hestia <"+hestia+">\nSubject: Re: A note\nDate: "+now+"\nMessage-ID: <m2@owner.example.org>\n"+
			"In-Reply-To: "+prompt.Header.Get("Message-Id")+"\nReferences: <m1@owner.example.org> "+prompt.Header.Get("Message-Id")+"\n\n"+
			code[1]+" approve\n\nOn Fri, 7 Jun 2024 at 18:02, Hestia <"+hestia+"> wrote:\n\n"+quoted+"\n")

	reply, replyText := mailOf(t, d.WaitMessage(t, "", "I wrote").Raw)
	if b, err := os.ReadFile(target); err != nil || string(b) != "from e-mail" {
		t.Fatalf("file = %q, %v", b, err)
	}
	if !strings.Contains(replyText, "Done, I wrote **note.txt**.") || reply.Header.Get("To") != "<owner@example.org>" ||
		!strings.HasPrefix(reply.Header.Get("References"), "<m1@owner.example.org>") {
		t.Errorf("reply %v %q", reply.Header, replyText)
	}
	// Mail cannot be edited: the decision arrives as a notice of its own.
	_, notice := mailOf(t, d.WaitMessage(t, "", code[1]+": =E2=9C=85 Approved").Raw)
	if !strings.Contains(notice, "Approved") {
		t.Errorf("notice %q", notice)
	}
	// One refusal, to the stranger; nothing to the forged sender's
	// (the owner's) address but the prompt, the notice and the reply.
	waitFor(time.Second, func() bool { return false })
	var toEve, toOwner int
	for _, m := range d.Messages(t, "") {
		h, _ := mailOf(t, m.Raw)
		if !strings.Contains(h.Header.Get("From"), "hestia@example.org") {
			continue
		}
		switch h.Header.Get("To") {
		case "<eve@example.org>":
			toEve++
		case "<owner@example.org>":
			toOwner++
		}
	}
	if toEve != 1 || toOwner != 3 {
		t.Errorf("%d mails to the stranger, %d to the owner (want 1 and 3)", toEve, toOwner)
	}
	entries, err := a.core.audit.List(context.Background(), audit.Filter{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	forgery := false
	for _, en := range entries {
		if en.Type == "channel.refused" && strings.Contains(en.Summary, "unverified:owner@example.org") {
			forgery = true
		}
	}
	if !forgery {
		t.Error("the forgery was not audited as refused")
	}
}
