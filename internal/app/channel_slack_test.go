package app

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/channels/slack/slacktest"
	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// requestCodeRe finds the request code at the end of an approval prompt.
var requestCodeRe = lazyre.New(`Reply "([A-Z0-9]{4}) approve"`)

// slackText is everything a message shows: its text and its sections.
func slackText(m slacktest.Message) string {
	var b strings.Builder
	b.WriteString(m.Text)
	for _, bl := range m.Blocks {
		if bl.Text != nil {
			b.WriteString("\n" + bl.Text.Text)
		}
	}
	return b.String()
}

// slackButtons counts a message's buttons.
func slackButtons(m slacktest.Message) int {
	n := 0
	for _, bl := range m.Blocks {
		n += len(bl.Elements)
	}
	return n
}

// slackFind returns the bot's message in channel whose text contains s
// and that is not one of skip (by ts).
func slackFind(srv *slacktest.Server, channel, s string, skip ...string) (slacktest.Message, bool) {
	for _, m := range srv.Messages(channel) {
		if m.User == slacktest.BotUserID && strings.Contains(slackText(m), s) && !contains(skip, m.TS) {
			return m, true
		}
	}
	return slacktest.Message{}, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Two whole Slack turns through the real daemon and a fake Slack over
// Socket Mode. First: the owner writes in a DM, the model proposes a
// gated write, the prompt arrives with Block Kit buttons, the owner
// presses Approve (answered with an ephemeral notice), the file is
// written once, the prompt loses its buttons and shows the outcome, and
// the reply streams in (posted, then edited into the final text). Second:
// another gated write, approved by answering "CODE approve" in the DM.
// A stranger gets one refusal.
func TestSlackChannelTurnsWithApprovalByButtonAndByCode(t *testing.T) {
	t.Parallel()
	const owner, ownerDM, stranger, strangerDM = "U0OWNER", "D0OWNER", "U0EVE", "D0EVE"
	files := t.TempDir()
	first, second := filepath.Join(files, "note.txt"), filepath.Join(files, "second.txt")
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(first)+`,"content":"from slack"}`)),
		llmtest.Turn{Text: []string{"Done, ", "I wrote ", "**note.txt**."}, ChunkDelay: 700 * time.Millisecond},
		llmtest.ToolCalls(llmtest.Call("w2", "write_file", `{"path":`+strconv.Quote(second)+`,"content":"by code"}`)),
		llmtest.Text("Also wrote **second.txt**."),
	)
	srv := slacktest.New(t)
	srv.AddConversation(ownerDM, slacktest.IM, true)
	srv.AddConversation(strangerDM, slacktest.IM, true)
	srv.AddUser(owner, "Me")
	srv.AddUser(stranger, "Eve")
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Agent.FileRoots = []string{files}
	s := &a.Config.Channels.Slack
	s.Token, s.AppToken, s.APIURL, s.Owners = slacktest.BotToken, slacktest.AppToken, srv.APIURL, []string{owner}
	_, stop := start(t, a)
	defer stop()
	slackEventually(t, "the Socket Mode connection", srv.Connected)
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
					t.Logf("in %s by %s: %q buttons %d edits %d", ch, m.User, slackText(m), slackButtons(m), m.Edits)
				}
			}
		}
	}()

	srv.Say(strangerDM, stranger, "hello, who are you?", "")
	srv.Say(ownerDM, owner, "please write the note", "")
	var card slacktest.Message
	slackEventually(t, "the approval prompt", func() bool {
		var ok bool
		card, ok = slackFind(srv, ownerDM, "Approval needed")
		return ok && slackButtons(card) == 3
	})
	if !strings.Contains(slackText(card), "write_file") || !requestCodeRe.MatchString(slackText(card)) {
		t.Fatalf("prompt %q", slackText(card))
	}
	if _, err := os.Stat(first); err == nil {
		t.Fatal("the write ran before approval")
	}
	srv.Press(ownerDM, card.TS, owner, "approve")
	slackEventually(t, "the file", func() bool { _, err := os.Stat(first); return err == nil })
	if b, err := os.ReadFile(first); err != nil || string(b) != "from slack" {
		t.Fatalf("file = %q, %v", b, err)
	}
	slackEventually(t, "the press acknowledged", func() bool {
		for _, e := range srv.Ephemerals() {
			if e.User == owner && e.Channel == ownerDM {
				return true
			}
		}
		return false
	})
	// The final reply goes through the outbox and replaces the streamed
	// message: wait for it to be confirmed, not just for the text, which
	// the stream shows before the turn ends.
	finals := func(n int) func() bool {
		return func() bool {
			items, err := a.channelsDB.Outbox(context.Background(), "slack", 200)
			k := 0
			for _, it := range items {
				if strings.Contains(it.Key, ":final:") && it.State == "sent" {
					k++
				}
			}
			return err == nil && k >= n
		}
	}
	slackEventually(t, "the final reply", finals(1))
	reply, ok := slackFind(srv, ownerDM, "Done, I wrote *note.txt*.")
	if !ok {
		t.Fatal("no reply")
	}
	if reply.Edits == 0 {
		t.Errorf("the reply was posted whole (%q), not streamed and edited", reply.Text)
	}
	if _, dup := slackFind(srv, ownerDM, "I wrote", reply.TS); dup {
		t.Error("the reply was posted beside the streamed message instead of replacing it")
	}
	slackEventually(t, "the prompt to show the outcome", func() bool {
		m, ok := srv.Message(ownerDM, card.TS)
		return ok && strings.Contains(slackText(m), "Approved") && slackButtons(m) == 0
	})

	// Second turn: approved by the request code.
	srv.Say(ownerDM, owner, "and a second one", "")
	var card2 slacktest.Message
	slackEventually(t, "the second prompt", func() bool {
		var ok bool
		card2, ok = slackFind(srv, ownerDM, "Approval needed", card.TS)
		return ok && strings.Contains(slackText(card2), "second.txt")
	})
	code := requestCodeRe.FindStringSubmatch(slackText(card2))
	if code == nil {
		t.Fatalf("no request code in %q", slackText(card2))
	}
	if _, err := os.Stat(second); err == nil {
		t.Fatal("the second write ran before approval")
	}
	srv.Say(ownerDM, owner, code[1]+" approve", "")
	slackEventually(t, "the second reply", finals(2))
	if _, ok := slackFind(srv, ownerDM, "Also wrote *second.txt*."); !ok {
		t.Fatal("no second reply")
	}
	if b, err := os.ReadFile(second); err != nil || string(b) != "by code" {
		t.Fatalf("second file = %q, %v", b, err)
	}
	slackEventually(t, "the second prompt to show the outcome", func() bool {
		m, ok := srv.Message(ownerDM, card2.TS)
		return ok && strings.Contains(slackText(m), "Approved") && slackButtons(m) == 0
	})

	entries, err := a.core.audit.List(context.Background(), audit.Filter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, e := range entries {
		if e.Type == audit.TypeToolRun && e.Tool == "write_file" && strings.Contains(string(e.Data), `"status":"ok"`) {
			writes++
		}
	}
	if writes != 2 {
		t.Errorf("%d writes ran, want one per approval", writes)
	}
	if n := len(srv.Messages(strangerDM)); n != 2 { // the stranger's own message and one refusal
		t.Errorf("%d messages in the stranger's DM, want theirs and one refusal", n)
	}
}

func slackEventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
