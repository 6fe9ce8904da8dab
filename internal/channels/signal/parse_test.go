package signal

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

const self = "+15550001111"

func TestParseNotification(t *testing.T) {
	t.Parallel()
	ids := newIdentities([]string{"+393471234567", "0B1D9BD4-6EF4-4BB4-9A7E-6A3F8C3B2D10"})
	cases := []struct {
		name, params string
		want         channels.Update
		skip         string
		err          string
	}{
		{
			name:   "text",
			params: `{"envelope":{"source":"+393471234567","sourceNumber":"+393471234567","sourceUuid":"7CCAE375-cd51-4c82-8b1e-7be3280aa485","sourceName":"Anna","timestamp":1700000000001,"dataMessage":{"timestamp":1700000000001,"message":"hi"}},"account":"+15550001111"}`,
			want:   channels.Update{ID: "7ccae375-cd51-4c82-8b1e-7be3280aa485:1700000000001", Conv: "+393471234567", Sender: "+393471234567", SenderName: "Anna", Private: true, Text: "hi"},
		},
		{
			name:   "wrapped subscription",
			params: `{"subscription":3,"result":{"envelope":{"sourceNumber":"+393471234567","timestamp":5,"dataMessage":{"timestamp":5,"message":"x"}},"account":"+15550001111"}}`,
			want:   channels.Update{ID: "+393471234567:5", Conv: "+393471234567", Sender: "+393471234567", Private: true, Text: "x"},
		},
		{
			name:   "legacy source only",
			params: `{"envelope":{"source":"+393471234567","timestamp":9,"dataMessage":{"timestamp":9,"message":"x"}}}`,
			want:   channels.Update{ID: "+393471234567:9", Conv: "+393471234567", Sender: "+393471234567", Private: true, Text: "x"},
		},
		{
			name:   "hidden number",
			params: `{"envelope":{"source":"5d2b0c6e-1111-4a4a-9b9b-000000000001","sourceNumber":null,"sourceUuid":"5d2b0c6e-1111-4a4a-9b9b-000000000001","timestamp":7,"dataMessage":{"timestamp":7,"message":"x"}}}`,
			want:   channels.Update{ID: "5d2b0c6e-1111-4a4a-9b9b-000000000001:7", Conv: "5d2b0c6e-1111-4a4a-9b9b-000000000001", Sender: "5d2b0c6e-1111-4a4a-9b9b-000000000001", Private: true, Text: "x"},
		},
		{
			// Listed by UUID, so known by it although the number shows.
			name:   "owner listed by uuid",
			params: `{"envelope":{"sourceNumber":"+4915112345678","sourceUuid":"0b1d9bd4-6ef4-4bb4-9a7e-6a3f8c3b2d10","timestamp":7,"dataMessage":{"timestamp":7,"message":"x"}}}`,
			want:   channels.Update{ID: "0b1d9bd4-6ef4-4bb4-9a7e-6a3f8c3b2d10:7", Conv: "0B1D9BD4-6EF4-4BB4-9A7E-6A3F8C3B2D10", Sender: "0B1D9BD4-6EF4-4BB4-9A7E-6A3F8C3B2D10", Private: true, Text: "x"},
		},
		{
			name:   "group",
			params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":8,"dataMessage":{"timestamp":8,"message":"x","groupInfo":{"groupId":"Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI=","type":"DELIVER"}}}}`,
			want:   channels.Update{ID: "+393471234567:8", Conv: "group:Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI=", Sender: "+393471234567", Private: false, Text: "x"},
		},
		{
			name:   "reaction",
			params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":10,"dataMessage":{"timestamp":10,"message":null,"reaction":{"emoji":"👍🏽","targetAuthor":"+15550001111","targetAuthorNumber":"+15550001111","targetSentTimestamp":1234,"isRemove":false}}}}`,
			want:   channels.Update{ID: "+393471234567:10", Conv: "+393471234567", Sender: "+393471234567", Private: true, Action: &channels.Action{Ref: "1234", Verb: channels.VerbApprove}},
		},
		{
			name:   "reaction by uuid target",
			params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":10,"dataMessage":{"timestamp":10,"reaction":{"emoji":"❌","targetAuthorUuid":"2f5a0d4e-8c1b-4e57-9d0a-5b3c1e7f9a21","targetSentTimestamp":99,"isRemove":false}}}}`,
			want:   channels.Update{ID: "+393471234567:10", Conv: "+393471234567", Sender: "+393471234567", Private: true, Action: &channels.Action{Ref: "99", Verb: channels.VerbDeny}},
		},
		{name: "reaction removed", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":10,"dataMessage":{"timestamp":10,"reaction":{"emoji":"👍","targetAuthorNumber":"+15550001111","targetSentTimestamp":1234,"isRemove":true}}}}`, skip: "removed"},
		{name: "reaction heart", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":10,"dataMessage":{"timestamp":10,"reaction":{"emoji":"❤️","targetAuthorNumber":"+15550001111","targetSentTimestamp":1234}}}}`, skip: "not an approval"},
		{name: "reaction to another", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":10,"dataMessage":{"timestamp":10,"reaction":{"emoji":"👍","targetAuthorNumber":"+393471234567","targetSentTimestamp":1234}}}}`, skip: "someone else"},
		{name: "reaction to another legacy", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":10,"dataMessage":{"timestamp":10,"reaction":{"emoji":"👍","targetAuthor":"+393471234567","targetSentTimestamp":1234}}}}`, skip: "someone else"},
		{name: "own message", params: `{"envelope":{"sourceNumber":"+15550001111","timestamp":1,"dataMessage":{"timestamp":1,"message":"echo"}}}`, skip: "own account"},
		{name: "sync", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"syncMessage":{"sentMessage":{"timestamp":1,"message":"x","destination":"+15550001111"}}}}`, skip: "sync"},
		{name: "receipt", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"receiptMessage":{"when":1,"isDelivery":true,"timestamps":[5]}}}`, skip: "receipt"},
		{name: "typing", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"typingMessage":{"action":"STARTED","timestamp":1}}}`, skip: "typing"},
		{name: "edit", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":2,"editMessage":{"targetSentTimestamp":1,"dataMessage":{"timestamp":2,"message":"y"}}}}`, skip: "edit"},
		{name: "profile key", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"dataMessage":{"timestamp":1,"message":null,"expiresInSeconds":0,"viewOnce":false}}}`, skip: "no text"},
		{name: "timer", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"dataMessage":{"timestamp":1,"isExpirationUpdate":true}}}`, skip: "timer"},
		{name: "delete", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"dataMessage":{"timestamp":1,"remoteDelete":{"timestamp":5}}}}`, skip: "delete"},
		{name: "no sender", params: `{"envelope":{"timestamp":1,"dataMessage":{"timestamp":1,"message":"x"}}}`, skip: "no sender"},
		{name: "not json", params: `{"envelope":`, err: "reading a receive notification"},
		{name: "no envelope", params: `{"account":"+15550001111"}`, err: "no envelope"},
		{name: "bad number", params: `{"envelope":{"sourceNumber":"+39 347","timestamp":1,"dataMessage":{"message":"x"}}}`, err: "not a phone number"},
		{name: "bad uuid", params: `{"envelope":{"sourceUuid":"../../etc","timestamp":1,"dataMessage":{"message":"x"}}}`, err: "not a UUID"},
		{name: "string timestamp", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":"1","dataMessage":{"message":"x"}}}`, err: "reading a receive notification"},
		{name: "no timestamp", params: `{"envelope":{"sourceNumber":"+393471234567","dataMessage":{"message":"x"}}}`, err: "no timestamp"},
		{name: "bad group", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"dataMessage":{"message":"x","groupInfo":{"groupId":"a b"}}}}`, err: "not a group id"},
		{name: "reaction no target", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"dataMessage":{"reaction":{"emoji":"👍","targetAuthorNumber":"+15550001111"}}}}`, err: "no target"},
		{name: "voice no id", params: `{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"dataMessage":{"attachments":[{"contentType":"audio/aac"}]}}}`, err: "no id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ev, err := parseNotification([]byte(c.params), self, ids)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.skip != "" {
				if !strings.Contains(ev.Skip, c.skip) {
					t.Fatalf("skip = %q, want %q (update %+v)", ev.Skip, c.skip, ev.Update)
				}
				return
			}
			if ev.Skip != "" {
				t.Fatalf("skipped: %s", ev.Skip)
			}
			u := ev.Update
			if (u.Action == nil) != (c.want.Action == nil) || (u.Action != nil && (u.Action.Ref != c.want.Action.Ref || u.Action.Verb != c.want.Action.Verb)) {
				t.Fatalf("action = %+v, want %+v", u.Action, c.want.Action)
			}
			u.Action, c.want.Action = nil, nil
			if u.ID != c.want.ID || u.Conv != c.want.Conv || u.Sender != c.want.Sender || u.SenderName != c.want.SenderName ||
				u.Private != c.want.Private || u.Text != c.want.Text || u.Voice != nil {
				t.Errorf("update = %+v\nwant     %+v", u, c.want)
			}
		})
	}
}

func TestParseVoiceAndAttachments(t *testing.T) {
	t.Parallel()
	ev, err := parseNotification([]byte(`{"envelope":{"sourceNumber":"+393471234567","timestamp":3,"dataMessage":{"timestamp":3,"message":"listen","attachments":[{"contentType":"image/jpeg","id":"img1.jpg","size":10},{"contentType":"audio/aac","id":"v1.aac","size":2048,"filename":"note.aac"}]}}}`), self, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := ev.Update.Voice
	if v == nil || v.Mime != "audio/aac" || v.Size != 2048 || v.Filename != "note.aac" || ev.Voice == nil || ev.Voice.ID != "v1.aac" {
		t.Fatalf("voice = %+v / %+v", v, ev.Voice)
	}
	// The image beside it is an attachment.
	if a := ev.Update.Attachments; len(a) != 1 || a[0].Mime != "image/jpeg" || a[0].Size != 10 || len(ev.Files) != 1 || ev.Files[0].ID != "img1.jpg" {
		t.Errorf("attachments = %+v / %+v", a, ev.Files)
	}
	// An image alone is a message with an attachment; a sticker is a
	// message with nothing the relay reads (it says so); an attachment
	// signal-cli has no id for is left out.
	for p, files := range map[string]int{
		`{"envelope":{"sourceNumber":"+393471234567","timestamp":3,"dataMessage":{"timestamp":3,"attachments":[{"contentType":"image/jpeg","id":"i"}]}}}`:                   1,
		`{"envelope":{"sourceNumber":"+393471234567","timestamp":3,"dataMessage":{"timestamp":3,"sticker":{"packId":"ab","stickerId":1}}}}`:                                 0,
		`{"envelope":{"sourceNumber":"+393471234567","timestamp":3,"dataMessage":{"timestamp":3,"message":"x","attachments":[{"contentType":"application/pdf","id":""}]}}}`: 0,
	} {
		ev, err := parseNotification([]byte(p), self, nil)
		if err != nil || ev.Skip != "" || ev.Update.Voice != nil || len(ev.Update.Attachments) != files || len(ev.Files) != files {
			t.Errorf("%s: %+v, %v", p, ev, err)
		}
	}
}

func TestReactionVerb(t *testing.T) {
	t.Parallel()
	for emoji, want := range map[string]channels.Verb{"👍": channels.VerbApprove, "👍🏿": channels.VerbApprove, "✅": channels.VerbApprove, "✔️": channels.VerbApprove,
		"👎": channels.VerbDeny, "👎🏻": channels.VerbDeny, "❌": channels.VerbDeny, "❤️": "", "👍👍": "", "": ""} {
		got, ok := reactionVerb(emoji)
		if got != want || ok != (want != "") {
			t.Errorf("reactionVerb(%q) = %q, %v", emoji, got, ok)
		}
	}
}

// FuzzParseNotification feeds signal-cli notifications, real shapes and
// broken ones (seeds in testdata/fuzz): the parser must not panic, and an
// update it returns must carry what the relay requires.
func FuzzParseNotification(f *testing.F) {
	f.Add([]byte(`{"envelope":{"sourceNumber":"+393471234567","timestamp":1,"dataMessage":{"message":"x"}}}`))
	ids := newIdentities([]string{"+393471234567"})
	f.Fuzz(func(t *testing.T, params []byte) {
		ev, err := parseNotification(params, self, ids)
		if err != nil || ev.Skip != "" {
			return
		}
		u := ev.Update
		if u.ID == "" || u.Sender == "" || u.Conv == "" {
			t.Fatalf("update without id, sender or conversation: %+v", u)
		}
		if u.Sender == self {
			t.Fatalf("the assistant's own message passed: %+v", u)
		}
		if u.Action != nil && (u.Action.Ref == "" || (u.Action.Verb != channels.VerbApprove && u.Action.Verb != channels.VerbDeny)) {
			t.Fatalf("bad action %+v", u.Action)
		}
		if u.Voice != nil && (ev.Voice == nil || ev.Voice.ID == "") {
			t.Fatalf("voice without an attachment id")
		}
		if len(u.Attachments) != len(ev.Files) {
			t.Fatalf("%d attachments for %d files", len(u.Attachments), len(ev.Files))
		}
		for _, f := range ev.Files {
			if f.ID == "" {
				t.Fatalf("an attachment without an id: %+v", f)
			}
		}
		if !u.Private && !strings.HasPrefix(u.Conv, groupPrefix) {
			t.Fatalf("group message outside a group conversation: %+v", u)
		}
	})
}

// FuzzSendAnswer feeds answers to a send (seeds in testdata/fuzz): reading
// and judging them must not panic, an error object must become an error,
// and a wait asked for must be sane.
func FuzzSendAnswer(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"timestamp":1},"id":"h1"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var m rpcMessage
		if json.Unmarshal(line, &m) != nil {
			return
		}
		var res sendResult
		err := decodeAnswer("send", m, &res)
		if m.Error != nil && err == nil {
			t.Fatal("an error object read as success")
		}
		if err == nil {
			err = res.failure(nil)
		} else {
			err = classify(err)
		}
		var ra *channels.RetryAfterError
		if errors.As(err, &ra) && (ra.After <= 0 || ra.After > 24*time.Hour) {
			t.Fatalf("retry after %v", ra.After)
		}
	})
}
