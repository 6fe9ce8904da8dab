package whatsapp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/whatsapp/whatsapptest"
)

const anna = "393471234567"

// syncBuffer is a log sink safe for the handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	fake *whatsapptest.Server
	a    *Adapter
	ups  chan channels.Update
	logs *syncBuffer
	hook string
	stop func()
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	fake := whatsapptest.New(t)
	cfg := Config{
		APIURL: fake.URL, APIVersion: whatsapptest.Version, PhoneNumberID: whatsapptest.PhoneNumberID,
		Token: whatsapptest.Token, AppSecret: whatsapptest.AppSecret, VerifyToken: whatsapptest.VerifyToken,
		Now: fake.Now, AckWait: 2 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	logs := &syncBuffer{}
	a, err := New(cfg, nil, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, r := range a.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h := &harness{fake: fake, a: a, ups: make(chan channels.Update, 32), logs: logs, hook: srv.URL + "/channels/whatsapp/webhook"}
	fake.SetTarget(h.hook)
	h.start(t)
	t.Cleanup(func() {
		if strings.Contains(logs.String(), whatsapptest.Token) || strings.Contains(logs.String(), whatsapptest.AppSecret) {
			t.Error("a secret was logged")
		}
	})
	return h
}

// start runs Receive with a handler feeding h.ups.
func (h *harness) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.a.Receive(ctx, func(ctx context.Context, u channels.Update) { h.ups <- u })
	}()
	stopped := false
	h.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Receive returned %v at shutdown", err)
			}
		}
	}
	t.Cleanup(h.stop)
	waitFor(t, "Receive to start", func() bool {
		h.a.mu.Lock()
		defer h.a.mu.Unlock()
		return h.a.recv != nil
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) deliver(t *testing.T, msgs ...whatsapptest.Msg) {
	t.Helper()
	code, err := h.fake.Deliver(msgs...)
	if err != nil || code != http.StatusOK {
		t.Fatalf("delivery answered %d, %v", code, err)
	}
}

func (h *harness) next(t *testing.T) channels.Update {
	t.Helper()
	select {
	case u := <-h.ups:
		return u
	case <-time.After(5 * time.Second):
		t.Fatal("no update reached the handler")
	}
	return channels.Update{}
}

func (h *harness) none(t *testing.T) {
	t.Helper()
	select {
	case u := <-h.ups:
		t.Fatalf("unexpected update %+v", u)
	case <-time.After(50 * time.Millisecond):
	}
}

func (h *harness) lastSent(t *testing.T) whatsapptest.Sent {
	t.Helper()
	s := h.fake.Sent()
	if len(s) == 0 {
		t.Fatal("nothing was sent")
	}
	return s[len(s)-1]
}

func TestReceiveText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	m := h.fake.Text(anna, "Anna", "What's on *tomorrow*?")
	h.deliver(t, m)
	u := h.next(t)
	want := channels.Update{ID: m.ID, Conv: anna, Sender: anna, SenderName: "Anna", Private: true, Text: "What's on *tomorrow*?"}
	if u.ID != want.ID || u.Conv != want.Conv || u.Sender != want.Sender || u.SenderName != want.SenderName || !u.Private || u.Text != want.Text || u.Action != nil || u.Voice != nil {
		t.Errorf("update %+v, want %+v", u, want)
	}
	// Meta redelivers what it thinks failed: the same id comes again and
	// the relay deduplicates by it.
	h.deliver(t, m)
	if again := h.next(t); again.ID != m.ID {
		t.Errorf("redelivery has id %q, want %q", again.ID, m.ID)
	}
}

func TestReceiveBatchInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	m1 := h.fake.Text(anna, "Anna", "one")
	m2 := h.fake.Text("4915112345678", "Bernd", "two")
	h.deliver(t, m1, m2)
	if u := h.next(t); u.Text != "one" || u.SenderName != "Anna" {
		t.Errorf("first %+v", u)
	}
	if u := h.next(t); u.Text != "two" || u.Sender != "4915112345678" || u.Conv != "4915112345678" || u.SenderName != "Bernd" || !u.Private {
		t.Errorf("second %+v", u)
	}
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	code, body, err := h.fake.Handshake("subscribe", whatsapptest.VerifyToken, "1158201444")
	if err != nil || code != 200 || body != "1158201444" {
		t.Errorf("good handshake: %d %q %v", code, body, err)
	}
	for _, tc := range []struct{ mode, token, challenge string }{
		{"subscribe", "wrong", "1"},
		{"subscribe", "", "1"},
		{"subscribe", whatsapptest.VerifyToken + "x", "1"},
		{"unsubscribe", whatsapptest.VerifyToken, "1"},
	} {
		code, body, _ := h.fake.Handshake(tc.mode, tc.token, tc.challenge)
		if code != http.StatusForbidden || body == tc.challenge {
			t.Errorf("handshake %+v: %d %q", tc, code, body)
		}
	}
	// The challenge is echoed: only a plain token, never markup.
	if code, body, _ := h.fake.Handshake("subscribe", whatsapptest.VerifyToken, "<script>alert(1)</script>"); code != 400 || strings.Contains(body, "<script>") {
		t.Errorf("reflected challenge: %d %q", code, body)
	}
}

func TestForgedDeliveriesRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	body := h.fake.Payload(h.fake.Text(anna, "Anna", "transfer everything"))
	other := h.fake.Payload(h.fake.Text(anna, "Anna", "hello"))
	for name, sig := range map[string]string{
		"unsigned":        "",
		"other body":      whatsapptest.Sign(other),
		"sha1":            "sha1=" + strings.TrimPrefix(whatsapptest.Sign(body), "sha256="),
		"bare hex":        strings.TrimPrefix(whatsapptest.Sign(body), "sha256="),
		"not hex":         "sha256=zz" + whatsapptest.Sign(body)[9:],
		"truncated":       whatsapptest.Sign(body)[:40],
		"empty signature": "sha256=",
	} {
		code, err := h.fake.Post(body, sig)
		if err != nil || code != http.StatusUnauthorized {
			t.Errorf("%s: answered %d, %v", name, code, err)
		}
	}
	// Signed with another app's secret.
	code, _ := h.fake.Post(body, "sha256=3f1d5e0a8b6c4d2e9f7a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e")
	if code != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d", code)
	}
	h.none(t)
	if !strings.Contains(h.logs.String(), "signature refused") {
		t.Error("forged deliveries were not logged")
	}
	// The genuine one still goes through.
	if code, _ := h.fake.Post(body, whatsapptest.Sign(body)); code != 200 {
		t.Errorf("genuine delivery: %d", code)
	}
	h.next(t)
}

func TestMalformedDeliveries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for name, tc := range map[string]struct {
		body string
		code int
	}{
		"not json":         {`{"object":`, 400},
		"wrong object":     {`{"object":"page","entry":[]}`, 400},
		"entry a string":   {`{"object":"whatsapp_business_account","entry":"x"}`, 400},
		"messages a map":   {`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"106540352242922"},"messages":{}}}]}]}`, 400},
		"no id":            {`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"106540352242922"},"messages":[{"from":"1","type":"text","text":{"body":"x"}}]}}]}]}`, 200},
		"no text object":   {`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"106540352242922"},"messages":[{"from":"1","id":"w1","type":"text"}]}}]}]}`, 200},
		"no button reply":  {`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"106540352242922"},"messages":[{"from":"1","id":"w2","type":"interactive","interactive":{"type":"button_reply"}}]}}]}]}`, 200},
		"press no context": {`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"106540352242922"},"messages":[{"from":"1","id":"w3","type":"interactive","interactive":{"type":"button_reply","button_reply":{"id":"a:x:approve","title":"Approve"}}}]}}]}]}`, 200},
		"audio no id":      {`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"106540352242922"},"messages":[{"from":"1","id":"w4","type":"audio","audio":{}}]}}]}]}`, 200},
	} {
		code, err := h.fake.Post([]byte(tc.body), whatsapptest.Sign([]byte(tc.body)))
		if err != nil || code != tc.code {
			t.Errorf("%s: answered %d, want %d (%v)", name, code, tc.code, err)
		}
	}
	h.none(t)
	logs := h.logs.String()
	for _, want := range []string{"syntax error", "not whatsapp_business_account", "without a usable id", "empty text message", "names no message"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

func TestSkipsOwnAndForeignMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, f := range []string{"echo.json", "other_number.json", "status_read.json"} {
		body, err := os.ReadFile(filepath.Join("testdata", "deliveries", f))
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := h.fake.Post(body, whatsapptest.Sign(body)); code != 200 {
			t.Errorf("%s: answered %d", f, code)
		}
	}
	// A message whose sender is the business number itself.
	own := h.fake.Text(whatsapptest.DisplayNumber, "Hestia", "echo")
	h.deliver(t, own)
	h.none(t)
}

func TestSendText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.deliver(t, h.fake.Text(anna, "Anna", "hi"))
	h.next(t)
	ref, err := h.a.Send(context.Background(), anna, channels.Outgoing{Key: "k1", Text: "## Plan\n**Buy** milk, *maybe* ~~bread~~, see [list](https://example.org/l) and `code`"})
	if err != nil {
		t.Fatal(err)
	}
	s := h.lastSent(t)
	want := "*Plan*\n*Buy* milk, _maybe_ ~bread~, see list (https://example.org/l) and ```code```"
	if s.ID != ref || s.To != anna || s.Type != "text" || s.Text != want {
		t.Errorf("sent %+v (ref %s), want text %q", s, ref, want)
	}
	if !strings.HasPrefix(ref, "wamid.") {
		t.Errorf("ref %q", ref)
	}
}

func TestSendTruncatesOverLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.deliver(t, h.fake.Text(anna, "Anna", "hi"))
	h.next(t)
	// The relay splits at Limits.MaxText; rendering may still grow a piece
	// (inline code gains backticks), and WhatsApp must never refuse it.
	long := strings.Repeat("`x` ", 1000)
	if utf8.RuneCountInString(long) > h.a.Limits().MaxText {
		long = long[:h.a.Limits().MaxText]
	}
	if _, err := h.a.Send(context.Background(), anna, channels.Outgoing{Text: long + strings.Repeat("é", 5000)}); err != nil {
		t.Fatal(err)
	}
	s := h.lastSent(t)
	if n := utf8.RuneCountInString(s.Text); n != MaxText || !strings.HasSuffix(s.Text, "…") {
		t.Errorf("sent %d characters, ending %q", n, s.Text[len(s.Text)-10:])
	}
}

func TestPromptButtonsRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.deliver(t, h.fake.Text(anna, "Anna", "book the flight"))
	h.next(t)
	ctx := context.Background()
	ref, err := h.a.Send(ctx, anna, channels.Outgoing{Key: "p1", Text: "🔐 **Approval needed**: `book_flight`\nReply `K7QF approve` or `K7QF deny`.",
		Prompt: &channels.Prompt{ApprovalID: "apr_7f3c", Code: "K7QF"}})
	if err != nil {
		t.Fatal(err)
	}
	s := h.lastSent(t)
	if s.ID != ref || s.Type != "interactive" || !strings.Contains(s.Text, "K7QF approve") || len(s.Buttons) != 3 {
		t.Fatalf("prompt sent as %+v", s)
	}
	for _, b := range s.Buttons {
		if !strings.HasPrefix(b.ID, "a:apr_7f3c:") {
			t.Errorf("button %+v does not carry the approval id", b)
		}
	}
	for _, tc := range []struct {
		title string
		verb  channels.Verb
	}{{"✅ Approve", channels.VerbApprove}, {"❌ Deny", channels.VerbDeny}, {"⏱ Allow 10 min", channels.VerbAllow10m}} {
		press, err := h.fake.PressButton(anna, "Anna", ref, tc.title)
		if err != nil {
			t.Fatal(err)
		}
		h.deliver(t, press)
		u := h.next(t)
		if u.Action == nil || u.Action.Ref != ref || u.Action.ApprovalID != "apr_7f3c" || u.Action.Verb != tc.verb || u.ID != press.ID || u.Sender != anna || u.Text != "" {
			t.Fatalf("press %q became %+v / %+v", tc.title, u, u.Action)
		}
		// The acknowledgement quotes the press (WhatsApp has no toast).
		u.Action.Ack(ctx, "Approved **once**.")
		ack := h.lastSent(t)
		if ack.Type != "text" || ack.Context != press.ID || ack.Text != "Approved *once*." {
			t.Errorf("ack sent as %+v", ack)
		}
	}
	// A closed prompt is plain text.
	if _, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "Approved.", Prompt: &channels.Prompt{ApprovalID: "apr_7f3c", Closed: true}}); err != nil {
		t.Fatal(err)
	}
	if s := h.lastSent(t); s.Type != "text" || len(s.Buttons) != 0 {
		t.Errorf("closed prompt sent as %+v", s)
	}
}

func TestQuestionPrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.deliver(t, h.fake.Text(anna, "Anna", "hi"))
	h.next(t)
	ref, err := h.a.Send(context.Background(), anna, channels.Outgoing{Text: "❓ Which colour?", Prompt: &channels.Prompt{ApprovalID: "q9", Code: "ZX12", Question: true}})
	if err != nil {
		t.Fatal(err)
	}
	s := h.lastSent(t)
	if s.ID != ref || len(s.Buttons) != 1 || s.Buttons[0].ID != "a:q9:deny" || s.Buttons[0].Title != "Decline to answer" {
		t.Errorf("question sent as %+v", s)
	}
}

func TestLongPromptTextFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.deliver(t, h.fake.Text(anna, "Anna", "hi"))
	h.next(t)
	ctx := context.Background()
	text := "🔐 Approval needed\n" + strings.Repeat("args ", 400) + "\nReply `K7QF approve`."
	m := channels.Outgoing{Key: "long-1", Text: text, Prompt: &channels.Prompt{ApprovalID: "apr_1", Code: "K7QF"}}
	// The button message fails once after the text went: the retry must
	// not post the text again.
	h.fake.FailNext(0, 131000)
	if _, err := h.a.Send(ctx, anna, m); err == nil {
		t.Fatal("the failed button message was not reported")
	} else if errors.As(err, new(*channels.PermanentError)) {
		t.Fatalf("a transient failure was made permanent: %v", err)
	}
	ref, err := h.a.Send(ctx, anna, m)
	if err != nil {
		t.Fatal(err)
	}
	sent := h.fake.Sent()
	var texts, prompts int
	var last whatsapptest.Sent
	for _, s := range sent {
		switch s.Type {
		case "text":
			texts++
			if !strings.Contains(s.Text, "K7QF approve") {
				t.Errorf("text part %q lost the code", Truncate(s.Text, 60))
			}
		case "interactive":
			prompts++
			last = s
		}
	}
	if texts != 1 || prompts != 1 {
		t.Errorf("%d text and %d button messages, want 1 and 1", texts, prompts)
	}
	if last.ID != ref || last.Text != "Approve request K7QF?" || len(last.Buttons) != 3 {
		t.Errorf("button message %+v (ref %s)", last, ref)
	}
}

func TestWindowClosedWithoutTemplate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	// Never wrote since start (unknown): tried, and the API refuses.
	h.fake.AddUser(anna)
	_, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "hello"})
	var perm *channels.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "24-hour") || !strings.Contains(err.Error(), "template_name") {
		t.Fatalf("unknown window: %v", err)
	}
	if !strings.Contains(err.Error(), "131047") {
		t.Errorf("the API's error is not named: %v", err)
	}
	// Known closed: refused without calling the API.
	h.deliver(t, h.fake.Text(anna, "Anna", "hi"))
	h.next(t)
	if _, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "within"}); err != nil {
		t.Fatal(err)
	}
	h.fake.Advance(25 * time.Hour)
	calls := h.fake.Calls("messages")
	_, err = h.a.Send(ctx, anna, channels.Outgoing{Text: "a day later"})
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "24-hour") {
		t.Fatalf("closed window: %v", err)
	}
	if h.fake.Calls("messages") != calls {
		t.Error("a message known to be outside the window was sent to the API")
	}
	// Writing again reopens it.
	h.deliver(t, h.fake.Text(anna, "Anna", "back"))
	h.next(t)
	if _, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "welcome back"}); err != nil {
		t.Fatal(err)
	}
}

func TestWindowTemplateWithText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.TemplateName, c.TemplateLanguage, c.TemplateBodyParam = "hestia_reply", "it", true
	})
	h.fake.AddTemplate("hestia_reply", "it", 1)
	h.fake.AddUser(anna)
	ref, err := h.a.Send(context.Background(), anna, channels.Outgoing{Text: "**Done.**\n\n\tThe flight is booked.     Reply `K7QF approve`.",
		Prompt: &channels.Prompt{ApprovalID: "a1", Code: "K7QF"}})
	if err != nil {
		t.Fatal(err)
	}
	s := h.lastSent(t)
	if s.ID != ref || s.Type != "template" || s.Template == nil || s.Template.Name != "hestia_reply" || s.Template.Language != "it" {
		t.Fatalf("sent %+v", s)
	}
	if p := s.Template.Params; len(p) != 1 || p[0] != "*Done.* · The flight is booked. Reply ```K7QF approve```." {
		t.Errorf("template parameter %q", p)
	}
}

func TestWindowTemplateNudgeOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.TemplateName = "hestia_nudge" })
	h.fake.AddTemplate("hestia_nudge", "en_US", 0)
	h.deliver(t, h.fake.Text(anna, "Anna", "hi"))
	h.next(t)
	h.fake.Advance(30 * time.Hour)
	ctx := context.Background()
	if _, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	if s := h.lastSent(t); s.Type != "template" || len(s.Template.Params) != 0 {
		t.Fatalf("sent %+v", s)
	}
	_, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "second"})
	if !errors.As(err, new(*channels.PermanentError)) || !strings.Contains(err.Error(), "already asked them") {
		t.Fatalf("second send outside the window: %v", err)
	}
	h.deliver(t, h.fake.Text(anna, "Anna", "what is it?"))
	h.next(t)
	if _, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "second"}); err != nil {
		t.Fatal(err)
	}
	if s := h.lastSent(t); s.Type != "text" || s.Text != "second" {
		t.Errorf("after the answer: %+v", s)
	}
}

func TestWindowUnknownAfterRestartIsTried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	// Anna wrote before a restart: the fake (Meta) knows, the new adapter
	// does not, and tries.
	h.fake.Text(anna, "Anna", "sent while Hestia was down")
	if _, err := h.a.Send(context.Background(), anna, channels.Outgoing{Text: "hello again"}); err != nil {
		t.Fatal(err)
	}
}

func TestWindowClosedReportedLater(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.TemplateName = "hestia_nudge" })
	h.fake.AddTemplate("hestia_nudge", "en_US", 0)
	h.fake.AddUser(anna)
	h.fake.AsyncWindowErrors(true)
	ctx := context.Background()
	// Accepted at first, failed afterwards by a status webhook.
	if _, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failure status", func() bool { return h.a.peers.state(anna, h.fake.Now()) == windowClosed })
	if !strings.Contains(h.logs.String(), "failed after it was accepted") {
		t.Error("the failed status was not logged")
	}
	if _, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "again"}); err != nil {
		t.Fatal(err)
	}
	if s := h.lastSent(t); s.Type != "template" {
		t.Errorf("after the failure: %+v", s)
	}
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code       int
		retryAfter int
		wantAfter  time.Duration
		permanent  string
		transient  bool
	}{
		{code: 130429, wantAfter: 2 * time.Second},
		{code: 130429, retryAfter: 30, wantAfter: 30 * time.Second},
		{code: 131056, wantAfter: 6 * time.Second},
		{code: 80007, wantAfter: time.Minute},
		{code: 131026, permanent: "undeliverable"},
		{code: 190, permanent: "access token expired"},
		{code: 100, permanent: "Invalid parameter"},
		{code: 131000, transient: true},
		{code: 131016, transient: true},
	} {
		h := newHarness(t, nil)
		h.deliver(t, h.fake.Text(anna, "Anna", "hi"))
		h.next(t)
		h.fake.SetRetryAfter(tc.retryAfter)
		h.fake.FailNext(tc.code)
		_, err := h.a.Send(context.Background(), anna, channels.Outgoing{Text: "x"})
		var ra *channels.RetryAfterError
		var perm *channels.PermanentError
		switch {
		case err == nil:
			t.Errorf("%d: no error", tc.code)
		case tc.wantAfter != 0:
			if !errors.As(err, &ra) || ra.After != tc.wantAfter {
				t.Errorf("%d: %v, want retry after %v", tc.code, err, tc.wantAfter)
			}
		case tc.permanent != "":
			if !errors.As(err, &perm) || !strings.Contains(err.Error(), tc.permanent) {
				t.Errorf("%d: %v, want permanent %q", tc.code, err, tc.permanent)
			}
		case tc.transient:
			if errors.As(err, &perm) || errors.As(err, &ra) {
				t.Errorf("%d: %v, want a plain (retried) error", tc.code, err)
			}
		}
		if err != nil && !strings.Contains(err.Error(), "sending a message") {
			t.Errorf("%d: %q does not say what failed", tc.code, err)
		}
	}
}

func TestExpiredTokenAndBadRecipient(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	_, err := h.a.Send(ctx, "not a number", channels.Outgoing{Text: "x"})
	if !errors.As(err, new(*channels.PermanentError)) {
		t.Errorf("bad recipient: %v", err)
	}
	if _, err := h.a.Send(ctx, anna, channels.Outgoing{Text: "  "}); !errors.As(err, new(*channels.PermanentError)) {
		t.Errorf("empty text: %v", err)
	}
	h.fake.ExpireToken()
	_, err = h.a.Send(ctx, anna, channels.Outgoing{Text: "x"})
	if !errors.As(err, new(*channels.PermanentError)) || !strings.Contains(err.Error(), "access token expired") {
		t.Errorf("expired token: %v", err)
	}
	if strings.Contains(err.Error(), whatsapptest.Token) {
		t.Error("the token is in the error")
	}
}

func TestEditUnsupported(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if err := h.a.Edit(context.Background(), anna, "wamid.x", channels.Outgoing{Text: "y"}); !errors.Is(err, channels.ErrUnsupported) {
		t.Errorf("Edit: %v", err)
	}
	l := h.a.Limits()
	if l.Edit || l.Idempotent || !l.Buttons || l.MaxText <= 0 || l.MaxText > MaxText {
		t.Errorf("limits %+v", l)
	}
}

func TestReactions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.deliver(t, h.fake.Text(anna, "Anna", "hi"))
	h.next(t)
	ref, err := h.a.Send(context.Background(), anna, channels.Outgoing{Text: "Approve?", Prompt: &channels.Prompt{ApprovalID: "a2", Code: "QQ11"}})
	if err != nil {
		t.Fatal(err)
	}
	h.deliver(t, h.fake.React(anna, "Anna", ref, "👍🏽"))
	u := h.next(t)
	if u.Action == nil || u.Action.Ref != ref || u.Action.Verb != channels.VerbApprove || u.Action.ApprovalID != "" {
		t.Errorf("👍🏽 became %+v", u.Action)
	}
	u.Action.Ack(context.Background(), "Approved.")
	if s := h.lastSent(t); s.Context != ref {
		t.Errorf("reaction ack quotes %q, want the prompt", s.Context)
	}
	h.deliver(t, h.fake.React(anna, "Anna", ref, "👎"))
	if u := h.next(t); u.Action == nil || u.Action.Verb != channels.VerbDeny {
		t.Errorf("👎 became %+v", u.Action)
	}
	h.deliver(t, h.fake.React(anna, "Anna", ref, "❤️"), h.fake.React(anna, "Anna", ref, ""))
	h.none(t)
	// 👍 on an ordinary reply is a thank-you, not an approval.
	plain, err := h.a.Send(context.Background(), anna, channels.Outgoing{Text: "Booked."})
	if err != nil {
		t.Fatal(err)
	}
	h.deliver(t, h.fake.React(anna, "Anna", plain, "👍"))
	h.none(t)
}

func TestVoiceNote(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxVoiceBytes = 1000 })
	audio := append([]byte("OggS"), bytes.Repeat([]byte{1}, 200)...)
	id := h.fake.AddMedia(audio, "audio/ogg; codecs=opus")
	h.deliver(t, h.fake.Voice(anna, "Anna", id))
	u := h.next(t)
	if u.Voice == nil || u.Text != "" || u.Voice.Mime != "audio/ogg; codecs=opus" || u.Voice.Filename != "voice.ogg" {
		t.Fatalf("voice update %+v", u)
	}
	if h.fake.Calls("media") != 0 {
		t.Error("the voice note was fetched before the relay asked")
	}
	data, err := u.Voice.Fetch(context.Background())
	if err != nil || !bytes.Equal(data, audio) {
		t.Fatalf("fetch: %d bytes, %v", len(data), err)
	}
	big := h.fake.AddMedia(bytes.Repeat([]byte{2}, 2000), "audio/ogg")
	h.deliver(t, h.fake.Voice(anna, "Anna", big))
	if _, err := h.next(t).Voice.Fetch(context.Background()); !errors.Is(err, ErrTooLarge) {
		t.Errorf("large note: %v", err)
	}
	bad := h.fake.AddMedia(audio, "audio/ogg")
	h.fake.CorruptMedia(bad)
	h.deliver(t, h.fake.Voice(anna, "Anna", bad))
	if _, err := h.next(t).Voice.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("corrupt note: %v", err)
	}
}

func TestMediaURLMustBeMeta(t *testing.T) {
	t.Parallel()
	c := &api{origin: mustURL(t, "https://graph.facebook.com")}
	for raw, want := range map[string]bool{
		"https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1": true,
		"https://graph.facebook.com/v23.0/x":                               true,
		"https://mmg.whatsapp.net/v/t62":                                   true,
		"http://lookaside.fbsbx.com/x":                                     false,
		"https://evil.example/fbsbx.com":                                   false,
		"https://fbsbx.com.evil.example/x":                                 false,
		"https://user@lookaside.fbsbx.com/x":                               false,
	} {
		if got := c.mediaHostAllowed(mustURL(t, raw)); got != want {
			t.Errorf("%s: %v, want %v", raw, got, want)
		}
	}
}

func TestFilesBecomeAttachments(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF receipt")
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	img := h.fake.AddMedia(jpeg, "image/jpeg")
	doc := h.fake.AddMedia(pdf, "application/pdf")
	vid := h.fake.AddMedia([]byte("\x00\x00\x00\x18ftypmp42"), "video/mp4")

	h.deliver(t, h.fake.Image(anna, "Anna", img, "the receipt"))
	u := h.next(t)
	if u.Text != "the receipt" || len(u.Attachments) != 1 || u.Attachments[0].Mime != "image/jpeg" || u.Attachments[0].Name != "" {
		t.Fatalf("image became %+v", u)
	}
	if h.fake.Calls("media") != 0 {
		t.Error("the image was fetched before the relay asked")
	}
	if data, err := u.Attachments[0].Fetch(ctx, 1<<20); err != nil || !bytes.Equal(data, jpeg) {
		t.Errorf("fetch: %q %v", data, err)
	}
	if _, err := u.Attachments[0].Fetch(ctx, 4); !errors.Is(err, channels.ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}

	h.deliver(t, h.fake.Document(anna, "Anna", doc, "Q3 report.pdf", ""))
	u = h.next(t)
	if u.Text != "" || len(u.Attachments) != 1 || u.Attachments[0].Name != "Q3 report.pdf" {
		t.Fatalf("document became %+v", u)
	}
	if data, err := u.Attachments[0].Fetch(ctx, 1<<20); err != nil || !bytes.Equal(data, pdf) {
		t.Errorf("fetch: %q %v", data, err)
	}
	h.deliver(t, h.fake.Video(anna, "Anna", vid, ""))
	if u := h.next(t); len(u.Attachments) != 1 || u.Attachments[0].Mime != "video/mp4" {
		t.Errorf("video became %+v", u)
	}
	// A file whose bytes were swapped on the way is refused.
	h.fake.CorruptMedia(doc)
	h.deliver(t, h.fake.Document(anna, "Anna", doc, "again.pdf", ""))
	if _, err := h.next(t).Attachments[0].Fetch(ctx, 1<<20); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("corrupt file: %v", err)
	}
	// A sticker is no file: the turn says what it was.
	h.deliver(t, h.fake.Sticker(anna, "Anna"))
	if u := h.next(t); u.Text != "[sticker attachment: not supported on WhatsApp]" || len(u.Attachments) != 0 {
		t.Errorf("sticker became %+v", u)
	}
}

func TestSendVoice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.deliver(t, h.fake.Text(anna, "Anna", "read it to me"))
	h.next(t)
	ctx := context.Background()
	audio := []byte("OggS-pretend-opus")
	if err := h.a.SendVoice(ctx, anna, audio, "audio/ogg; codecs=opus"); err != nil {
		t.Fatal(err)
	}
	s := h.lastSent(t)
	data, mime, ok := h.fake.Media(s.AudioID)
	if s.Type != "audio" || !ok || !bytes.Equal(data, audio) || mime != "audio/ogg; codecs=opus" {
		t.Errorf("sent %+v, media %q %v", s, mime, ok)
	}
	if err := h.a.SendVoice(ctx, anna, audio, "audio/wav"); !errors.As(err, new(*channels.PermanentError)) {
		t.Errorf("wav: %v", err)
	}
	h.fake.Advance(25 * time.Hour)
	if err := h.a.SendVoice(ctx, anna, audio, "audio/ogg"); !errors.As(err, new(*channels.PermanentError)) || !strings.Contains(err.Error(), "24-hour") {
		t.Errorf("outside the window: %v", err)
	}
}

func TestNotReceiving(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.stop()
	// Meta keeps deliveries answered 503 and retries them later.
	code, err := h.fake.Deliver(h.fake.Text(anna, "Anna", "anyone?"))
	if err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("while stopped: %d %v", code, err)
	}
	// Statuses alone need no handler.
	body := h.fake.StatusPayload("wamid.x", anna, "delivered", 0)
	if code, _ := h.fake.Post(body, whatsapptest.Sign(body)); code != 200 {
		t.Errorf("status while stopped: %d", code)
	}
}

func TestSlowHandlerAnsweredInTime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.AckWait = 50 * time.Millisecond })
	h.stop()
	release := make(chan struct{})
	got := make(chan channels.Update, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.a.Receive(ctx, func(ctx context.Context, u channels.Update) {
			<-release
			got <- u
		})
	}()
	waitFor(t, "Receive", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.recv != nil })
	start := time.Now()
	m := h.fake.Text(anna, "Anna", "slow")
	if code, _ := h.fake.Deliver(m); code != 200 {
		t.Errorf("answered %d", code)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("answered after %v", d)
	}
	close(release)
	if u := <-got; u.ID != m.ID {
		t.Errorf("handled %+v", u)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

func TestStaleMessageDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	m := h.fake.Text(anna, "Anna", "old")
	h.fake.Advance(8 * 24 * time.Hour)
	h.deliver(t, m)
	h.none(t)
}

func TestHandlerPanicContained(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.stop()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	calls := make(chan string, 4)
	go func() {
		done <- h.a.Receive(ctx, func(ctx context.Context, u channels.Update) {
			calls <- u.Text
			if u.Text == "boom" {
				panic("relay bug")
			}
		})
	}()
	waitFor(t, "Receive", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.recv != nil })
	h.deliver(t, h.fake.Text(anna, "Anna", "boom"), h.fake.Text(anna, "Anna", "after"))
	if a, b := <-calls, <-calls; a != "boom" || b != "after" {
		t.Errorf("handled %q, %q", a, b)
	}
	cancel()
	<-done
	if !strings.Contains(h.logs.String(), "panicked") {
		t.Error("the panic was not logged")
	}
}

func TestNewRequiresSecrets(t *testing.T) {
	t.Parallel()
	_, err := New(Config{PhoneNumberID: "1", Token: "t"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "app secret") || !strings.Contains(err.Error(), "verify token") {
		t.Errorf("New without secrets: %v", err)
	}
	a, err := New(Config{PhoneNumberID: "1", Token: "t", AppSecret: "s", VerifyToken: "v"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "whatsapp" || a.Kind() != "whatsapp" || a.Routes()[1].Pattern != "POST /channels/whatsapp/webhook" {
		t.Errorf("defaults: %s %s %v", a.Name(), a.Kind(), a.Routes())
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
