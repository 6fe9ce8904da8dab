package whatsapp

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
)

// seeds adds every file of testdata/<dir> to the corpus.
func seeds(f *testing.F, dir string) {
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/%s: %v", dir, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

const seedPhoneID = "106540352242922"

// FuzzParseDelivery: any body either fails with an error or yields
// messages the relay can use: an id, a sender, and a complete action.
func FuzzParseDelivery(f *testing.F) {
	seeds(f, "deliveries")
	f.Add([]byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"106540352242922"},"messages":[{"from":"1","id":"x","type":"button","button":{"payload":"a:p:deny","text":"No"},"context":{"id":"wamid.p"}}]}}]}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseDelivery(body, seedPhoneID)
		if err != nil {
			if p.messages != nil || p.statuses != nil {
				t.Fatal("an error with results")
			}
			return
		}
		for _, m := range p.messages {
			if m.id == "" || m.from == "" || len(m.id) > maxID {
				t.Fatalf("unusable message %+v", m)
			}
			if m.action != nil {
				switch m.action.verb {
				case channels.VerbApprove, channels.VerbDeny, channels.VerbAllow10m:
				default:
					t.Fatalf("verb %q", m.action.verb)
				}
				if m.action.ref == "" {
					t.Fatalf("action without a ref: %+v", m)
				}
			}
			if m.action == nil && m.voice == nil && strings.TrimSpace(m.text) == "" {
				t.Fatalf("a message with nothing in it: %+v", m)
			}
			if m.voice != nil && m.voice.ID == "" {
				t.Fatalf("voice without a media id: %+v", m)
			}
		}
	})
}

// FuzzDecodeError: any error answer becomes an APIError that names the
// operation and status, and classify never panics on it.
func FuzzDecodeError(f *testing.F) {
	seeds(f, "errors")
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := &http.Response{StatusCode: 400, Header: http.Header{"Retry-After": {"7"}}}
		err := decodeError("sending a message", resp, body)
		if !strings.Contains(err.Error(), "sending a message: HTTP 400") {
			t.Fatalf("error %q", err)
		}
		_ = classify(err)
	})
}

// FuzzRender: rendering never panics, keeps valid UTF-8 valid, and the
// truncated result always fits a message.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"**a** *b* ~~c~~ `d`", "```go\nx\n", "# h\n- i\n[l](https://x.y)", "*", "**", "`", "```", "\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := Render(md)
		if utf8.ValidString(md) && !utf8.ValidString(out) {
			t.Fatalf("Render(%q) = invalid UTF-8 %q", md, out)
		}
		if got := Truncate(out, MaxText); utf8.RuneCountInString(got) > MaxText {
			t.Fatalf("Truncate kept %d characters", utf8.RuneCountInString(got))
		}
		if p := oneLine(out); strings.ContainsAny(p, "\n\r\t") || strings.Contains(p, "     ") {
			t.Fatalf("oneLine(%q) = %q is not a template parameter", out, p)
		}
	})
}
