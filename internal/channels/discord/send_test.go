package discord

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/discord/discordtest"
)

// sender is an adapter against a fake without a gateway session: sends
// need none.
func sender(t *testing.T) (*discordtest.Server, *Adapter, string) {
	t.Helper()
	srv := discordtest.New(t)
	a, _ := newAdapter(t, srv, discordtest.Token)
	return srv, a, srv.DMChannel(owner)
}

func TestSendRendersAndReturnsRef(t *testing.T) {
	t.Parallel()
	srv, a, ch := sender(t)
	ref, err := a.Send(context.Background(), ch, channels.Outgoing{Key: "r1", Text: "#### Plan\n| a | b |\n|---|---|\n| 1 | 2 |\n@everyone look: x || y"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages(ch)
	if len(msgs) != 1 || ref != ch+"/"+msgs[0].ID {
		t.Fatalf("ref %q, messages %+v", ref, msgs)
	}
	want := "**Plan**\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n```\n@everyone look: x \\|\\| y"
	if msgs[0].Content != want {
		t.Errorf("content %q, want %q", msgs[0].Content, want)
	}
	if msgs[0].Flags != flagSuppressEmbeds || len(msgs[0].Buttons) != 0 || msgs[0].Nonce != "r1" {
		t.Errorf("message %+v", msgs[0])
	}
}

func TestSendIsIdempotentByNonce(t *testing.T) {
	t.Parallel()
	srv, a, ch := sender(t)
	long := "outbox:discord:" + strings.Repeat("x", 40) // over Discord's 25
	var refs []string
	for range 2 {
		ref, err := a.Send(context.Background(), ch, channels.Outgoing{Key: long, Text: "once"})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	other, err := a.Send(context.Background(), ch, channels.Outgoing{Key: long + "2", Text: "twice"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages(ch)
	if refs[0] != refs[1] || other == refs[0] || len(msgs) != 2 {
		t.Fatalf("refs %v %s, %d messages", refs, other, len(msgs))
	}
	if n := msgs[0].Nonce; len(n) > 25 || n == msgs[1].Nonce {
		t.Errorf("nonces %q %q", n, msgs[1].Nonce)
	}
	if nonce("short-key") != "short-key" || nonce(long) != msgs[0].Nonce {
		t.Error("nonce is not stable")
	}
}

func TestSendNeverTooLong(t *testing.T) {
	t.Parallel()
	srv, a, ch := sender(t)
	text := "```go\n" + strings.Repeat("fmt.Println(\"é\")\n", 300) + "```"
	if _, err := a.Send(context.Background(), ch, channels.Outgoing{Key: "l1", Text: text}); err != nil {
		t.Fatal(err)
	}
	c := srv.Messages(ch)[0].Content
	if n := utf8.RuneCountInString(c); n > MaxMessage {
		t.Fatalf("%d characters", n)
	}
	if !strings.HasSuffix(c, "…\n```") {
		t.Errorf("a cut code block is not closed: %q", c[len(c)-20:])
	}
	// Empty text still posts something Discord accepts.
	if _, err := a.Send(context.Background(), ch, channels.Outgoing{Key: "l2", Text: "  "}); err != nil {
		t.Fatal(err)
	}
	if a.Limits().MaxText >= MaxMessage || !a.Limits().Idempotent || !a.Limits().Buttons || !a.Limits().Edit {
		t.Errorf("limits %+v", a.Limits())
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	srv, a, ch := sender(t)
	ctx := context.Background()
	ref, err := a.Send(ctx, ch, channels.Outgoing{Key: "e1", Text: "thinking…"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, ch, ref, channels.Outgoing{Key: "e1", Text: "done: **42**", Prompt: &channels.Prompt{ApprovalID: "a_e"}}); err != nil {
		t.Fatal(err)
	}
	m := srv.Messages(ch)[0]
	if m.Content != "done: **42**" || m.Edits != 1 || len(m.Buttons) != 3 {
		t.Fatalf("edited %+v", m)
	}
	var pe *channels.PermanentError
	for name, err := range map[string]error{
		"bad ref":         a.Edit(ctx, ch, "nonsense", channels.Outgoing{Text: "x"}),
		"path in ref":     a.Edit(ctx, ch, ch+"/../../users/@me", channels.Outgoing{Text: "x"}),
		"other channel":   a.Edit(ctx, "999", ref, channels.Outgoing{Text: "x"}),
		"unknown":         a.Edit(ctx, ch, ch+"/1234", channels.Outgoing{Text: "x"}),
		"bad conv":        func() error { _, err := a.Send(ctx, "general", channels.Outgoing{Text: "x"}); return err }(),
		"unknown chan":    func() error { _, err := a.Send(ctx, "77", channels.Outgoing{Text: "x"}); return err }(),
		"not a snowflake": func() error { _, err := a.Send(ctx, ch+"/x", channels.Outgoing{Text: "x"}); return err }(),
	} {
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v is not permanent", name, err)
		}
	}
	err = a.Edit(ctx, ch, ch+"/1234", channels.Outgoing{Text: "x"})
	if !strings.Contains(err.Error(), "10008") || !strings.Contains(err.Error(), "Unknown Message") || !strings.Contains(err.Error(), "edit message 1234") {
		t.Errorf("unknown message error %q", err)
	}
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	srv, a, ch := sender(t)
	ctx := context.Background()
	srv.Throttle("POST /channels/{cid}/messages", 0.25)
	_, err := a.Send(ctx, ch, channels.Outgoing{Key: "t1", Text: "x"})
	var ra *channels.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 250*time.Millisecond || !strings.Contains(err.Error(), "429") {
		t.Fatalf("error %v", err)
	}
	// The next send waits the bucket out instead of collecting another 429.
	began := time.Now()
	if _, err := a.Send(ctx, ch, channels.Outgoing{Key: "t1", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(began); waited < 150*time.Millisecond {
		t.Errorf("waited only %s", waited)
	}
	// A bucket the answer says is empty is waited out too.
	srv.Drain("POST /channels/{cid}/messages", 0.2)
	if _, err := a.Send(ctx, ch, channels.Outgoing{Key: "t2", Text: "y"}); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if _, err := a.Send(ctx, ch, channels.Outgoing{Key: "t3", Text: "z"}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(began); waited < 100*time.Millisecond {
		t.Errorf("empty bucket: waited only %s", waited)
	}
	// A long wait is handed to the relay rather than blocking.
	srv.Throttle("PATCH /channels/{cid}/messages/{mid}", 30)
	ref := ch + "/" + srv.Messages(ch)[0].ID
	err = a.Edit(ctx, ch, ref, channels.Outgoing{Text: "a"})
	if !errors.As(err, &ra) || ra.After != 30*time.Second {
		t.Fatalf("edit error %v", err)
	}
	began = time.Now()
	err = a.Edit(ctx, ch, ref, channels.Outgoing{Text: "a"})
	if !errors.As(err, &ra) || time.Since(began) > time.Second || srv.Calls("PATCH /channels/{cid}/messages/{mid}") != 1 {
		t.Fatalf("second edit %v after %s", err, time.Since(began))
	}
}

func TestErrorsClassified(t *testing.T) {
	t.Parallel()
	srv, a, ch := sender(t)
	ctx := context.Background()
	route := "POST /channels/{cid}/messages"
	srv.Fail(route, http.StatusForbidden, 50007, "Cannot send messages to this user")
	_, err := a.Send(ctx, ch, channels.Outgoing{Key: "x1", Text: "x"})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "50007 Cannot send messages to this user") || !strings.Contains(err.Error(), "send message to channel "+ch) {
		t.Errorf("403: %v", err)
	}
	srv.Fail(route, http.StatusBadGateway, 0, "upstream")
	_, err = a.Send(ctx, ch, channels.Outgoing{Key: "x2", Text: "x"})
	var ra *channels.RetryAfterError
	if err == nil || errors.As(err, &pe) || errors.As(err, &ra) {
		t.Errorf("502 should be retried plainly: %v", err)
	}
	// A refused token is permanent and says what to fix, without the token.
	bad, _ := newAdapter(t, srv, "OTk5.bad.token")
	_, err = bad.Send(ctx, ch, channels.Outgoing{Key: "x3", Text: "x"})
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "channels.discord.token") || strings.Contains(err.Error(), "OTk5.bad.token") {
		t.Errorf("401: %v", err)
	}
}

func TestFormErrorsNamed(t *testing.T) {
	t.Parallel()
	e := parseAPIError("send", 400, []byte(`{"code":50035,"message":"Invalid Form Body","errors":{"content":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH","message":"Must be 2000 or fewer in length."}]},"components":{"0":{"components":{"1":{"custom_id":{"_errors":[{"code":"X","message":"Too long"}]}}}}}}}`))
	want := "discord send: HTTP 400, code 50035 Invalid Form Body (components.0.components.1.custom_id: Too long; content: Must be 2000 or fewer in length.)"
	if e.Error() != want {
		t.Errorf("got  %s\nwant %s", e, want)
	}
	if e := parseAPIError("send", 502, []byte("<html>bad gateway</html>")); e.Error() != "discord send: HTTP 502" {
		t.Errorf("non-JSON: %s", e)
	}
}

func TestSendVoice(t *testing.T) {
	t.Parallel()
	srv, a, ch := sender(t)
	if err := a.SendVoice(context.Background(), ch, []byte("OggS..."), "audio/ogg"); err != nil {
		t.Fatal(err)
	}
	m := srv.Messages(ch)
	if len(m) != 1 || len(m[0].Files) != 1 || m[0].Files[0].Name != "reply.ogg" || m[0].Files[0].Type != "audio/ogg" || string(m[0].Files[0].Data) != "OggS..." {
		t.Fatalf("upload %+v", m)
	}
	var pe *channels.PermanentError
	if err := a.SendVoice(context.Background(), ch, make([]byte, maxUpload+1), "audio/ogg"); !errors.As(err, &pe) {
		t.Errorf("oversized upload: %v", err)
	}
}

func TestAttachmentFetchRefusesForeignURLs(t *testing.T) {
	t.Parallel()
	_, a, _ := sender(t)
	for _, u := range []string{"http://169.254.169.254/latest", "file:///etc/passwd", "ftp://cdn/x", "https://user:pw@cdn.example/x", "::"} {
		if _, err := a.fetch(context.Background(), attachment{ID: "1", URL: u}, 1<<20); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestGatewayURLMustBeSecure(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Token: "t.o.k"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.checkGatewayURL("wss://gateway.discord.gg"); err != nil {
		t.Error(err)
	}
	for _, u := range []string{"ws://gateway.discord.gg", "https://gateway.discord.gg", "wss://u:p@gateway.discord.gg", "", "wss://"} {
		if a.checkGatewayURL(u) == nil {
			t.Errorf("%q accepted against an https API", u)
		}
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{}, {Token: "Bot abc.def.ghi"}, {Token: "abc def"}, {Token: "a.b.c", APIURL: "ftp://x"}, {Token: "a.b.c", APIURL: "https://u:p@discord.com/api"}} {
		if _, err := New(cfg, nil, nil); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	a, err := New(Config{Token: "a.b.c"}, nil, nil)
	if err != nil || a.Name() != "discord" || a.Kind() != "discord" || a.api != DefaultAPIURL {
		t.Errorf("defaults: %v %+v", err, a)
	}
}
