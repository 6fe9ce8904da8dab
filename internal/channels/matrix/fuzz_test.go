package matrix

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels/matrix/matrixtest"
)

// FuzzParseSync feeds arbitrary bytes through everything that reads a
// sync response: nothing may panic, and what comes out is held to the
// shapes the relay relies on. Seeds: testdata/fuzz/FuzzParseSync.
func FuzzParseSync(f *testing.F) {
	f.Add([]byte(`{"next_batch":"s1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseSync(data)
		if err != nil {
			return
		}
		if r.NextBatch == "" {
			t.Fatal("accepted a response without next_batch")
		}
		check := func(evs []event) {
			joinCut(evs, "@bot:x")
			for _, ev := range evs {
				membership(ev.Content)
				switch ev.Type {
				case "m.room.message":
					m, err := decodeMessage(ev.Content)
					if err != nil {
						continue
					}
					if m.Audio != nil {
						if _, _, err := parseMXC(m.Audio.URL); err != nil {
							t.Fatalf("audio with a bad url %q", m.Audio.URL)
						}
					}
					if m.Thread != "" && !validID(m.Thread, '$') {
						t.Fatalf("bad thread root %q", m.Thread)
					}
				case "m.reaction":
					if target, verb, ok := decodeReaction(ev.Content); ok && (!validID(target, '$') || verb == "") {
						t.Fatalf("reaction %q %q", target, verb)
					}
				}
			}
		}
		for _, jr := range r.Rooms.Join {
			check(jr.State.Events)
			check(jr.Timeline.Events)
		}
		for _, inv := range r.Rooms.Invite {
			check(inv.InviteState.Events)
		}
	})
}

// FuzzRender: whatever the model writes, the HTML is well formed and
// within the spec's tag set. Seeds: testdata/fuzz/FuzzRender.
func FuzzRender(f *testing.F) {
	f.Add("**bold** and `code`")
	f.Fuzz(func(t *testing.T, md string) {
		if !utf8.ValidString(md) {
			return
		}
		out := Render(md)
		if err := matrixtest.CheckHTML(out); err != nil {
			t.Fatalf("Render(%q) = %q: %v", md, out, err)
		}
		if strings.Contains(out, "<script") || strings.Contains(out, "javascript:") && strings.Contains(out, "href=\"javascript") {
			t.Fatalf("Render(%q) = %q", md, out)
		}
	})
}

// FuzzParseMXC: an accepted URI is exactly mxc://server/media with both
// parts safe as path segments. Seeds: testdata/fuzz/FuzzParseMXC.
func FuzzParseMXC(f *testing.F) {
	f.Add("mxc://example.org/abc_DEF-1")
	f.Fuzz(func(t *testing.T, uri string) {
		server, media, err := parseMXC(uri)
		if err != nil {
			return
		}
		if "mxc://"+server+"/"+media != uri || strings.ContainsAny(server+media, "/?#% \\") || pathSeg(media) != media {
			t.Fatalf("parseMXC(%q) = %q, %q", uri, server, media)
		}
	})
}
