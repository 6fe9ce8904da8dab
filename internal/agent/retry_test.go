package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

func TestRetryRerunsFailedTurnWithoutDuplicatingTheMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.Fail(500, `{"error":{"message":"boom"}}`),
		llmtest.Turn{Text: []string{"Second time lucky."}},
	)
	if res := h.run("please answer", Options{}); res.OK || res.Error == nil || !res.Error.Retryable {
		t.Fatalf("first turn: %+v", res)
	}
	res := h.run("", Options{Retry: true})
	if !res.OK || res.Text != "Second time lucky." {
		t.Fatalf("retry: %+v", res)
	}
	msgs, err := h.chats.Messages(context.Background(), h.chatID, 100)
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, m := range msgs {
		if m.Role == chat.RoleUser {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("transcript has %d user messages, want 1: %+v", users, msgs)
	}
	// The model saw the original question on the retry.
	reqs := h.srv.ChatRequests()
	last := reqs[len(reqs)-1].Messages
	if got := last[len(last)-1]; got.Role != "user" || userText(got.Content) != "please answer" {
		t.Fatalf("retry sent %+v", got)
	}
	// Once the turn has its reply there is nothing left to retry.
	if _, err := h.agent.Submit(context.Background(), h.chatID, "", Options{Retry: true}); !errors.Is(err, ErrNothingToRetry) {
		t.Fatalf("second retry: %v", err)
	}
}

func TestRetryHTTPValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	mux := http.NewServeMux()
	h.agent.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(body string) (int, string) {
		resp, err := http.Post(srv.URL+"/api/chats/"+h.chatID+"/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	if code, body := post(`{"retry":true,"text":"again"}`); code != 400 || !strings.Contains(body, "leave text empty") {
		t.Errorf("retry with text: %d %s", code, body)
	}
	// An empty chat has no unfinished turn.
	if code, body := post(`{"retry":true}`); code != 409 || !strings.Contains(body, CodeNothingToRetry) {
		t.Errorf("retry on empty chat: %d %s", code, body)
	}
}
