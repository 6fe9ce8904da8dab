package matrixtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The fake refuses what a homeserver or a client would: these checks are
// what make adapter tests against it mean something.
func TestFakeRefusesMistakes(t *testing.T) {
	t.Parallel()
	s := New(t)
	room := s.CreateRoom(RoomOptions{Creator: "@me:fake.test", JoinBot: true})
	other := s.CreateRoom(RoomOptions{Creator: "@me:fake.test"})
	theirs := s.Say(room, "@me:fake.test", "hi")
	do := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(data, &m)
		return resp.StatusCode, m
	}
	send := "/_matrix/client/v3/rooms/" + room + "/send/m.room.message/"
	cases := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"no token", "GET", "/_matrix/client/v3/account/whoami", "", "", 401, "M_MISSING_TOKEN"},
		{"wrong token", "GET", "/_matrix/client/v3/account/whoami", "nope", "", 401, "M_UNKNOWN_TOKEN"},
		{"unknown endpoint", "GET", "/_matrix/client/v3/nothing", Token, "", 404, "M_UNRECOGNIZED"},
		{"not json", "PUT", send + "t1", Token, "hello", 400, "M_NOT_JSON"},
		{"no body", "PUT", send + "t2", Token, `{"msgtype":"m.text"}`, 400, "M_BAD_JSON"},
		{"broken html", "PUT", send + "t3", Token, `{"msgtype":"m.text","body":"x","format":"org.matrix.custom.html","formatted_body":"<b>x"}`, 400, "M_BAD_JSON"},
		{"script tag", "PUT", send + "t4", Token, `{"msgtype":"m.text","body":"x","format":"org.matrix.custom.html","formatted_body":"<script>x</script>"}`, 400, "M_BAD_JSON"},
		{"javascript link", "PUT", send + "t5", Token, `{"msgtype":"m.text","body":"x","format":"org.matrix.custom.html","formatted_body":"<a href=\"javascript:x\">x</a>"}`, 400, "M_BAD_JSON"},
		{"edit of another's event", "PUT", send + "t6", Token, `{"msgtype":"m.text","body":"* x","m.new_content":{"msgtype":"m.text","body":"x"},"m.relates_to":{"rel_type":"m.replace","event_id":"` + theirs + `"}}`, 400, "M_BAD_JSON"},
		{"too large", "PUT", send + "t7", Token, `{"msgtype":"m.text","body":"` + strings.Repeat("x", MaxEvent) + `"}`, 413, "M_TOO_LARGE"},
		{"not in room", "PUT", "/_matrix/client/v3/rooms/" + other + "/send/m.room.message/t8", Token, `{"msgtype":"m.text","body":"x"}`, 403, "M_FORBIDDEN"},
		{"join uninvited", "POST", "/_matrix/client/v3/rooms/" + other + "/join", Token, `{}`, 403, "M_FORBIDDEN"},
		{"bad since", "GET", "/_matrix/client/v3/sync?since=yesterday", Token, "", 400, "M_INVALID_PARAM"},
	}
	for _, tc := range cases {
		status, body := do(tc.method, tc.path, tc.token, tc.body)
		if status != tc.status || body["errcode"] != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, status, body, tc.status, tc.code)
		}
	}
	// A transaction id repeats its event; a reaction cannot be doubled.
	_, a := do("PUT", send+"same", Token, `{"msgtype":"m.text","body":"once"}`)
	_, b := do("PUT", send+"same", Token, `{"msgtype":"m.text","body":"once"}`)
	if a["event_id"] == nil || a["event_id"] != b["event_id"] || len(s.BotMessages(room)) != 1 {
		t.Errorf("txn: %v %v, %d messages", a, b, len(s.BotMessages(room)))
	}
	react := `{"m.relates_to":{"rel_type":"m.annotation","event_id":"` + theirs + `","key":"👍"}}`
	do("PUT", "/_matrix/client/v3/rooms/"+room+"/send/m.reaction/r1", Token, react)
	if status, body := do("PUT", "/_matrix/client/v3/rooms/"+room+"/send/m.reaction/r2", Token, react); status != 400 || body["errcode"] != "M_DUPLICATE_ANNOTATION" {
		t.Errorf("duplicate reaction: %d %v", status, body)
	}
	s.Throttle("send", 2500)
	req, _ := http.NewRequest("PUT", s.URL+send+"t9", strings.NewReader(`{"msgtype":"m.text","body":"x"}`))
	req.Header.Set("Authorization", "Bearer "+Token)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("throttled: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestCheckHTML(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"plain":                  true,
		"a &amp; b &#39; &#x27;": true,
		"<p>x<br>y</p><hr>":      true,
		`<pre><code class="language-go">x</code></pre>`: true,
		`<a href="https://e.org/?a=1&amp;b=2">x</a>`:    true,
		"a & b":                       false,
		"a > b":                       false,
		"<b>x</i>":                    false,
		"<p>x":                        false,
		"<iframe></iframe>":           false,
		`<b onclick="x">y</b>`:        false,
		`<a href=x>y</a>`:             false,
		`<code class="evil">x</code>`: false,
	} {
		if err := CheckHTML(s); (err == nil) != ok {
			t.Errorf("CheckHTML(%q) = %v", s, err)
		}
	}
}
