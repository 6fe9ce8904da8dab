package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/channels/discord/discordtest"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

func TestDiscordChannelBuilder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "discord.token")
	if err := os.WriteFile(tokenFile, []byte("MTEw.Gx.abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Channels.Discord.TokenFile, cfg.Channels.Discord.Owners = tokenFile, []string{"80351110224678912"}
	a := &App{Config: cfg, Log: slog.New(slog.DiscardHandler), Now: time.Now}
	b := a.discordChannel()
	if !b.enabled || b.key != "channels.discord" || b.label != "Discord" || len(b.owners) != 1 {
		t.Fatalf("builder %+v", b)
	}
	p, err := b.build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind() != "discord" || p.Name() != "discord" || !p.Limits().Buttons {
		t.Fatalf("platform %T %s", p, p.Kind())
	}
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.build(context.Background()); err == nil || !strings.Contains(err.Error(), "channels.discord.token_file") {
		t.Errorf("readable token file: %v", err)
	}
}

// A whole Discord turn through the real daemon and a fake Discord: the
// owner writes in a DM, the model proposes a gated write, the prompt
// arrives with Approve/Deny/Allow buttons, the owner presses Approve, the
// press is answered with an ephemeral notice, the file is written once,
// the prompt loses its buttons and shows the outcome, and the reply
// arrives. A stranger gets one refusal; a guild chatter is not answered.
func TestDiscordChannelTurnWithApprovalByButton(t *testing.T) {
	t.Parallel()
	owner := discordtest.User{ID: "2100000000000000001", Name: "Me"}
	stranger := discordtest.User{ID: "2100000000000000002", Name: "Eve"}
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"from discord"}`)),
		llmtest.Text("Done, I wrote **note.txt**."),
	)
	srv := discordtest.New(t)
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Agent.FileRoots = []string{files}
	d := &a.Config.Channels.Discord
	d.Token, d.APIURL, d.Owners = discordtest.Token, srv.API, []string{owner.ID}
	_, stop := start(t, a)
	defer stop()
	discordEventually(t, "the gateway session", srv.Ready)

	ownerDM, strangerDM := srv.DMChannel(owner), srv.DMChannel(stranger)
	defer func() {
		if t.Failed() {
			entries, _ := a.core.audit.List(context.Background(), audit.Filter{Limit: 200})
			for _, e := range entries {
				if strings.HasPrefix(e.Type, "channel") {
					t.Logf("audit %s: %s %s", e.Type, e.Summary, e.Data)
				}
			}
			for _, ch := range []string{ownerDM, strangerDM} {
				for _, m := range srv.Messages(ch) {
					t.Logf("in %s: %q buttons %+v edits %d", ch, m.Content, m.Buttons, m.Edits)
				}
			}
		}
	}()
	srv.DM(stranger, "hello, who are you?")
	srv.DM(owner, "please write the note")
	var card discordtest.Message
	discordEventually(t, "the approval prompt", func() bool {
		for _, m := range srv.Messages(ownerDM) {
			if strings.Contains(m.Content, "Approval needed") && len(m.Buttons) == 3 {
				card = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(card.Content, "write_file") || card.Buttons[0].Label != "Approve" || !strings.HasPrefix(card.Buttons[0].CustomID, "a:") {
		t.Fatalf("prompt %+v", card)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran before approval")
	}
	iid := srv.Press(owner, ownerDM+"/"+card.ID, card.Buttons[0].CustomID)
	discordEventually(t, "the file", func() bool { _, err := os.Stat(target); return err == nil })
	if b, err := os.ReadFile(target); err != nil || string(b) != "from discord" {
		t.Fatalf("file = %q, %v", b, err)
	}
	discordEventually(t, "the press answered", func() bool { return srv.Interaction(iid).Response != nil })
	if r := srv.Interaction(iid).Response; r.At > 3*time.Second {
		t.Errorf("press answered after %s", r.At)
	}
	discordEventually(t, "the reply", func() bool {
		for _, m := range srv.Messages(ownerDM) {
			if strings.Contains(m.Content, "I wrote **note.txt**") {
				return true
			}
		}
		return false
	})
	discordEventually(t, "the prompt to show the outcome", func() bool {
		for _, m := range srv.Messages(ownerDM) {
			if m.ID == card.ID {
				return strings.Contains(m.Content, "Approved") && len(m.Buttons) == 0
			}
		}
		return false
	})
	if n := len(srv.Messages(strangerDM)); n != 1 {
		t.Errorf("%d messages to the stranger, want one refusal", n)
	}
}

func discordEventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
