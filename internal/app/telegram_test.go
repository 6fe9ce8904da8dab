package app

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

const tgOwner = 4242

func telegramApp(t *testing.T, up *llmtest.Server, tg *tgtest.Server, files string) *App {
	t.Helper()
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Agent.FileRoots = []string{files}
	a.Config.Telegram = config.TelegramConfig{
		Token: tgtest.Token, APIURL: tg.URL, OwnerID: tgOwner, Contacts: []string{"777:chat+read"},
		PollTimeout: config.Duration(time.Second), EditInterval: config.Duration(50 * time.Millisecond), MaxVoiceMB: 20,
		PublicURL: "https://hestia.example",
	}
	if err := a.Config.Validate(); err != nil {
		t.Fatal(err)
	}
	return a
}

// lastWith returns the newest message in chat whose text contains s.
func lastWith(tg *tgtest.Server, chat int64, s string) (tgtest.Sent, bool) {
	msgs := tg.Messages(chat)
	for i := len(msgs) - 1; i >= 0; i-- {
		if strings.Contains(msgs[i].Text, s) {
			return msgs[i], true
		}
	}
	return tgtest.Sent{}, false
}

// A whole turn from Telegram: the model proposes a gated write, the card
// arrives with buttons, the owner presses Approve, the file is written
// once, the reply arrives, and pressing again (a replay) changes nothing.
func TestTelegramTurnWithApproval(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"from telegram"}`)),
		llmtest.Text("Done, ", "I wrote **note.txt**."),
	)
	tg := tgtest.New(t)
	a := telegramApp(t, up, tg, files)
	base, stop := start(t, a)
	defer stop()

	tg.SendText(tgOwner, "please write the note")
	var card tgtest.Sent
	tgtest.WaitFor(t, "the approval card", func() bool {
		var ok bool
		card, ok = lastWith(tg, tgOwner, "Approval needed")
		return ok
	})
	if !strings.Contains(card.Text, "write_file") || len(card.Buttons) < 2 {
		t.Fatalf("card: %+v", card)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran before approval")
	}
	var approve, edit string
	for _, row := range card.Buttons {
		for _, b := range row {
			switch {
			case strings.Contains(b.Text, "Approve"):
				approve = b.CallbackData
			case b.URL != "":
				edit = b.URL
			}
		}
	}
	if approve == "" || !strings.HasPrefix(edit, "https://hestia.example/") {
		t.Fatalf("buttons: %+v", card.Buttons)
	}
	// The PWA sees the same pending approval.
	tok, _ := authtoken.Load(a.Paths.TokenFile())
	req, _ := http.NewRequest("GET", base+"/api/approvals", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Value())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "write_file") {
		t.Fatalf("PWA does not see the approval: %s", body)
	}

	// A forged press from an allowed contact without the approve scope and
	// one naming the card's approval on another message are refused.
	forged := tg.Press(777, 777, card.MessageID, approve)
	wrongMsg := tg.Press(tgOwner, tgOwner, card.MessageID+1000, approve)
	tgtest.WaitFor(t, "the forged presses to be answered", func() bool {
		_, a1 := tg.Answer(forged)
		_, a2 := tg.Answer(wrongMsg)
		return a1 && a2
	})
	if _, err := os.Stat(target); err == nil {
		t.Fatal("a forged press ran the write")
	}

	press := tg.Press(tgOwner, tgOwner, card.MessageID, approve)
	tgtest.WaitFor(t, "the reply", func() bool {
		_, ok := lastWith(tg, tgOwner, "I wrote <b>note.txt</b>")
		return ok
	})
	data, err := os.ReadFile(target)
	if err != nil || string(data) != "from telegram" {
		t.Fatalf("file: %q %v", data, err)
	}
	// The press is answered after the decision is recorded, in parallel
	// with the turn going on: the reply may come first.
	tgtest.WaitFor(t, "the press to be answered", func() bool {
		_, ok := tg.Answer(press)
		return ok
	})
	if n, _ := tg.Answer(press); !strings.Contains(n, "Approved") {
		t.Fatalf("press answered %q", n)
	}
	tgtest.WaitFor(t, "the card's buttons to go", func() bool {
		c, _ := lastWith(tg, tgOwner, "Approval needed")
		return len(c.Buttons) == 0 && strings.Contains(c.Text, "Approved")
	})

	// A replayed press is refused and nothing runs again.
	replay := tg.Press(tgOwner, tgOwner, card.MessageID, approve)
	tgtest.WaitFor(t, "the replay to be answered", func() bool { _, ok := tg.Answer(replay); return ok })
	if n, _ := tg.Answer(replay); !strings.Contains(n, "Already decided") {
		t.Fatalf("replay answered %q", n)
	}
	if got := len(up.ChatRequests()); got != 2 {
		t.Fatalf("model called %d times, want 2", got)
	}

	// The turn is audited like any other, and the Telegram decision too.
	req, _ = http.NewRequest("GET", base+"/api/audit?limit=200", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Value())
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var audit struct {
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
	}
	json.NewDecoder(resp.Body).Decode(&audit)
	resp.Body.Close()
	seen := map[string]int{}
	for _, e := range audit.Events {
		seen[e.Type]++
	}
	if seen["channel.decision"] != 1 || seen["channel.action_refused"] < 3 {
		t.Fatalf("audit types: %v", seen)
	}
}

// Strangers get one polite refusal; nothing reaches the model.
func TestTelegramRefusesStrangers(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t)
	tg := tgtest.New(t)
	a := telegramApp(t, up, tg, t.TempDir())
	_, stop := start(t, a)
	defer stop()
	tg.SendText(999, "hello?")
	tg.SendText(999, "hello again?")
	tg.SendGroupText(tgOwner, -100, "hi from a group")
	tgtest.WaitFor(t, "the updates to be handled", func() bool { return tg.Pending() == 0 && len(tg.Messages(-100)) == 1 })
	if got := tg.Messages(999); len(got) != 1 || !strings.Contains(got[0].Text, "private assistant") {
		t.Fatalf("stranger got %+v", got)
	}
	if len(up.ChatRequests()) != 0 {
		t.Fatal("a refused message reached the model")
	}
}
