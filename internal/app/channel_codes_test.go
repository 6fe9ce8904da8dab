package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels/discord/discordtest"
	"github.com/hestia-dev/hestia/internal/channels/matrix/matrixtest"
	"github.com/hestia-dev/hestia/internal/channels/signal/signaltest"
	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
	"github.com/hestia-dev/hestia/internal/channels/whatsapp/whatsapptest"
	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// codeInText finds a prompt's request code, whether the platform shows
// the quotes as they are or as HTML entities (Telegram).
var codeInText = lazyre.New(`(?:"|&#34;|&quot;)([A-Z0-9]{4}) approve(?:"|&#34;|&quot;)`)

// codeApp is a daemon whose model asks to write target once, then says
// it did.
func codeApp(t *testing.T, target string) *App {
	t.Helper()
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"by code"}`)),
		llmtest.Text("Done, I wrote **note.txt**."),
	)
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Agent.FileRoots = []string{filepath.Dir(target)}
	return a
}

// approveByCode drives the request-code path of one channel: the owner
// asks (send), the prompt shows a code (prompt returns the text of the
// newest prompt), nothing is written before the owner answers
// "CODE approve" (send again), then the file is written once and the
// reply arrives (replied).
func approveByCode(t *testing.T, target string, send func(text string), prompt func() (string, bool), replied func() bool) {
	t.Helper()
	send("please write the note")
	var text string
	codeEventually(t, "the approval prompt", func() bool {
		var ok bool
		text, ok = prompt()
		return ok
	})
	m := codeInText.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no request code in the prompt %q", text)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran before approval")
	}
	send(m[1] + " approve")
	codeEventually(t, "the reply", replied)
	if b, err := os.ReadFile(target); err != nil || string(b) != "by code" {
		t.Fatalf("file = %q, %v", b, err)
	}
}

func codeEventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The request-code fallback through the real daemon, on every platform
// that also has buttons or reactions: the code works there too (Slack and
// e-mail have theirs in their own tests).
func TestApprovalByCodeOnEveryChannel(t *testing.T) {
	t.Parallel()
	t.Run("telegram", func(t *testing.T) {
		t.Parallel()
		target := filepath.Join(t.TempDir(), "note.txt")
		tg := tgtest.New(t)
		a := codeApp(t, target)
		a.Config.Telegram.Token, a.Config.Telegram.APIURL, a.Config.Telegram.OwnerID = tgtest.Token, tg.URL, tgOwner
		_, stop := start(t, a)
		defer stop()
		approveByCode(t, target, func(text string) { tg.SendText(tgOwner, text) },
			func() (string, bool) {
				m, ok := lastWith(tg, tgOwner, "Approval needed")
				return m.Text, ok
			},
			func() bool { _, ok := lastWith(tg, tgOwner, "I wrote"); return ok })
	})
	t.Run("discord", func(t *testing.T) {
		t.Parallel()
		target := filepath.Join(t.TempDir(), "note.txt")
		owner := discordtest.User{ID: "2100000000000000001", Name: "Me"}
		srv := discordtest.New(t)
		a := codeApp(t, target)
		d := &a.Config.Channels.Discord
		d.Token, d.APIURL, d.Owners = discordtest.Token, srv.API, []string{owner.ID}
		_, stop := start(t, a)
		defer stop()
		codeEventually(t, "the gateway session", srv.Ready)
		dm := srv.DMChannel(owner)
		find := func(s string) (string, bool) {
			for _, m := range srv.Messages(dm) {
				if m.Author.ID == discordtest.BotID && strings.Contains(m.Content, s) {
					return m.Content, true
				}
			}
			return "", false
		}
		approveByCode(t, target, func(text string) { srv.DM(owner, text) },
			func() (string, bool) { return find("Approval needed") },
			func() bool { _, ok := find("I wrote"); return ok })
	})
	t.Run("matrix", func(t *testing.T) {
		t.Parallel()
		const owner = "@me:fake.test"
		target := filepath.Join(t.TempDir(), "note.txt")
		srv := matrixtest.New(t)
		room := srv.CreateRoom(matrixtest.RoomOptions{Creator: owner, JoinBot: true, Names: map[string]string{owner: "Me"}})
		a := codeApp(t, target)
		m := &a.Config.Channels.Matrix
		m.Homeserver, m.Token, m.Owners = srv.URL, matrixtest.Token, []string{owner}
		_, stop := start(t, a)
		defer stop()
		codeEventually(t, "the adapter to sync", func() bool { return len(srv.Syncs()) >= 2 })
		find := func(s string) (string, bool) {
			for _, msg := range srv.BotMessages(room) {
				if strings.Contains(msg.Body, s) {
					return msg.Body, true
				}
			}
			return "", false
		}
		approveByCode(t, target, func(text string) { srv.Say(room, owner, text) },
			func() (string, bool) { return find("Approval needed") },
			func() bool { _, ok := find("I wrote"); return ok })
	})
	t.Run("signal", func(t *testing.T) {
		t.Parallel()
		owner := signaltest.Person{Number: "+393471234567", UUID: "7ccae375-cd51-4c82-8b1e-7be3280aa485", Name: "Me"}
		target := filepath.Join(t.TempDir(), "note.txt")
		srv := signaltest.New(t)
		a := codeApp(t, target)
		s := &a.Config.Channels.Signal
		s.Account, s.Socket, s.Owners = signaltest.Account, srv.Socket, []string{owner.Number}
		_, stop := start(t, a)
		defer stop()
		srv.WaitSubscribed(1)
		find := func(s string) (string, bool) {
			for _, m := range srv.Sent() {
				if text, _ := m.Current(); strings.Contains(text, s) {
					return text, true
				}
			}
			return "", false
		}
		approveByCode(t, target, func(text string) { srv.Text(owner, text) },
			func() (string, bool) { return find("Approval needed") },
			func() bool { _, ok := find("I wrote"); return ok })
	})
	t.Run("whatsapp", func(t *testing.T) {
		t.Parallel()
		const owner = "393471234567"
		target := filepath.Join(t.TempDir(), "note.txt")
		fake := whatsapptest.New(t)
		fake.AddUser(owner)
		a := codeApp(t, target)
		w := &a.Config.Channels.WhatsApp
		w.APIURL, w.APIVersion, w.PhoneNumberID = fake.URL, whatsapptest.Version, whatsapptest.PhoneNumberID
		w.Token, w.AppSecret, w.VerifyToken, w.Owners = whatsapptest.Token, whatsapptest.AppSecret, whatsapptest.VerifyToken, []string{owner}
		base, stop := start(t, a)
		defer stop()
		fake.SetTarget(base + "/channels/whatsapp/webhook")
		find := func(s string) (string, bool) {
			for _, m := range fake.Sent() {
				if m.To == owner && strings.Contains(m.Text, s) {
					return m.Text, true
				}
			}
			return "", false
		}
		approveByCode(t, target, func(text string) {
			// The route answers 503 until the channel receives; Meta
			// delivers again, as this does.
			msg := fake.Text(owner, "Me", text)
			codeEventually(t, "the webhook to take a delivery", func() bool {
				code, err := fake.Deliver(msg)
				return err == nil && code == 200
			})
		},
			func() (string, bool) { return find("Approval needed") },
			func() bool { _, ok := find("I wrote"); return ok })
	})
}
