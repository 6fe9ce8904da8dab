package agent

import (
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/policy"
)

// A temporary mode would allow the write, but the turn read a file (an
// untrusted source) first: the write is gated, the card names the file, and
// the denial leaves the disk unchanged. The next turn still sees that file
// in its history, so it stays tainted.
func TestTaintGatesWritesAfterUntrustedRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(llmtest.Call("r1", "read_file", `{"path":"notes/hello.txt"}`)),
		llmtest.ToolCalls(writeCall("w1", "notes/pwned.md", "X")),
		llmtest.Text("done"),
		llmtest.ToolCalls(writeCall("w2", "notes/again.md", "Y")),
		llmtest.Text("done"),
	)
	if _, err := h.policy.Modes().Set(h.chatID, policy.ModeAllowChat, 0); err != nil {
		t.Fatal(err)
	}
	go func() {
		req := h.decideNext(approval.Decision{Outcome: approval.Deny})
		if len(req.TaintedBy) != 1 || req.TaintedBy[0].Tool != "read_file" || !strings.Contains(req.TaintedBy[0].Detail, "hello.txt") {
			t.Errorf("card TaintedBy = %+v", req.TaintedBy)
		}
		if !strings.Contains(req.Reason, "untrusted content from read_file") {
			t.Errorf("card reason = %q", req.Reason)
		}
	}()
	if res := h.run("summarise my note", Options{}); !res.OK {
		t.Fatalf("res = %+v", res)
	}
	if h.exists("notes/pwned.md") {
		t.Fatal("a tainted turn wrote without a human decision")
	}

	go func() {
		req := h.decideNext(approval.Decision{Outcome: approval.Approve})
		if len(req.TaintedBy) == 0 || req.TaintedBy[0].Detail != "earlier in this chat" {
			t.Errorf("second turn card TaintedBy = %+v", req.TaintedBy)
		}
	}()
	if res := h.run("now write again", Options{}); !res.OK {
		t.Fatalf("res = %+v", res)
	}
	if h.read("notes/again.md") != "Y" {
		t.Fatal("an approved write did not run")
	}
	tm := h.toolMessages()
	if tm[1].Tool.Decision != DecDenied || tm[2].Tool.Decision != DecApproved {
		t.Fatalf("decisions %q %q", tm[1].Tool.Decision, tm[2].Tool.Decision)
	}
}

// Without an untrusted read the same mode allows the write at once.
func TestNoTaintWithoutUntrustedRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{}, llmtest.ToolCalls(writeCall("w1", "notes/ok.md", "A")), llmtest.Text("ok"))
	if _, err := h.policy.Modes().Set(h.chatID, policy.ModeAllowChat, 0); err != nil {
		t.Fatal(err)
	}
	if res := h.run("write", Options{}); !res.OK || h.read("notes/ok.md") != "A" {
		t.Fatalf("res = %+v", res)
	}
	if p := h.broker.Pending(h.chatID); len(p) != 0 {
		t.Fatalf("unexpected approval %+v", p)
	}
}
