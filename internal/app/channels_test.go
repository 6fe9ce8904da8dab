package app

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/channeltest"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/notify"
)

// A whole turn from a channel on the shared relay, through the real agent
// and authority: the model proposes a gated write, the prompt arrives with
// its request code, the owner answers "CODE approve", the file is written
// once and the reply arrives; the audit trail names the channel origin.
// (A trusted contact's tainted turns are rows of the adversarial matrix.)
func TestChannelTurnWithApprovalByCode(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	target := filepath.Join(files, "note.txt")
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(target)+`,"content":"from a channel"}`)),
		llmtest.Text("Done, I wrote **note.txt**."),
	)
	p := channeltest.New()
	p.Lim.Buttons = false
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Agent.FileRoots = []string{files}
	a.extraChannels = []channelBuilder{{key: "channels.fake", label: "Fake", enabled: true, owners: []string{"U1"}, contacts: []string{"U2:chat+read"},
		build: func(context.Context) (channels.Platform, error) { return p, nil }}}
	_, stop := start(t, a)
	defer stop()

	p.Deliver(channels.Update{ID: "1", Conv: "D1", Sender: "U1", SenderName: "Owner", Private: true, Text: "please write the note"})
	var card channeltest.Msg
	channeltest.WaitFor(t, "the approval prompt", func() bool {
		var ok bool
		card, ok = p.FindText("D1", "Approval needed")
		return ok
	})
	if !strings.Contains(card.Text, "write_file") || card.Prompt == nil || card.Prompt.Code == "" {
		t.Fatalf("prompt: %+v", card)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the write ran before approval")
	}
	p.Deliver(channels.Update{ID: "2", Conv: "D1", Sender: "U1", Private: true, Text: card.Prompt.Code + " approve"})
	channeltest.WaitFor(t, "the reply", func() bool { _, ok := p.FindText("D1", "I wrote"); return ok })
	if b, err := os.ReadFile(target); err != nil || string(b) != "from a channel" {
		t.Fatalf("file = %q, %v", b, err)
	}
	if m, _ := p.FindText("D1", "Approval needed"); !strings.Contains(m.Text, "Approved") {
		t.Errorf("the prompt was not closed with the outcome: %q", m.Text)
	}
	entries, err := a.core.audit.List(context.Background(), audit.Filter{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var ran, decided bool
	for _, e := range entries {
		s := string(e.Data)
		switch e.Type {
		case "tool.run":
			ran = ran || (strings.Contains(s, `"origin":{"kind":"channel","label":"Fake"}`) && strings.Contains(s, `"status":"ok"`))
		case "channel.decision":
			decided = true
		}
	}
	if !ran || !decided {
		t.Errorf("audit: tool.run with the channel origin %v, channel.decision %v", ran, decided)
	}
}

// A job's result with deliver = ["signal"] arrives in the owner's
// conversation on that channel; one for a channel that is not configured
// is logged, and the others still go.
func TestResultDeliveredToAChannel(t *testing.T) {
	t.Parallel()
	up := llmtest.New(t, llmtest.Text("Hello!"))
	p := channeltest.New()
	p.ID = "signal"
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.extraChannels = []channelBuilder{{key: "channels.signal", label: "Signal", enabled: true, owners: []string{"U1"},
		build: func(context.Context) (channels.Platform, error) { return p, nil }}}
	_, stop := start(t, a)
	defer stop()
	p.Deliver(channels.Update{ID: "1", Conv: "D1", Sender: "U1", Private: true, Text: "hi"})
	channeltest.WaitFor(t, "the reply", func() bool { _, ok := p.FindText("D1", "Hello!"); return ok })
	a.deliverResult(context.Background(), []string{"slack", "signal"}, notify.Notification{Key: "job-run:7", Title: "Flight", Body: "Your flight is on time."})
	channeltest.WaitFor(t, "the delivered result", func() bool { _, ok := p.FindText("D1", "**Flight**"); return ok })
}
