package email

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// A reply quotes what it answers, in one of a few shapes mail clients
// have settled on; the relay must see only what the person wrote (it
// parses "CODE approve" in it, and the quoted history is Hestia's own
// text). The shapes handled, from real clients' text/plain parts:
//
//   - Gmail, Thunderbird, Apple Mail on macOS: an attribution line ("On
//     Mon, 3 Jun 2024 at 10:02, Hestia <h@x> wrote:", which Gmail may wrap
//     over two lines), then the quoted text as "> " lines; the reply above
//     (top posting) or between quoted lines (inline answers, kept).
//   - Apple Mail on iOS: "Sent from my iPhone", then the attribution
//     itself quoted.
//   - Outlook: no ">" at all; a line of underscores or "-----Original
//     Message-----" and a header block (From:/Sent:/To:/Subject:), then
//     the original. Everything from there on is cut.
//   - Signatures after the "-- " delimiter line (RFC 3676 §4.3).
//
// Localised attributions and header blocks are recognised for the
// languages below; an unrecognised one leaves its line, never cuts text.
var (
	// attributionEnd ends an attribution line: "wrote:" and its
	// translations.
	attributionEnd = lazyre.New(`(?i)(wrote|writes|schrieb|a écrit|ha scritto|escribió|escreveu|skrev|schreef|napisał|kirjoitti|написал\(а\)|написал|yazdı)\s*:\s*$`)
	// attributionStart begins one ("On …", "Am …", "Le …", …), for
	// joining a wrapped attribution with the line before.
	attributionStart = lazyre.New(`(?i)^(on|am|le|il|el|em|op|den|dne|w dniu|в|el día)\s`)
	// outlookRule is Outlook's separator above the header block.
	outlookRule     = lazyre.New(`^\s*_{8,}\s*$`)
	outlookOriginal = lazyre.New(`(?i)^\s*-{2,}\s*(original message|ursprüngliche nachricht|message d'origine|messaggio originale|mensaje original|mensagem original|oorspronkelijk bericht|originalmeddelande)\s*-{2,}\s*$`)
	// headerFrom and headerSent are the first two lines of Outlook's block.
	headerFrom = lazyre.New(`(?i)^\s*\*?(from|von|de|da|van|från|fra|od|от)\s*:\*?\s*\S`)
	headerSent = lazyre.New(`(?i)^\s*\*?(sent|date|gesendet|datum|envoyé|inviato|enviado|verzonden|skickat|sendt|wysłano|отправлено)\s*:\*?\s*\S`)
	// mobileFooter is a client's advertisement on the last line.
	mobileFooter = lazyre.New(`(?i)^\s*(sent from my .{1,40}|sent from (mail|outlook|yahoo mail) for .{1,40}|get outlook for .{1,40}|sent from yahoo mail.{0,40}|von meinem .{1,40} gesendet|envoyé de mon .{1,40}|inviato da .{1,40}|enviado desde mi .{1,40}|enviado do meu .{1,40})\s*$`)
)

// StripQuotes returns the new text of a reply's text/plain body: quoted
// lines, their attribution, Outlook's quoted original, the signature and a
// trailing "Sent from my …" removed; inline answers between quotes kept.
func StripQuotes(text string) string {
	lines := strings.Split(normalizeNewlines(text), "\n")
	// Cut at the first signature delimiter or Outlook original.
	for i, l := range lines {
		t := strings.TrimRight(l, " \t")
		if l == "-- " || t == "--" || outlookOriginal.MatchString(l) || outlookBlockAt(lines, i) {
			lines = lines[:i]
			break
		}
	}
	quoted := func(i int) bool { return strings.HasPrefix(strings.TrimLeft(lines[i], " \t"), ">") }
	// nextContent is the first non-blank line after i (len(lines) if none).
	nextContent := func(i int) int {
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) != "" {
				return j
			}
		}
		return len(lines)
	}
	drop := make([]bool, len(lines))
	for i := range lines {
		if quoted(i) {
			drop[i] = true
			continue
		}
		// An attribution introduces quoted text (or ends a message whose
		// quote was cut above); a line that merely ends in ":" before more
		// of the person's own text stays.
		if !strings.HasSuffix(strings.TrimSpace(lines[i]), ":") {
			continue
		}
		if n := nextContent(i); n < len(lines) && !quoted(n) {
			continue
		}
		if from, ok := attributionFrom(lines, i, quoted); ok {
			for j := from; j <= i; j++ {
				drop[j] = true
			}
		}
	}
	kept := lines[:0]
	for i, l := range lines {
		if !drop[i] {
			kept = append(kept, strings.TrimRight(l, " \t"))
		}
	}
	// Trailing blank lines and a client's footer go.
	for len(kept) > 0 {
		last := kept[len(kept)-1]
		if strings.TrimSpace(last) == "" || mobileFooter.MatchString(last) {
			kept = kept[:len(kept)-1]
			continue
		}
		break
	}
	return collapseBlank(strings.Join(kept, "\n"))
}

// attributionFrom reports whether line i (ending in ":") ends an
// attribution and where it starts: Gmail wraps long ones over two or
// three lines ("On Fri, …, Hestia <" / "h@x> wrote:"). It is one when it
// ends in "wrote:" or a translation, or starts like one ("On …", "Am …")
// and names an address or a date, as localised forms ending in
// "<h@x>:" do.
func attributionFrom(lines []string, i int, quoted func(int) bool) (int, bool) {
	is := func(text string) bool {
		return attributionEnd.MatchString(text) ||
			(attributionStart.MatchString(text) && strings.ContainsAny(text, "@0123456789"))
	}
	if !attributionStart.MatchString(lines[i]) {
		for j := i - 1; j >= 0 && j >= i-2; j-- {
			if strings.TrimSpace(lines[j]) == "" || quoted(j) {
				break
			}
			if attributionStart.MatchString(lines[j]) {
				return j, is(strings.TrimSpace(strings.Join(lines[j:i+1], " ")))
			}
		}
	}
	return i, is(strings.TrimSpace(lines[i]))
}

// outlookBlockAt reports whether Outlook's quoted original starts at line
// i: a rule of underscores followed by a From: line, or a From: line
// directly followed by Sent:/Date:.
func outlookBlockAt(lines []string, i int) bool {
	next := func(j int) (string, bool) {
		for j++; j < len(lines) && j <= i+3; j++ {
			if strings.TrimSpace(lines[j]) != "" {
				return lines[j], true
			}
		}
		return "", false
	}
	if outlookRule.MatchString(lines[i]) {
		n, ok := next(i)
		return ok && headerFrom.MatchString(n)
	}
	if headerFrom.MatchString(lines[i]) && i+1 < len(lines) {
		return headerSent.MatchString(lines[i+1])
	}
	return false
}

// StripSignature removes a trailing signature block (after a "-- " line)
// from a message that is not a reply, where everything else is content
// (a forwarded mail the owner wants read included).
func StripSignature(text string) string {
	lines := strings.Split(normalizeNewlines(text), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i] == "-- " || strings.TrimRight(lines[i], " \t") == "--" {
			// Only a short tail is a signature; a long one is content.
			if len(lines)-i <= 12 {
				lines = lines[:i]
			}
			break
		}
	}
	return collapseBlank(strings.TrimRight(strings.Join(lines, "\n"), " \t\n"))
}

// quoteClasses and cutIDs mark quoted history in HTML replies: Gmail's
// gmail_quote (attribution and blockquote), Thunderbird's moz-cite-prefix,
// Yahoo's yahoo_quoted, signatures; Outlook's divRplyFwdMsg/appendonsend
// blocks start the quoted original, so they and what follows them go.
var (
	quoteClasses = []string{"gmail_quote", "gmail_attr", "gmail_signature", "moz-cite-prefix", "moz-signature", "yahoo_quoted", "protonmail_quote"}
	cutIDs       = []string{"divRplyFwdMsg", "appendonsend", "stopSpelling", "mail-editor-reference-message-container"}
)

// HTMLReplyText renders an HTML-only reply to text without its quoted
// history (blockquotes and the clients' quote containers above).
func HTMLReplyText(s string) string {
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		return StripQuotes(parse.HTMLToText(s))
	}
	pruneQuotes(doc)
	var buf bytes.Buffer
	if err := html.Render(&buf, doc); err != nil {
		return StripQuotes(parse.HTMLToText(s))
	}
	// Outlook desktop's header block survives as text; the plain-text
	// rules catch it.
	return StripQuotes(parse.HTMLToText(buf.String()))
}

// pruneQuotes removes quote nodes under n, iteratively so hostile nesting
// cannot exhaust the stack (x/net/html already bounds tree depth).
func pruneQuotes(root *html.Node) {
	stack := []*html.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			switch {
			case c.Type == html.ElementNode && hasAttrValue(c, "id", cutIDs):
				// The quoted original: it and everything after it.
				for d := c; d != nil; {
					dn := d.NextSibling
					n.RemoveChild(d)
					d = dn
				}
				next = nil
			case c.Type == html.ElementNode && (c.Data == "blockquote" || hasClass(c, quoteClasses)):
				n.RemoveChild(c)
			default:
				stack = append(stack, c)
			}
			c = next
		}
	}
}

func hasAttrValue(n *html.Node, key string, values []string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			for _, v := range values {
				if strings.EqualFold(a.Val, v) {
					return true
				}
			}
		}
	}
	return false
}

func hasClass(n *html.Node, classes []string) bool {
	for _, a := range n.Attr {
		if a.Key != "class" {
			continue
		}
		for _, c := range strings.Fields(a.Val) {
			for _, want := range classes {
				if strings.EqualFold(c, want) {
					return true
				}
			}
		}
	}
	return false
}

var blankRun = lazyre.New(`\n[ \t]*\n([ \t]*\n)+`)

// collapseBlank trims the text and leaves at most one blank line between
// paragraphs.
func collapseBlank(s string) string {
	return strings.TrimSpace(blankRun.ReplaceAllString(s, "\n\n"))
}

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}
