package discord

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// Seeds for every fuzz target are in testdata/fuzz/<target>/ as well as
// below; `go test -fuzz=FuzzX` explores from them.

func FuzzParsePayload(f *testing.F) {
	for _, s := range []string{`{"op":10,"d":{"heartbeat_interval":41250},"s":null,"t":null}`, `{"op":0,"t":"READY","s":1,"d":{}}`, `{"op":0}`, `{"op":-1}`, `[]`, `{"op":11,"s":-5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePayload(data)
		if err != nil {
			return
		}
		if p.Op == opDispatch && p.T == "" || p.S != nil && *p.S < 0 {
			t.Fatalf("accepted %+v", p)
		}
		if p.Op == opHello {
			if h, err := parseHello(p.D); err == nil && (h.HeartbeatInterval < 10 || h.HeartbeatInterval > 600000) {
				t.Fatalf("hello %+v", h)
			}
		}
		if p.T == "READY" {
			if r, err := parseReady(p.D); err == nil && (!snowflake(r.User.ID) || r.SessionID == "") {
				t.Fatalf("ready %+v", r)
			}
		}
	})
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","channel_id":"2","author":{"id":"3","username":"a"},"content":"hi","type":0}`,
		`{"id":"1","channel_id":"2","guild_id":"9","author":{"id":"3"},"content":"<@5> hi","mentions":[{"id":"5"}],"type":0}`,
		`{"id":"1","channel_id":"2","author":{"id":"3"},"attachments":[{"id":"7","content_type":"audio/ogg","url":"https://cdn.discordapp.com/a","size":9}],"type":0}`,
		`{"id":"../x","channel_id":"2","author":{"id":"3"}}`,
		`{"id":"1","channel_id":"2"}`,
		`"str"`,
	} {
		f.Add([]byte(s))
	}
	a, err := New(Config{Token: "a.b.c", APIURL: "http://127.0.0.1:1/api/v10"}, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	a.botID = "5"
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMessage(data)
		if err != nil {
			return
		}
		if !snowflake(m.ID) || !snowflake(m.ChannelID) || m.Author == nil || !snowflake(m.Author.ID) {
			t.Fatalf("accepted %+v", m)
		}
		// Guild messages only: a DM would look its channel up over HTTP.
		if m.GuildID == "" {
			return
		}
		u, ok := a.messageUpdate(context.Background(), m)
		if ok && (u.ID != m.ID || u.Private || u.Sender == "5" || u.Text == "" && u.Voice == nil) {
			t.Fatalf("update %+v from %+v", u, m)
		}
	})
}

func FuzzParseInteraction(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","application_id":"5","type":3,"token":"abc","channel_id":"2","user":{"id":"3"},"data":{"custom_id":"a:x:approve","component_type":2},"message":{"id":"4","channel_id":"2","author":{"id":"5"}}}`,
		`{"id":"1","type":3,"token":"../../x"}`,
		`{"id":"1","type":2,"token":"t","member":{"user":{"id":"bad"}}}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	a, err := New(Config{Token: "a.b.c"}, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	a.botID, a.appID = "5", "5"
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := parseInteraction(data)
		if err != nil {
			return
		}
		if !snowflake(in.ID) || !tokenChars(in.Token) || strings.Contains(in.Token, "/") {
			t.Fatalf("accepted %+v", in)
		}
		p := &press{a: a}
		u, reason := a.pressUpdate(in, p)
		if reason != "" {
			return
		}
		ch, msg, ok := splitRef(u.Action.Ref)
		if !ok || ch != in.Message.ChannelID || msg != in.Message.ID || u.Action.ApprovalID == "" || u.Sender == "" {
			t.Fatalf("update %+v action %+v", u, u.Action)
		}
	})
}

func FuzzParseCustomID(f *testing.F) {
	for _, s := range []string{"a:a_0123:approve", "a:x:deny", "a:x:allow_10m", "a::approve", "a:x:y:deny", "zzz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, v, ok := parseCustomID(s)
		if !ok {
			return
		}
		if id == "" || customID(id, v) != s {
			t.Fatalf("%q → %q %q does not round-trip", s, id, v)
		}
	})
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{"**a** || b", "| a | b |\n|---|---|\n| 1 | 2 |", "```\ncode\n", "#### h\n---\n![x](https://y)", strings.Repeat("é`", 1500)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if !utf8.ValidString(md) {
			return
		}
		out := Render(md)
		if n := utf8.RuneCountInString(out); n > MaxMessage {
			t.Fatalf("%d characters", n)
		}
	})
}

func FuzzParseAPIError(f *testing.F) {
	for _, s := range []string{
		`{"code":50035,"message":"Invalid Form Body","errors":{"content":{"_errors":[{"code":"X","message":"Too long"}]}}}`,
		`{"message":"You are being rate limited.","retry_after":1.5,"global":false}`,
		`<html>`, `{"errors":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"_errors":[1]}}}}}}}}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e := parseAPIError("op", 400, body)
		if len(e.Details) > 6 || utf8.RuneCountInString(e.Error()) > 2000 {
			t.Fatalf("error too large: %d details, %d chars", len(e.Details), len(e.Error()))
		}
		after, _ := retryAfter(nil, body)
		if after < 0 || after > 86400e9 {
			t.Fatalf("retry after %s", after)
		}
	})
}
