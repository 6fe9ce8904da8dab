package voice

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func splitAll(text string, chunk int) []string {
	var s Splitter
	var out []string
	for i := 0; i < len(text); {
		j := min(len(text), i+chunk)
		out = append(out, s.Push(text[i:j])...)
		i = j
	}
	if r := s.Flush(); r != "" {
		out = append(out, r)
	}
	return out
}

func TestSplitter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     []string
	}{
		{"sentences", "Hello there. How are you? Fine!", []string{"Hello there. ", "How are you? ", "Fine!"}},
		{"abbreviations and initials", "See e.g. the note by Dr. Smith and J. Doe. Then stop.", []string{"See e.g. the note by Dr. Smith and J. Doe. ", "Then stop."}},
		{"decimals", "It costs 3.50 euros. Cheap.", []string{"It costs 3.50 euros. ", "Cheap."}},
		{"lines and list numbers", "Plan:\n1. Buy milk\n2. Call Sam\nDone", []string{"Plan:\n", "1. Buy milk\n", "2. Call Sam\n", "Done"}},
		{"year ends a sentence", "I was born in 1990. Then more.", []string{"I was born in 1990. ", "Then more."}},
		{"quotes after the stop", `He said "go." Then left.`, []string{`He said "go." `, "Then left."}},
		{"code block is one piece", "Run this:\n```sh\nls -l. rm x\n```\nThat is all.", []string{"Run this:\n", "```sh\nls -l. rm x\n```\n", "That is all."}},
		{"semicolon and ellipsis", "First; second… third", []string{"First; ", "second… ", "third"}},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 7, 1000} {
			if got := splitAll(c.in, chunk); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s (chunks of %d): %q, want %q", c.name, chunk, got, c.want)
			}
		}
	}
}

// MinLen keeps short sentences with the next one; a line break still
// cuts, and where the cuts fall does not depend on the deltas.
func TestSplitterMinLen(t *testing.T) {
	t.Parallel()
	in := "Ok. Sure, I can do that. Yes!\nNo.\nIt is noon. Done."
	want := []string{"Ok. Sure, I can do that. ", "Yes!\n", "No.\n", "It is noon. Done."}
	for _, chunk := range []int{1, 4, 1000} {
		s := Splitter{MinLen: 12}
		var got []string
		for i := 0; i < len(in); i += chunk {
			got = append(got, s.Push(in[i:min(len(in), i+chunk)])...)
		}
		got = append(got, s.Flush())
		if !reflect.DeepEqual(got, want) {
			t.Errorf("chunks of %d: %q, want %q", chunk, got, want)
		}
	}
}

func TestSplitterLongRun(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("word ", 100) + "end"
	got := splitAll(in, 5)
	if len(got) < 2 {
		t.Fatalf("a 500-character run was not cut: %d pieces", len(got))
	}
	for _, p := range got[:len(got)-1] {
		if n := utf8.RuneCountInString(p); n > 240 || !strings.HasSuffix(p, " ") {
			t.Errorf("piece of %d runes %q", n, p)
		}
	}
}

func TestSpeakable(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"**Done**, see [the note](https://x.example) and `ls`. ": "Done, see the note and ls.",
		"## Heading\n":                   "Heading",
		"- item one\n":                   "item one",
		"2. second\n":                    "second",
		"Read https://example.com/x now": "Read a link now",
		"```go\nfmt.Println()\n```\n":    "",
		"| a | b |\n":                    "",
		"---\n":                          "",
		"> quoted words":                 "quoted words",
		"*really* _now_, snake_case_name and 2 * 3": "really now, snake_case_name and 2 * 3",
	}
	for in, want := range cases {
		if got := Speakable(in); got != want {
			t.Errorf("Speakable(%q) = %q, want %q", in, got, want)
		}
	}
}

// The pieces partition the text, and where it is cut does not depend on
// how the deltas arrived.
func FuzzSplitter(f *testing.F) {
	for _, s := range []string{"Hello there. How are you?", "1. a\n2. b", "```\ncode. x\n```\nok. ", "e.g. Dr. J. Smith. ", "…;!?", strings.Repeat("ab ", 200)} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, in string, chunk uint8) {
		whole := splitAll(in, len(in)+1)
		if strings.Join(whole, "") != in {
			t.Fatalf("pieces %q do not join to %q", whole, in)
		}
		parts := splitAll(in, int(chunk%16)+1)
		if !reflect.DeepEqual(parts, whole) && !(len(parts) == 0 && len(whole) == 0) {
			t.Fatalf("chunked %q, whole %q", parts, whole)
		}
		for _, p := range whole {
			if p == "" {
				t.Fatal("empty piece")
			}
			_ = Speakable(p)
		}
	})
}

func TestParseAnswer(t *testing.T) {
	t.Parallel()
	cases := map[string]Answer{
		"Approve.":                       Approve,
		"yes":                            Approve,
		"Yes, please!":                   Approve,
		"uh, approve it":                 Approve,
		"Go ahead.":                      Approve,
		"OK":                             Approve,
		"Deny":                           Deny,
		"No.":                            Deny,
		"no thank you":                   Deny,
		"Don’t.":                         Deny,
		"I approve of the idea but wait": NotAnAnswer,
		"approve the other one instead":  NotAnAnswer,
		"don't approve that":             NotAnAnswer,
		"yes no":                         NotAnAnswer,
		"no 2 files":                     NotAnAnswer,
		"what time is it":                NotAnAnswer,
		"":                               NotAnAnswer,
		"...":                            NotAnAnswer,
		"approve approve approve approve approve": NotAnAnswer,
	}
	for in, want := range cases {
		if got := ParseAnswer(in); got != want {
			t.Errorf("ParseAnswer(%q) = %v, want %v", in, got, want)
		}
	}
}

func FuzzParseAnswer(f *testing.F) {
	f.Add("approve")
	f.Add("I approve of it")
	f.Add("No.")
	f.Fuzz(func(t *testing.T, s string) {
		a := ParseAnswer(s)
		if a != NotAnAnswer && len(strings.Fields(s)) > 2*maxAnswerWords {
			t.Fatalf("%q of %d words decided %v", s, len(strings.Fields(s)), a)
		}
		if a == Approve && strings.Contains(strings.ToLower(s), "deny") {
			t.Fatalf("%q approves", s)
		}
	})
}

func TestParseControl(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in    string
		hello bool
	}{
		{`{"type":"hello","format":"s16le","sample_rate":16000,"channels":1}`, false},
		{`{"type":"played","seq":3}`, true},
		{`{"type":"bye"}`, true},
	}
	for _, c := range ok {
		if _, err := parseControl([]byte(c.in), c.hello); err != nil {
			t.Errorf("%s: %v", c.in, err)
		}
	}
	bad := []struct {
		in    string
		hello bool
		want  string
	}{
		{`not json`, true, "one JSON object"},
		{`{"type":"played"} {"type":"bye"}`, true, "one JSON object"},
		{`{"type":"dance"}`, true, `unknown message type "dance"`},
		{`{"type":"played","extra":1}`, true, "one JSON object"},
		{`{}`, true, "no type"},
		{`{"type":"played","seq":1}`, false, "send hello first"},
		{`{"type":"hello","format":"f32le","sample_rate":16000,"channels":1}`, false, "only 16 kHz mono s16le"},
		{`{"type":"hello","format":"s16le","sample_rate":48000,"channels":1}`, false, "only 16 kHz mono s16le"},
		{`{"type":"hello","format":"s16le","sample_rate":16000,"channels":1}`, true, "already sent"},
		{`{"type":"played","seq":-1}`, true, "zero or more"},
	}
	for _, c := range bad {
		_, err := parseControl([]byte(c.in), c.hello)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.in, err, c.want)
		}
	}
	if err := checkAudio([]byte{1, 2, 3}, true); err == nil || !strings.Contains(err.Error(), "even number") {
		t.Errorf("odd audio: %v", err)
	}
	if err := checkAudio([]byte{1, 2}, false); err == nil {
		t.Error("audio before hello accepted")
	}
}

func FuzzParseControl(f *testing.F) {
	f.Add([]byte(`{"type":"hello","format":"s16le","sample_rate":16000,"channels":1}`), false)
	f.Add([]byte(`{"type":"played","seq":3}`), true)
	f.Add([]byte(`{"type":"`+strings.Repeat("x", 300)+`"}`), true)
	f.Fuzz(func(t *testing.T, b []byte, hello bool) {
		_, err := parseControl(b, hello)
		if err != nil && len(err.Error()) > 123 {
			t.Fatalf("close reason of %d bytes", len(err.Error()))
		}
	})
}
