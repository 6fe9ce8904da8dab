package agent

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// sentPrefix is a chat request's system message and tool list as the
// server received them, raw bytes.
type sentPrefix struct {
	system json.RawMessage
	tools  []json.RawMessage
}

func prefixOf(t *testing.T, rq llmtest.Request) sentPrefix {
	t.Helper()
	var b struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(rq.Body, &b); err != nil || len(b.Messages) == 0 {
		t.Fatalf("request body %s: %v", rq.Body, err)
	}
	return sentPrefix{system: b.Messages[0], tools: b.Tools}
}

func (p sentPrefix) equal(q sentPrefix) bool {
	return bytes.Equal(p.system, q.system) && slices.EqualFunc(p.tools, q.tools, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
}

// steppingClock advances a minute at every reading, so anything that
// puts the time in the prompt prefix shows up as a changed prefix.
func steppingClock() func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Minute)
		return now
	}
}

// Issue 31 item 2: the system prompt and the tools are the same bytes on
// the next turn and in a new chat, so a server's prompt cache reuses them;
// the time goes with the latest user message only. Failed before: the
// system prompt ended with the current time.
func TestPrefixStableAcrossTurnsAndChats(t *testing.T) {
	t.Parallel()
	for _, lazy := range []bool{false, true} {
		profile := func() (string, string) { return "", "\n\n# About the user (USER.md)\n- Lives in Ghent." }
		h := newHarness(t, harnessOpts{lazyTools: lazy, clock: steppingClock(), profile: profile},
			llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"))
		h.run("hi", Options{})
		h.run("again", Options{})
		other, err := h.chats.Create(t.Context(), "other")
		if err != nil {
			t.Fatal(err)
		}
		if res, err := h.agent.Run(t.Context(), other.ID, "new chat", Options{}); err != nil || !res.OK {
			t.Fatalf("new chat: %+v %v", res, err)
		}
		reqs := h.srv.ChatRequests()
		if len(reqs) != 3 {
			t.Fatalf("lazy=%v: %d requests", lazy, len(reqs))
		}
		first := prefixOf(t, reqs[0])
		if len(first.tools) == 0 {
			t.Fatalf("lazy=%v: no tools offered", lazy)
		}
		for i := 1; i < 3; i++ {
			if p := prefixOf(t, reqs[i]); !p.equal(first) {
				t.Errorf("lazy=%v: request %d's system+tools prefix differs from the first:\n%s\n%s", lazy, i, first.system, p.system)
			}
		}
		// Turn 2: only its own user message carries the time; turn 1's is
		// sent as stored.
		ms := reqs[1].Messages
		if ms[1].Content != "hi" || !strings.HasPrefix(ms[3].Content, "again"+contextMarker+" Current time: 2026-03-01T09:") {
			t.Errorf("lazy=%v: turn 2 sent %+v", lazy, ms)
		}
	}
}

func TestOnDemandFirstRequestOffersCoreAndCatalogue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{lazyTools: true}, llmtest.Text("hi"))
	h.run("hello", Options{})
	rq := h.srv.ChatRequests()[0]
	if !slices.Equal(rq.Tools, []string{"ask_user", "now", "tools_load"}) {
		t.Fatalf("first request offered %v", rq.Tools)
	}
	var b struct {
		Tools []struct {
			Function struct{ Description string }
		}
	}
	json.Unmarshal(rq.Body, &b)
	desc := b.Tools[2].Function.Description
	for _, want := range []string{"\n- files: read, list, find, write and edit the user's files (edit_file, list_dir, read_file, write_file)", "\n- probe: probe"} {
		if !strings.Contains(desc, want) {
			t.Errorf("catalogue lacks %q:\n%s", want, desc)
		}
	}
}

// A loaded group is offered from the next step, at the end of the list
// (earlier definitions keep their bytes), and stays for the chat.
func TestToolsLoadOffersGroupFromNextStepForTheChat(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{lazyTools: true},
		llmtest.ToolCalls(llmtest.Call("l1", "tools_load", `{"group":"files"}`)),
		llmtest.ToolCalls(llmtest.Call("r1", "read_file", `{"path":"notes/hello.txt"}`)),
		llmtest.Text("read it"),
		llmtest.ToolCalls(llmtest.Call("l2", "tools_load", `{"group":"nope"}`)),
		llmtest.Text("again"))
	if res := h.run("read my note", Options{}); !res.OK {
		t.Fatalf("turn 1: %+v", res)
	}
	if res := h.run("and now?", Options{}); !res.OK {
		t.Fatalf("turn 2: %+v", res)
	}
	reqs := h.srv.ChatRequests()
	core := []string{"ask_user", "now", "tools_load"}
	loaded := append(slices.Clone(core), "edit_file", "list_dir", "read_file", "write_file")
	for i, want := range [][]string{core, loaded, loaded, loaded, loaded} {
		if !slices.Equal(reqs[i].Tools, want) {
			t.Errorf("request %d offered %v, want %v", i, reqs[i].Tools, want)
		}
	}
	p0, p1 := prefixOf(t, reqs[0]), prefixOf(t, reqs[1])
	if !p0.equal(sentPrefix{system: p1.system, tools: p1.tools[:len(p0.tools)]}) {
		t.Error("loading a group changed the bytes of the tools offered before it")
	}
	if p3 := prefixOf(t, reqs[3]); !p3.equal(p1) {
		t.Error("the next turn's system+tools differ from the last step's")
	}
	sent := h.toolResultsSent(1)
	if !strings.Contains(sent[0].Content, "Loaded files: edit_file, list_dir, read_file, write_file") {
		t.Errorf("tools_load said %q", sent[0].Content)
	}
	if sent := h.toolResultsSent(2); !strings.Contains(sent[1].Content, "hello from the notes") {
		t.Errorf("read_file said %q", sent[1].Content)
	}
	if sent := h.toolResultsSent(4); !strings.Contains(sent[len(sent)-1].Content, `there is no tool group "nope"; the groups are: files, probe`) {
		t.Errorf("unknown group: %q", sent[len(sent)-1].Content)
	}
}

// A tool named in the catalogue may be called by its exact name before its
// group is loaded: it is offered (the authority's Origin.Tools includes it)
// and decided like any call — a write still needs approval — and its group
// is loaded from the next step. A call whose guessed arguments fail
// validation says the definition is loaded now. A name outside the
// catalogue (unknown, or refused by a deny prefix) is not offered.
func TestCatalogueToolCalledByNameBeforeLoading(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{lazyTools: true, denyPrefixes: []string{"edit_"}},
		llmtest.ToolCalls(llmtest.Call("w1", "write_file", `{"path":"notes/new.txt","contents":"x"}`)),
		llmtest.ToolCalls(llmtest.Call("w2", "write_file", `{"path":"notes/new.txt","content":"x"}`)),
		llmtest.ToolCalls(llmtest.Call("e1", "edit_file", `{}`), llmtest.Call("m1", "mail_send", `{}`)),
		llmtest.Text("done"))
	h.decideInBackground(approval.Decision{Outcome: approval.Approve})
	if res := h.run("write a note", Options{}); !res.OK {
		t.Fatalf("turn: %+v", res)
	}
	reqs := h.srv.ChatRequests()
	var b struct {
		Tools []struct {
			Function struct{ Description string }
		}
	}
	json.Unmarshal(reqs[0].Body, &b)
	if strings.Contains(b.Tools[2].Function.Description, "edit_file") {
		t.Error("the catalogue names a tool a deny prefix refuses")
	}
	if sent := h.toolResultsSent(1); !strings.Contains(sent[0].Content, `write_file's definition was not loaded`) || !strings.Contains(sent[0].Content, `its group "files" is loaded now`) {
		t.Errorf("guessed arguments: %q", sent[0].Content)
	}
	if !slices.Contains(reqs[1].Tools, "write_file") || slices.Contains(reqs[1].Tools, "edit_file") {
		t.Errorf("after the call by name, offered %v", reqs[1].Tools)
	}
	if !h.exists("notes/new.txt") {
		t.Error("the approved write_file did not run")
	}
	var decisions []string
	for _, m := range h.toolMessages() {
		decisions = append(decisions, m.ToolName+":"+m.Tool.Decision)
	}
	if want := []string{"write_file:invalid", "write_file:approved", "edit_file:blocked", "mail_send:blocked"}; !slices.Equal(decisions, want) {
		t.Errorf("decisions %v, want %v", decisions, want)
	}
	if sent := h.toolResultsSent(3); len(sent) != 4 || !strings.Contains(sent[2].Content, "not available in this conversation") || !strings.Contains(sent[3].Content, "not available in this conversation") {
		t.Errorf("unoffered calls: %+v", sent)
	}
}
