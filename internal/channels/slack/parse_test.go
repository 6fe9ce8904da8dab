package slack

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/slack/slacktest"
)

var bot = identity{UserID: "U0BOT", BotID: "B0BOT"}

func cb(event map[string]any) callback {
	b, _ := json.Marshal(event)
	return callback{Type: "event_callback", EventID: "Ev1", Event: b}
}

func TestParseEvent(t *testing.T) {
	t.Parallel()
	type want struct {
		ok      bool
		conv    string
		private bool
		text    string
	}
	cases := []struct {
		name string
		ev   map[string]any
		want want
	}{
		{"dm", map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "hi", "ts": "10.1"}, want{true, "D1", true, "hi"}},
		{"dm thread", map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "hi", "ts": "11.1", "thread_ts": "10.1"}, want{true, "D1/10.1", true, "hi"}},
		{"group dm is not private", map[string]any{"type": "message", "channel": "G1", "channel_type": "mpim", "user": "U1", "text": "<@U0BOT> hi", "ts": "10.1"}, want{true, "G1/10.1", false, "hi"}},
		{"channel chatter", map[string]any{"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1", "text": "hi", "ts": "10.1"}, want{}},
		{"channel thread someone else started", map[string]any{"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1", "text": "hi", "ts": "11.1", "thread_ts": "10.1", "parent_user_id": "U2"}, want{}},
		{"channel thread the bot started", map[string]any{"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1", "text": "more", "ts": "11.1", "thread_ts": "10.1", "parent_user_id": "U0BOT"}, want{true, "C1/10.1", false, "more"}},
		{"mention in a thread", map[string]any{"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@U0BOT> and", "ts": "11.1", "thread_ts": "10.1"}, want{true, "C1/10.1", false, "and"}},
		{"app_mention in a DM by id", map[string]any{"type": "app_mention", "channel": "D1", "user": "U1", "text": "<@U0BOT> x", "ts": "11.1"}, want{true, "D1", true, "x"}},
		{"thread broadcast", map[string]any{"type": "message", "subtype": "thread_broadcast", "channel": "D1", "channel_type": "im", "user": "U1", "text": "also", "ts": "11.1", "thread_ts": "10.1"}, want{true, "D1/10.1", true, "also"}},
		{"own post", map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "user": "U0BOT", "text": "me", "ts": "10.1"}, want{}},
		{"any bot", map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "user": "U9", "bot_id": "B9", "text": "bot", "ts": "10.1"}, want{}},
		{"edit", map[string]any{"type": "message", "subtype": "message_changed", "channel": "D1", "channel_type": "im", "ts": "10.1"}, want{}},
		{"delete", map[string]any{"type": "message", "subtype": "message_deleted", "channel": "D1", "channel_type": "im", "ts": "10.1"}, want{}},
		{"no user", map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "text": "x", "ts": "10.1"}, want{}},
		{"other event", map[string]any{"type": "reaction_added", "user": "U1"}, want{}},
		{"only a mention", map[string]any{"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@U0BOT>", "ts": "10.1"}, want{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, ok, err := parseEvent(bot, cb(tc.ev))
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.want.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.want.ok, in.u)
			}
			if ok && (in.u.Conv != tc.want.conv || in.u.Private != tc.want.private || in.u.Text != tc.want.text || in.u.Sender != "U1" || in.u.ID != tc.ev["channel"].(string)+"/"+tc.ev["ts"].(string)) {
				t.Errorf("update = %+v, want %+v", in.u, tc.want)
			}
		})
	}
}

func TestParseEventMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    callback
		want string
	}{
		{"no event", callback{Type: "event_callback", EventID: "Ev9"}, "Ev9 has no event"},
		{"event not object", callback{Type: "event_callback", Event: json.RawMessage(`"x"`)}, "not a message event"},
		{"bad channel", cb(map[string]any{"type": "message", "channel": "d1/../x", "channel_type": "im", "user": "U1", "text": "x", "ts": "1.1"}), "not a Slack channel id"},
		{"bad ts", cb(map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "x", "ts": "1/2"}), "ts \"1/2\""},
		{"bad thread", cb(map[string]any{"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "x", "ts": "1.1", "thread_ts": "x"}), "thread_ts"},
		{"wrong types", callback{Type: "event_callback", Event: json.RawMessage(`{"type":"message","user":7}`)}, "not a message event"},
	} {
		_, ok, err := parseEvent(bot, tc.c)
		if ok || !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ok=%v err=%v, want malformed with %q", tc.name, ok, err, tc.want)
		}
	}
	for _, body := range []string{``, `null`, `[]`, `{}`, `{"type":1}`} {
		if _, err := parseCallback([]byte(body)); !errors.Is(err, errMalformed) {
			t.Errorf("parseCallback(%q) = %v", body, err)
		}
	}
}

func TestParseInteraction(t *testing.T) {
	t.Parallel()
	payload := func(container, actions string) []byte {
		return []byte(`{"type":"block_actions","user":{"id":"U1","username":"anna","name":"anna"},"container":` + container + `,"actions":` + actions + `}`)
	}
	in, ok, err := parseInteraction(payload(`{"type":"message","channel_id":"C1","message_ts":"20.1","thread_ts":"10.1"}`,
		`[{"action_id":"approve","value":"ap-1","action_ts":"21.5"}]`))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if u := in.u; u.Conv != "C1/10.1" || u.Action.Ref != "C1/20.1" || u.Action.ApprovalID != "ap-1" || u.Action.Verb != channels.VerbApprove || u.Private || u.ID != "action/C1/20.1/21.5/U1" || in.ackThread != "10.1" {
		t.Errorf("update = %+v %+v", u, u.Action)
	}
	// A prompt at the top of a channel is its own thread; in a DM it is the DM.
	in, _, _ = parseInteraction(payload(`{"type":"message","channel_id":"C1","message_ts":"20.1"}`, `[{"action_id":"deny","value":"a"}]`))
	if in.u.Conv != "C1/20.1" {
		t.Errorf("channel top-level conv = %q", in.u.Conv)
	}
	in, _, _ = parseInteraction(payload(`{"type":"message","channel_id":"D1","message_ts":"20.1"}`, `[{"action_id":"allow_10m","value":"a"}]`))
	if in.u.Conv != "D1" || !in.u.Private || in.u.Action.Verb != channels.VerbAllow10m {
		t.Errorf("DM press = %+v", in.u)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"other button", payload(`{"type":"message","channel_id":"C1","message_ts":"20.1"}`, `[{"action_id":"open_url","value":"a"}]`)},
		{"no actions", payload(`{"type":"message","channel_id":"C1","message_ts":"20.1"}`, `[]`)},
		{"modal", payload(`{"type":"view","view_id":"V1"}`, `[{"action_id":"approve","value":"a"}]`)},
		{"view submission", []byte(`{"type":"view_submission","user":{"id":"U1"}}`)},
	} {
		if _, ok, err := parseInteraction(tc.body); ok || err != nil {
			t.Errorf("%s: ok=%v err=%v, want skipped", tc.name, ok, err)
		}
	}
	for _, body := range []string{`nope`, `{"type":"block_actions"}`, string(payload(`{"type":"message","channel_id":"C1","message_ts":"x"}`, `[]`)),
		string(payload(`{"type":"message","channel_id":"C1","message_ts":"1.1","thread_ts":"y"}`, `[]`))} {
		if _, ok, err := parseInteraction([]byte(body)); ok || !errors.Is(err, errMalformed) {
			t.Errorf("parseInteraction(%q) = %v %v, want malformed", body, ok, err)
		}
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1700000000, 0)
	body := []byte(`{"type":"event_callback"}`)
	signed := func(secret string, at time.Time, b []byte) http.Header {
		h := http.Header{}
		slacktest.Sign(h, secret, at, b)
		return h
	}
	if err := Verify("s3cret", now, signed("s3cret", now.Add(-4*time.Minute), body), body); err != nil {
		t.Errorf("genuine: %v", err)
	}
	h := signed("s3cret", now, body)
	h.Set("X-Slack-Signature", strings.Replace(h.Get("X-Slack-Signature"), "v0=", "v1=", 1))
	badTS := signed("s3cret", now, body)
	badTS.Set("X-Slack-Request-Timestamp", "soon")
	// The timestamp is part of what is signed: moving it breaks the signature.
	moved := signed("s3cret", now.Add(-10*time.Minute), body)
	moved.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
	for _, tc := range []struct {
		name string
		h    http.Header
		b    []byte
		want error
	}{
		{"unsigned", http.Header{}, body, errUnsigned},
		{"wrong secret", signed("other", now, body), body, errBadSignature},
		{"other body", signed("s3cret", now, body), []byte(`{}`), errBadSignature},
		{"stale", signed("s3cret", now.Add(-5*time.Minute-time.Second), body), body, errStale},
		{"future", signed("s3cret", now.Add(5*time.Minute+time.Second), body), body, errStale},
		{"version", h, body, errBadSignature},
		{"timestamp", badTS, body, errBadTimestamp},
		{"moved timestamp", moved, body, errBadSignature},
		{"not hex", http.Header{"X-Slack-Request-Timestamp": {"1700000000"}, "X-Slack-Signature": {"v0=zz"}}, body, errBadSignature},
	} {
		if err := Verify("s3cret", now, tc.h, tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
