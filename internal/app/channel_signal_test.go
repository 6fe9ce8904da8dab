package app

import (
	"context"
	"github.com/hestia-dev/hestia/internal/audit"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels/signal/signaltest"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// A whole Signal turn through the real daemon and a fake signal-cli: the
// owner writes, the model proposes a gated write, the prompt arrives with
// its request code and the reaction hint, the owner reacts 👍 to it, the
// file is written once, the prompt is edited to show the outcome and the
// reply arrives with its Markdown as Signal text styles. A stranger gets
// one refusal.
func TestSignalChannelTurnWithApprovalByReaction(t *testing.T) {
	t.Parallel()
	owner := signaltest.Person{Number: "+393471234567", UUID: "7ccae375-cd51-4c82-8b1e-7be3280aa485", Name: "Me"}
	stranger := signaltest.Person{Number: "+4915112345678", UUID: "5d2b0c6e-1111-4a4a-9b9b-000000000001", Name: "Eve"}
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"from signal"}`)),
		llmtest.Text("Done, I wrote **note.txt**."),
	)
	srv := signaltest.New(t)
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Agent.FileRoots = []string{files}
	s := &a.Config.Channels.Signal
	s.Account, s.Socket, s.Owners = signaltest.Account, srv.Socket, []string{owner.Number}
	_, stop := start(t, a)
	defer stop()
	srv.WaitSubscribed(1)

	srv.Text(stranger, "hello, who are you?")
	srv.Text(owner, "please write the note")
	var card signaltest.Message
	srv.Wait("the approval prompt", func() bool {
		for _, m := range srv.Sent() {
			if strings.Contains(m.Text, "Approval needed") {
				card = m
				return true
			}
		}
		return false
	})
	if card.Recipient != owner.Number || !strings.Contains(card.Text, "write_file") || !strings.Contains(card.Text, " approve\"") || !strings.Contains(card.Text, "react 👍") {
		t.Fatalf("prompt: %+v", card)
	}
	if !slices.ContainsFunc(card.Styles, func(s string) bool { return strings.HasSuffix(s, ":BOLD") }) {
		t.Errorf("the prompt's bold title has no style: %q", card.Styles)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran before approval")
	}
	// The relay learns the prompt's timestamp when the send returns, a
	// moment after the fake shows the message: a reaction before that
	// finds no prompt (and is audited), so react again as a person would.
	for i := 0; ; i++ {
		srv.React(owner, card.Timestamp, "👍", "", false)
		if waitFor(2*time.Second, func() bool { _, err := os.Stat(target); return err == nil }) || i == 3 {
			break
		}
	}
	defer func() {
		if t.Failed() {
			entries, _ := a.core.audit.List(context.Background(), audit.Filter{Limit: 200})
			for _, e := range entries {
				if strings.HasPrefix(e.Type, "channel") {
					t.Logf("audit %s: %s %s", e.Type, e.Summary, e.Data)
				}
			}
			for _, m := range srv.Sent() {
				text, styles := m.Current()
				t.Logf("sent to %s%s at %d: %q %q (%d edits)", m.Recipient, m.GroupID, m.Timestamp, text, styles, len(m.Edits))
			}
		}
	}()
	srv.Wait("the reply", func() bool {
		for _, m := range srv.Sent() {
			if text, _ := m.Current(); m.Recipient == owner.Number && strings.Contains(text, "I wrote") {
				return true
			}
		}
		return false
	})
	if b, err := os.ReadFile(target); err != nil || string(b) != "from signal" {
		t.Fatalf("file = %q, %v", b, err)
	}
	srv.Wait("the prompt to show the outcome", func() bool {
		for _, m := range srv.Sent() {
			if text, _ := m.Current(); m.Timestamp == card.Timestamp {
				return strings.Contains(text, "Approved") && !strings.Contains(text, "react 👍")
			}
		}
		return false
	})
	var prompts, refusals int
	for _, m := range srv.Sent() {
		text, styles := m.Current()
		switch {
		case strings.Contains(m.Text, "Approval needed"):
			prompts++
		case m.Recipient == stranger.Number:
			refusals++
		case strings.Contains(text, "I wrote"):
			if !strings.Contains(text, "note.txt") || strings.Contains(text, "**") || !slices.Contains(styles, strconv.Itoa(strings.Index(text, "note.txt"))+":8:BOLD") {
				t.Errorf("reply %q styles %q", text, styles)
			}
		}
	}
	if prompts != 1 || refusals != 1 {
		t.Errorf("%d prompts, %d refusals to the stranger", prompts, refusals)
	}
}

// waitFor polls ok until it holds or d passes.
func waitFor(d time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
