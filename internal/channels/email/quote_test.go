package email

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// The reply shapes below are how the named clients lay out a text/plain
// reply to a message from "Hestia <hestia@example.org>".
func TestStripQuotesRealClients(t *testing.T) {
	t.Parallel()
	const original = "> Shall I book the table for four at 20:00?\n>\n> K7QF: reply \"K7QF approve\" or \"K7QF deny\".\n"
	cases := []struct {
		name, in, want string
	}{
		{"gmail top-posted",
			"Yes please, book it.\n\nOn Fri, 7 Jun 2024 at 18:02, Hestia <hestia@example.org> wrote:\n\n" + original,
			"Yes please, book it."},
		{"gmail wrapped attribution",
			"K7QF approve\n\nOn Fri, Jun 7, 2024 at 6:02 PM Hestia via Hestia <\nhestia+Q7tX2mVb9KpL4sWz@example.org> wrote:\n\n" + original,
			"K7QF approve"},
		{"gmail three-line attribution",
			"K7QF approve\n\nOn Fri, Jun 7, 2024 at 6:02 PM\nHestia Assistant of the House <\nhestia@example.org> wrote:\n" + original,
			"K7QF approve"},
		{"gmail german",
			"K7QF approve\n\nAm Fr., 7. Juni 2024 um 18:02 Uhr schrieb Hestia <hestia@example.org>:\n\n" + original,
			"K7QF approve"},
		{"gmail french",
			"K7QF deny\n\nLe ven. 7 juin 2024 à 18:02, Hestia <hestia@example.org> a écrit :\n\n" + original,
			"K7QF deny"},
		{"gmail italian",
			"K7QF approve\n\nIl giorno ven 7 giu 2024 alle ore 18:02 Hestia <hestia@example.org> ha scritto:\n\n" + original,
			"K7QF approve"},
		{"outlook desktop",
			"K7QF deny\r\n\r\n________________________________\r\nFrom: Hestia <hestia@example.org>\r\nSent: Friday, June 7, 2024 6:02 PM\r\nTo: Owner <owner@example.org>\r\nSubject: Re: Dinner on Friday?\r\n\r\nShall I book the table for four at 20:00?\r\n",
			"K7QF deny"},
		{"outlook original message",
			"Approve it.\n\n-----Original Message-----\nFrom: Hestia [mailto:hestia@example.org]\nSent: Friday, June 7, 2024 6:02 PM\nTo: Owner\nSubject: Dinner\n\nShall I book the table?\n",
			"Approve it."},
		{"outlook without rule",
			"K7QF approve\n\nFrom: Hestia <hestia@example.org>\nSent: Friday, June 7, 2024 6:02 PM\nTo: Owner <owner@example.org>\nSubject: Dinner\n\nShall I book?\n",
			"K7QF approve"},
		{"outlook german",
			"K7QF approve\n\n________________________________\nVon: Hestia <hestia@example.org>\nGesendet: Freitag, 7. Juni 2024 18:02\nAn: Owner\nBetreff: Dinner\n\nShall I book?\n",
			"K7QF approve"},
		{"outlook ios",
			"K7QF approve\n\nGet Outlook for iOS\n________________________________\nFrom: Hestia <hestia@example.org>\nSent: Friday, June 7, 2024 6:02:11 PM\nTo: Owner <owner@example.org>\nSubject: Re: Dinner\n\nShall I book?\n",
			"K7QF approve"},
		{"apple mail macos",
			"K7QF approve\n\n> On 7 Jun 2024, at 18:02, Hestia <hestia@example.org> wrote:\n> \n" + original,
			"K7QF approve"},
		{"apple mail macos unquoted attribution",
			"Sounds good, go ahead.\n\nOn 7 Jun 2024, at 18:02, Hestia <hestia@example.org> wrote:\n\n" + original,
			"Sounds good, go ahead."},
		{"apple mail ios",
			"K7QF approve\n\nSent from my iPhone\n\n> On 7 Jun 2024, at 18:02, Hestia <hestia@example.org> wrote:\n> \n> \ufeff" + strings.TrimPrefix(original, "> "),
			"K7QF approve"},
		{"thunderbird top-posted",
			"K7QF approve\n\nOn 07/06/2024 18:02, Hestia wrote:\n" + original,
			"K7QF approve"},
		{"thunderbird bottom-posted with signature",
			"On 07/06/2024 18:02, Hestia wrote:\n" + original + "\nYes, and ask for a window seat.\n\n-- \nOwner Name\n+39 347 1234567\n",
			"Yes, and ask for a window seat."},
		{"inline answers",
			"On Fri, 7 Jun 2024 at 18:02, Hestia <hestia@example.org> wrote:\n> Shall I book the table?\n\nYes.\n\n> Should I also order flowers?\n\nNo, thanks.\n",
			"Yes.\n\nNo, thanks."},
		{"nested quotes",
			"Fine by me\n\nOn Sat, 8 Jun 2024 at 09:00, Hestia <hestia@example.org> wrote:\n> Done.\n>\n> On Fri, 7 Jun 2024 at 18:02, Owner <owner@example.org> wrote:\n>> Book it\n",
			"Fine by me"},
		{"signature without trailing space",
			"K7QF approve\n--\nOwner\n",
			"K7QF approve"},
		{"no quote at all",
			"Please remind me to call mum at 6.\nThanks!",
			"Please remind me to call mum at 6.\nThanks!"},
		{"own colon line kept",
			"Here is the list:\n- milk\n- eggs\n",
			"Here is the list:\n- milk\n- eggs"},
		{"intro to an intentional quote kept",
			"Look at what the landlord said:\n> The rent goes up in May.\nWhat do you think?",
			"Look at what the landlord said:\nWhat do you think?"},
		{"only a quote",
			"On Fri, 7 Jun 2024 at 18:02, Hestia <hestia@example.org> wrote:\n" + original,
			""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := StripQuotes(c.in); got != c.want {
				t.Errorf("StripQuotes =\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestStripSignature(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Book a table.\n\n-- \nOwner\nCEO":                      "Book a table.",
		"Book a table.":                                         "Book a table.",
		"a\n--\n" + strings.Repeat("long forwarded line\n", 20): "a\n--\n" + strings.TrimSpace(strings.Repeat("long forwarded line\n", 20)),
		"Summarise this:\n\n---------- Forwarded message ---------\nFrom: Bank <info@bank.example>\n\n> quoted in the forward\nYour statement":             "Summarise this:\n\n---------- Forwarded message ---------\nFrom: Bank <info@bank.example>\n\n> quoted in the forward\nYour statement",
		"Summarise this:\n\n---------- Forwarded message ---------\nFrom: Bank <info@bank.example>\nDate: Fri, 7 Jun 2024\n\nYour statement\n\n-- \nOwner": "Summarise this:\n\n---------- Forwarded message ---------\nFrom: Bank <info@bank.example>\nDate: Fri, 7 Jun 2024\n\nYour statement",
	} {
		if got := StripSignature(in); got != want {
			t.Errorf("StripSignature(%q) =\n%q\nwant\n%q", in, got, want)
		}
	}
}

func TestHTMLReplyTextRealClients(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
	}{
		{"gmail",
			`<div dir="ltr">K7QF approve</div><br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">On Fri, 7 Jun 2024 at 18:02, Hestia &lt;<a href="mailto:hestia@example.org">hestia@example.org</a>&gt; wrote:<br></div><blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex;border-left:1px solid rgb(204,204,204);padding-left:1ex">Shall I book the table for four at 20:00?<br>K7QF: reply "K7QF approve" or "K7QF deny".</blockquote></div>`,
			"K7QF approve"},
		{"gmail with signature",
			`<div dir="ltr"><div>Yes, book it &amp; thanks</div><div><br></div>-- <br><div dir="ltr" class="gmail_signature">Owner Name<br>+39 347 1234567</div></div><br><div class="gmail_quote"><blockquote class="gmail_quote">Shall I?</blockquote></div>`,
			"Yes, book it & thanks"},
		{"outlook web",
			`<html><head><style>p{margin:0}</style></head><body dir="ltr"><div style="font-family: Aptos, sans-serif;">Approve it please</div><div id="appendonsend"></div><hr style="display:inline-block;width:98%" tabindex="-1"><div id="divRplyFwdMsg" dir="ltr"><font face="Calibri, sans-serif" style="font-size:11pt" color="#000000"><b>From:</b> Hestia &lt;hestia@example.org&gt;<br><b>Sent:</b> Friday, June 7, 2024 6:02 PM<br><b>To:</b> Owner &lt;owner@example.org&gt;<br><b>Subject:</b> Re: Dinner</font><div>&nbsp;</div></div><div>Shall I book the table for four at 20:00?</div></body></html>`,
			"Approve it please"},
		{"outlook desktop",
			`<html><body lang="EN-US"><div class="WordSection1"><p class="MsoNormal">K7QF deny<o:p></o:p></p><p class="MsoNormal"><o:p>&nbsp;</o:p></p><div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0in 0in 0in"><p class="MsoNormal"><b>From:</b> Hestia &lt;hestia@example.org&gt; <br><b>Sent:</b> Friday, June 7, 2024 6:02 PM<br><b>To:</b> Owner<br><b>Subject:</b> Dinner<o:p></o:p></p></div><p class="MsoNormal">Shall I book the table?<o:p></o:p></p></div></body></html>`,
			"K7QF deny"},
		{"apple mail ios",
			`<html><head><meta http-equiv="content-type" content="text/html; charset=utf-8"></head><body dir="auto">K7QF approve<br id="lineBreakAtBeginningOfSignature"><div dir="ltr">Sent from my iPhone</div><div dir="ltr"><br><blockquote type="cite">On 7 Jun 2024, at 18:02, Hestia &lt;hestia@example.org&gt; wrote:<br><br></blockquote></div><blockquote type="cite"><div dir="ltr">Shall I book the table?</div></blockquote></body></html>`,
			"K7QF approve"},
		{"thunderbird",
			`<html><head></head><body><p>K7QF deny</p><p>Too expensive.<br></p><div class="moz-cite-prefix">On 07/06/2024 18:02, Hestia wrote:<br></div><blockquote type="cite" cite="mid:hestia.abc@example.org">Shall I book?</blockquote><div class="moz-signature">-- <br>Owner</div></body></html>`,
			"K7QF deny\nToo expensive."},
		{"broken markup", `<div>K7QF approve<blockquote><div>quoted`, "K7QF approve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := HTMLReplyText(c.in); got != c.want {
				t.Errorf("HTMLReplyText =\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// fuzzSeeds reads the text seeds in testdata/replies.
func fuzzSeeds(f *testing.F, dir string) {
	entries, err := os.ReadDir(filepath.Join("testdata", dir))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

// FuzzStripQuotes: any text gives valid UTF-8 no longer than the input
// (plus nothing), without panicking, and stripping is idempotent.
func FuzzStripQuotes(f *testing.F) {
	fuzzSeeds(f, "replies")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		got := StripQuotes(s)
		if !utf8.ValidString(got) || len(got) > len(s) {
			t.Fatalf("StripQuotes(%q) = %q", s, got)
		}
		if again := StripQuotes(got); again != got && !strings.Contains(got, ":") {
			// A second pass may only drop an attribution uncovered by the
			// first (its quote gone); without a colon nothing changes.
			t.Fatalf("not idempotent: %q then %q", got, again)
		}
		StripSignature(s)
	})
}

func FuzzHTMLReplyText(f *testing.F) {
	fuzzSeeds(f, "html")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		got := HTMLReplyText(s)
		if !utf8.ValidString(got) && utf8.ValidString(s) {
			t.Fatalf("HTMLReplyText(%q) = %q, not UTF-8", s, got)
		}
	})
}
