package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/slack/slacktest"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Seeds live in testdata/fuzz/<Name>/ (real Slack payload shapes).

// checkUpdate holds what every update handed to the relay must satisfy.
func checkUpdate(t *testing.T, u channels.Update) {
	t.Helper()
	if u.ID == "" || u.Sender == "" {
		t.Fatalf("update without ID or Sender: %+v", u)
	}
	ch, _, err := splitConv(u.Conv)
	if err != nil {
		t.Fatalf("update Conv %q does not parse: %v", u.Conv, err)
	}
	if u.Action != nil {
		rch, ts, err := splitConv(u.Action.Ref)
		if err != nil || ts == "" || rch != ch {
			t.Fatalf("action Ref %q does not name a message in %q: %v", u.Action.Ref, u.Conv, err)
		}
		switch u.Action.Verb {
		case channels.VerbApprove, channels.VerbDeny, channels.VerbAllow10m:
		default:
			t.Fatalf("verb %q", u.Action.Verb)
		}
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := parseCallback(body)
		if err != nil {
			return
		}
		in, ok, err := parseEvent(bot, c)
		if ok && err != nil {
			t.Fatalf("ok with error %v", err)
		}
		if ok {
			checkUpdate(t, in.u)
			if in.u.Text == "" && in.audio == nil {
				t.Fatal("an update with neither text nor audio")
			}
			if !strings.HasPrefix(in.u.ID, strings.SplitN(in.u.Conv, "/", 2)[0]+"/") {
				t.Fatalf("ID %q is not in Conv %q", in.u.ID, in.u.Conv)
			}
		}
	})
}

func FuzzParseInteraction(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		in, ok, err := parseInteraction(body)
		if ok && err != nil {
			t.Fatalf("ok with error %v", err)
		}
		if ok {
			if in.u.Action == nil || !in.press {
				t.Fatal("an interaction update without an action")
			}
			checkUpdate(t, in.u)
		}
	})
}

func FuzzParseEnvelope(f *testing.F) {
	a := &Adapter{}
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := parseEnvelope(data)
		if err != nil {
			return
		}
		in, ok, _ := a.parsePayload(bot, env)
		if ok {
			checkUpdate(t, in.u)
		}
	})
}

// linkOut matches a link Render made; nothing else may open a control
// sequence.
var linkOut = lazyre.New(`<https?://[^\s<>|]+\|[^<>\n]*>`)

func FuzzRender(f *testing.F) {
	f.Fuzz(func(t *testing.T, md string) {
		out := Render(md)
		if utf8.ValidString(md) && !utf8.ValidString(out) {
			t.Fatalf("Render(%q) = %q is not UTF-8", md, out)
		}
		if rest := linkOut.ReplaceAllString(out, ""); strings.Contains(rest, "<") {
			t.Fatalf("Render(%q) = %q has a < outside a link", md, out)
		}
		if strings.ContainsAny(out, boldMark+linkMark) {
			t.Fatalf("Render(%q) = %q leaks a private mark", md, out)
		}
		for _, p := range sections(out, 200) {
			if utf8.RuneCountInString(p) > 200 {
				t.Fatalf("section of %d runes", utf8.RuneCountInString(p))
			}
		}
		if n := utf8.RuneCountInString(truncate(out, 100)); n > 100 {
			t.Fatalf("truncate to 100 gave %d runes", n)
		}
	})
}

func FuzzPlainText(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		out := PlainText(text, "U0BOT")
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("PlainText(%q) = %q is not UTF-8", text, out)
		}
		if strings.Contains(out, "<@U0BOT>") && !strings.Contains(text, "&lt;@U0BOT&gt;") {
			t.Fatalf("PlainText(%q) kept the bot mention: %q", text, out)
		}
	})
}

func FuzzVerify(f *testing.F) {
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set("X-Slack-Signature", sig)
		if Verify("s3cret", now, h, body) == nil {
			// Only the HMAC of exactly this timestamp and body passes.
			mac := hmac.New(sha256.New, []byte("s3cret"))
			mac.Write([]byte("v0:" + ts + ":"))
			mac.Write(body)
			if !strings.EqualFold(sig, "v0="+hex.EncodeToString(mac.Sum(nil))) {
				t.Fatalf("Verify accepted signature %q for %q", sig, ts)
			}
		}
		g := http.Header{}
		slacktest.Sign(g, "s3cret", now, body)
		if err := Verify("s3cret", now, g, body); err != nil {
			t.Fatalf("a genuine signature was refused: %v", err)
		}
	})
}
