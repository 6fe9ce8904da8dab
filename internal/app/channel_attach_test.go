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
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/channeltest"
	"github.com/hestia-dev/hestia/internal/docs/docgen"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// The owner sends a PDF on a channel: the relay saves it in the inbox and
// names it in the turn, the model reads it with document_read by that
// path (the inbox is readable to the read tools though it lies in
// Hestia's data folder and outside the file roots), and the reply
// arrives. A write into the inbox is refused before any card.
func TestChannelAttachmentReadByTheAssistant(t *testing.T) {
	t.Parallel()
	a := testApp(t, t.TempDir())
	roots := t.TempDir()
	a.Config.Agent.FileRoots = []string{roots}
	pdf := docgen.PDF([]string{"Quarterly report", "Revenue rose 12 percent in the third quarter."})
	saved := filepath.Join(a.Paths.InboxDir(), "fake", time.Now().Format("2006-01-02"), "001-Q3-report.pdf")
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("r1", "document_read", `{"path":`+strconv.Quote(saved)+`}`)),
		llmtest.Text("The report says revenue rose **12%**."),
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":`+strconv.Quote(filepath.Join(filepath.Dir(saved), "run.sh"))+`,"content":"echo hi"}`)),
		llmtest.Text("I could not write there."),
	)
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	p := channeltest.New()
	p.Lim.MaxText = 4000
	a.extraChannels = []channelBuilder{{key: "channels.fake", label: "Fake", enabled: true, owners: []string{"U1"},
		build: func(context.Context) (channels.Platform, error) { return p, nil }}}
	_, stop := start(t, a)
	defer stop()

	u := channels.Update{ID: "1", Conv: "D1", Sender: "U1", SenderName: "Owner", Private: true, Text: "what does this say?",
		Attachments: []channels.Attachment{channeltest.File("Q3 report.pdf", "application/pdf", pdf, nil)}}
	p.Deliver(u)
	channeltest.WaitFor(t, "the reply", func() bool { _, ok := p.FindText("D1", "revenue rose"); return ok })

	if b, err := os.ReadFile(saved); err != nil || string(b) != string(pdf) {
		t.Fatalf("saved file: %d bytes, %v", len(b), err)
	}
	reqs := up.ChatRequests()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Body), "what does this say?\\n\\n[attached: "+saved+" — application/pdf, ") {
		t.Errorf("the turn does not name the file: %s", reqs[0].Body)
	}
	if !strings.Contains(string(reqs[1].Body), "Revenue rose 12 percent") {
		t.Errorf("document_read did not hand the model the PDF's text: %s", reqs[1].Body)
	}

	// A second message asks for a file written into the inbox: the path
	// policy refuses it before any prompt, and nothing is written.
	p.Deliver(channels.Update{ID: "2", Conv: "D1", Sender: "U1", Private: true, Text: "save a script next to it"})
	channeltest.WaitFor(t, "the second reply", func() bool { _, ok := p.FindText("D1", "could not write there"); return ok })
	if _, ok := p.FindText("D1", "Approval needed"); ok {
		t.Error("a write into the inbox was put to the owner")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(saved), "run.sh")); err == nil {
		t.Error("a file was written into the inbox")
	}

	entries, err := a.core.audit.List(context.Background(), audit.Filter{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	var attached, read, refused bool
	for _, e := range entries {
		s := string(e.Data)
		switch {
		case e.Type == "channel.attachment":
			attached = strings.Contains(s, `"path":`+strconv.Quote(saved)) && strings.Contains(s, `"mime":"application/pdf"`)
		case e.Type == "tool.run" && strings.Contains(s, `"call_id":"r1"`):
			read = strings.Contains(s, `"status":"ok"`) && strings.Contains(s, `"origin":{"kind":"channel","label":"Fake"}`)
		case e.Type == "policy.decision" && strings.Contains(s, `"write_file"`):
			refused = strings.Contains(s, `read-only`) || strings.Contains(s, "kept as they arrived")
		}
	}
	if !attached || !read || !refused {
		t.Errorf("audit: channel.attachment %v, document_read ran %v, inbox write refused %v", attached, read, refused)
	}
	// The doctor reports what the inbox holds.
	if st, msg := a.inboxCheck().Run(context.Background()); st != doctor.OK || !strings.HasPrefix(msg, "1 file(s), ") || !strings.Contains(msg, a.Paths.InboxDir()) {
		t.Errorf("inbox check: %v %q", st, msg)
	}
}
