package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels/matrix/matrixtest"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// A whole Matrix turn through the real daemon and the fake homeserver:
// the owner writes in a DM, the model proposes a gated write, the prompt
// arrives with the bot's 👍/👎 under it, the owner reacts 👍, the file is
// written once, the prompt is edited to show the outcome and the reply
// arrives. A stranger's invite is declined on the way.
func TestMatrixChannelTurnWithApprovalByReaction(t *testing.T) {
	t.Parallel()
	const owner, stranger = "@me:fake.test", "@eve:evil.test"
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"from matrix"}`)),
		llmtest.Text("Done, I wrote **note.txt**."),
	)
	srv := matrixtest.New(t)
	dm := srv.CreateRoom(matrixtest.RoomOptions{Creator: owner, JoinBot: true, Names: map[string]string{owner: "Me"}})
	home := t.TempDir()
	a := testApp(t, home)
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Agent.FileRoots = []string{files}
	m := &a.Config.Channels.Matrix
	m.Homeserver, m.Token, m.Owners = srv.URL, matrixtest.Token, []string{owner}
	_, stop := start(t, a)
	defer stop()
	matrixWait(t, "the adapter to sync", func() bool { return len(srv.Syncs()) >= 2 })

	evil := srv.CreateRoom(matrixtest.RoomOptions{Creator: stranger})
	srv.Invite(evil, stranger)
	srv.Say(dm, owner, "please write the note")
	var card matrixtest.Message
	matrixWait(t, "the approval prompt", func() bool {
		for _, msg := range srv.BotMessages(dm) {
			if strings.Contains(msg.Body, "Approval needed") {
				card = msg
				return len(srv.Reactions(dm, msg.ID)) == 2
			}
		}
		return false
	})
	if !strings.Contains(card.Body, "write_file") || !strings.Contains(card.Body, "approve\"") || !strings.Contains(card.HTML, "<strong>Approval needed</strong>") {
		t.Fatalf("prompt: %+v", card)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran before approval")
	}
	srv.React(dm, owner, card.ID, "👍")
	matrixWait(t, "the reply", func() bool {
		for _, msg := range srv.BotMessages(dm) {
			if strings.Contains(msg.Body, "I wrote") {
				return true
			}
		}
		return false
	})
	if b, err := os.ReadFile(target); err != nil || string(b) != "from matrix" {
		t.Fatalf("file = %q, %v", b, err)
	}
	matrixWait(t, "the prompt to show the outcome", func() bool {
		for _, msg := range srv.BotMessages(dm) {
			if msg.ID == card.ID {
				return strings.Contains(msg.Body, "Approved") && !strings.Contains(msg.Body, "react with")
			}
		}
		return false
	})
	prompts := 0
	for _, msg := range srv.BotMessages(dm) {
		if strings.Contains(msg.Body, "Approval needed") {
			prompts++
		}
	}
	if prompts != 1 {
		t.Errorf("%d prompts", prompts)
	}
	if got := srv.Membership(evil, matrixtest.Bot); got != "leave" {
		t.Errorf("a stranger's invite: membership %q", got)
	}
	if _, err := os.Stat(filepath.Join(home, "channels", "matrix-sync.json")); err != nil {
		t.Errorf("sync position not saved: %v", err)
	}
}

func matrixWait(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
