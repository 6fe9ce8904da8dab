package contacts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/quotedprintable"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-vcard"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// MaxFileBytes bounds one .vcf file.
const MaxFileBytes = 8 << 20

// ErrMalformed marks vCard data that cannot be parsed.
var ErrMalformed = errors.New("malformed vCard data")

// Card is the part of one vCard (RFC 6350, and 3.0 of RFC 2426) that
// contact search and recipient resolution use.
type Card struct {
	UID       string   `json:"uid,omitempty"`
	Name      string   `json:"name"` // FN, or built from N
	Given     string   `json:"given,omitempty"`
	Family    string   `json:"family,omitempty"`
	Nicknames []string `json:"nicknames,omitempty"`
	Org       string   `json:"org,omitempty"`
	Title     string   `json:"title,omitempty"`
	Emails    []string `json:"emails,omitempty"`
	Phones    []string `json:"phones,omitempty"`
	Note      string   `json:"note,omitempty"`
}

// ParseVCF parses a stream of vCards. A card without any name, address or
// phone is dropped; a syntax error makes the stream an error wrapping
// ErrMalformed.
func ParseVCF(r io.Reader) ([]Card, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading vCard data: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrMalformed, MaxFileBytes)
	}
	data, err = checkVCF(data)
	if err != nil {
		return nil, err
	}
	dec := vcard.NewDecoder(bytes.NewReader(data))
	var out []Card
	n := 0
	for {
		vc, err := decodeSafe(dec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: card %d: %v", ErrMalformed, n+1, err)
		}
		n++
		if c, ok := fromVCard(vc); ok {
			out = append(out, c)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no BEGIN:VCARD", ErrMalformed)
	}
	return out, nil
}

// checkVCF checks a file's card structure (go-vcard reports structural
// errors without a place, and reads text outside a card as nothing), so
// that a broken file is refused with the line and what is wrong. It
// returns the cards as unfolded lines go-vcard reads well: without a
// UTF-8 byte order mark, and with vCard 2.1 habits (Android and Outlook
// exports) rewritten — quoted-printable values decoded, bare parameters
// ("EMAIL;INTERNET:") made TYPE= parameters, which go-vcard would
// otherwise read as the value.
func checkVCF(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if bytes.HasPrefix(data, []byte("\xff\xfe")) || bytes.HasPrefix(data, []byte("\xfe\xff")) {
		return nil, fmt.Errorf("%w: the file is UTF-16; vCard files must be UTF-8", ErrMalformed)
	}
	var out bytes.Buffer
	out.Grow(len(data))
	begun := 0 // line of the open card's BEGIN, 0 outside a card
	cards := 0
	lines := bytes.Split(data, []byte("\n"))
	for i := 0; i < len(lines); i++ {
		n := i + 1
		l := string(bytes.TrimRight(lines[i], "\r"))
		// Unfold (RFC 6350 §3.2): continuation lines start with a space
		// or a tab.
		for i+1 < len(lines) && len(lines[i+1]) > 0 && (lines[i+1][0] == ' ' || lines[i+1][0] == '\t') {
			i++
			l += string(bytes.TrimRight(lines[i][1:], "\r"))
		}
		// A continuation after a blank line has nothing to continue.
		if l = strings.TrimLeft(l, " \t"); strings.TrimSpace(l) == "" {
			continue
		}
		key, value, _ := cutProp(l)
		if isQP(key) {
			// A quoted-printable soft line break ("=" at the end)
			// continues the value on the next line.
			for strings.HasSuffix(l, "=") && i+1 < len(lines) && !isEnd(lines[i+1]) {
				i++
				l = l[:len(l)-1] + string(bytes.TrimRight(lines[i], "\r"))
			}
			key, value, _ = cutProp(l)
		}
		name := strings.ToUpper(strings.TrimSpace(key))
		if g, rest, ok := strings.Cut(name, "."); ok && !strings.Contains(g, ";") {
			name = rest
		}
		name, _, _ = strings.Cut(name, ";")
		uv := strings.ToUpper(strings.TrimSpace(value))
		switch {
		case begun == 0 && name == "BEGIN" && uv == "VCARD":
			begun = n
			cards++
		case begun == 0 && name == "BEGIN":
			return nil, fmt.Errorf("%w: line %d: BEGIN:%s is not a vCard", ErrMalformed, n, short(uv))
		case begun == 0:
			return nil, fmt.Errorf("%w: line %d: %q is outside any BEGIN:VCARD … END:VCARD", ErrMalformed, n, short(l))
		case name == "BEGIN" && uv == "VCARD":
			return nil, fmt.Errorf("%w: line %d: BEGIN:VCARD inside the card begun on line %d (its END:VCARD is missing)", ErrMalformed, n, begun)
		case name == "END" && uv == "VCARD":
			begun = 0
		case name == "END":
			return nil, fmt.Errorf("%w: line %d: END:%s closes the card begun on line %d", ErrMalformed, n, short(uv), begun)
		default:
			// Lines inside a card that are not properties (a bare
			// "FN", an Outlook note's stray text) are left to go-vcard,
			// which drops them: real address books have them, and the
			// rest of the card is good.
			l = rewriteProp(key, value, l)
		}
		out.WriteString(l)
		out.WriteString("\r\n")
	}
	if begun != 0 {
		return nil, fmt.Errorf("%w: the card begun on line %d has no END:VCARD (file truncated?)", ErrMalformed, begun)
	}
	if cards == 0 {
		return nil, fmt.Errorf("%w: no BEGIN:VCARD", ErrMalformed)
	}
	return out.Bytes(), nil
}

// isQP reports whether a property's parameters say its value is
// quoted-printable (vCard 2.1: "ENCODING=QUOTED-PRINTABLE" or a bare
// "QUOTED-PRINTABLE").
func isQP(key string) bool {
	for _, p := range splitParams(key)[1:] {
		k, v, hasEq := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !hasEq && strings.EqualFold(k, "QUOTED-PRINTABLE") || hasEq && strings.EqualFold(k, "ENCODING") && strings.EqualFold(v, "QUOTED-PRINTABLE") {
			return true
		}
	}
	return false
}

func isEnd(l []byte) bool {
	return strings.EqualFold(strings.TrimSpace(string(l)), "END:VCARD")
}

// cutProp splits a content line at the first ':' outside a quoted
// parameter value.
func cutProp(l string) (key, value string, ok bool) {
	quoted := false
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '"':
			quoted = !quoted
		case ':':
			if !quoted {
				return l[:i], l[i+1:], true
			}
		}
	}
	return l, "", false
}

// splitParams splits "NAME;P1;P2=x" at ';' outside quotes.
func splitParams(key string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '"':
			quoted = !quoted
		case ';':
			if !quoted {
				out = append(out, key[start:i])
				start = i + 1
			}
		}
	}
	return append(out, key[start:])
}

// rewriteProp rewrites one property line's vCard 2.1 parameters (see
// checkVCF); other lines come back unchanged.
func rewriteProp(key, value, line string) string {
	params := splitParams(key)
	if len(params) == 1 {
		return line
	}
	qp, charset, changed := false, "", false
	kept := params[:1]
	for _, p := range params[1:] {
		k, v, hasEq := strings.Cut(p, "=")
		switch uk := strings.ToUpper(strings.TrimSpace(k)); {
		case p == "":
			changed = true
		case !hasEq && uk == "QUOTED-PRINTABLE", hasEq && uk == "ENCODING" && strings.EqualFold(v, "QUOTED-PRINTABLE"):
			qp, changed = true, true
		case hasEq && uk == "CHARSET":
			charset = v
			kept = append(kept, p)
		case !hasEq && (uk == "BASE64" || uk == "B"):
			kept, changed = append(kept, "ENCODING="+k), true
		case !hasEq:
			kept, changed = append(kept, "TYPE="+k), true
		default:
			kept = append(kept, p)
		}
	}
	if !changed {
		return line
	}
	if qp {
		value = decodeQP(value, charset)
		// The charset no longer applies: the value is UTF-8 now.
		var noCharset []string
		for _, p := range kept {
			if k, _, ok := strings.Cut(p, "="); !ok || !strings.EqualFold(strings.TrimSpace(k), "CHARSET") {
				noCharset = append(noCharset, p)
			}
		}
		kept = noCharset
	}
	return strings.Join(kept, ";") + ":" + value
}

// decodeQP decodes a quoted-printable value (RFC 2045 §6.7) to UTF-8,
// reading non-UTF-8 bytes as Windows-1252 (what Outlook writes), and
// escapes line breaks as vCard text does. A value that does not decode is
// kept as it was.
func decodeQP(v, charset string) string {
	b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(v)))
	if err != nil {
		return v
	}
	if !utf8.Valid(b) && !strings.EqualFold(charset, "UTF-8") {
		if d, err := charmap.Windows1252.NewDecoder().Bytes(b); err == nil {
			b = d
		}
	}
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	return strings.ReplaceAll(s, "\n", `\n`)
}

// short bounds text quoted in an error.
func short(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

func decodeSafe(dec *vcard.Decoder) (c vcard.Card, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("decoder: %v", p)
		}
	}()
	return dec.Decode()
}

func fromVCard(vc vcard.Card) (Card, bool) {
	var c Card
	c.UID = strings.TrimSpace(vc.Value(vcard.FieldUID))
	c.Name = clean(vc.PreferredValue(vcard.FieldFormattedName))
	if n := vc.Name(); n != nil {
		c.Given, c.Family = clean(n.GivenName), clean(n.FamilyName)
		if c.Name == "" {
			c.Name = strings.TrimSpace(strings.Join(nonEmpty(n.HonorificPrefix, n.GivenName, n.AdditionalName, n.FamilyName, n.HonorificSuffix), " "))
		}
	}
	for _, v := range vc.Values(vcard.FieldNickname) {
		for _, nick := range strings.Split(v, ",") {
			if nick = clean(nick); nick != "" {
				c.Nicknames = append(c.Nicknames, nick)
			}
		}
	}
	if org := vc.Value(vcard.FieldOrganization); org != "" {
		c.Org = clean(strings.Join(nonEmpty(strings.Split(org, ";")...), ", "))
	}
	c.Title = clean(vc.Value(vcard.FieldTitle))
	c.Note = clean(vc.Value(vcard.FieldNote))
	seen := map[string]bool{}
	for _, v := range vc.Values(vcard.FieldEmail) {
		e := NormEmail(v)
		if e != "" && !seen[e] {
			seen[e] = true
			c.Emails = append(c.Emails, e)
		}
	}
	for _, v := range vc.Values(vcard.FieldTelephone) {
		v = strings.TrimPrefix(strings.TrimSpace(v), "tel:")
		if NormPhone(v) != "" && !seen["tel:"+NormPhone(v)] {
			seen["tel:"+NormPhone(v)] = true
			c.Phones = append(c.Phones, v)
		}
	}
	if c.Name == "" && len(c.Emails) > 0 {
		c.Name = c.Emails[0]
	}
	return c, c.Name != "" || len(c.Phones) > 0
}

func nonEmpty(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// clean drops control characters and bounds the length of a field.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500])
	}
	return s
}

// NormEmail lower-cases an address and strips a mailto: prefix; it returns
// "" for values without an @.
func NormEmail(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "mailto:")
	if i := strings.LastIndex(s, "<"); i >= 0 && strings.HasSuffix(s, ">") {
		s = s[i+1 : len(s)-1]
	}
	if !strings.Contains(s, "@") || strings.ContainsAny(s, " \t<>,;") {
		return ""
	}
	return s
}

// NormPhone reduces a number to digits, with an international 00 prefix
// turned into nothing ("+39 02 1234" and "0039 02 1234" compare equal).
// Numbers shorter than 5 digits are not keys.
func NormPhone(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	d := strings.TrimPrefix(b.String(), "00")
	if len(d) < 5 {
		return ""
	}
	return d
}

// phoneQ is a search for a phone number: its digits, and whether it was
// written in international form (+39…, 0039…).
type phoneQ struct {
	digits string
	intl   bool
}

// phoneQuery reads a search text that is a phone number in any spelling
// ("+39 02 1234", "02-1234", "(02) 1234"): only digits, spaces and
// + - . ( ) /, with at least four digits.
func phoneQuery(text string) (phoneQ, bool) {
	text = strings.TrimSpace(text)
	var d strings.Builder
	for _, r := range text {
		switch {
		case r >= '0' && r <= '9':
			d.WriteRune(r)
		case strings.ContainsRune(" +-.()/", r):
		default:
			return phoneQ{}, false
		}
	}
	q := phoneQ{digits: d.String(), intl: strings.HasPrefix(text, "+") || strings.HasPrefix(text, "00")}
	if q.intl {
		q.digits = strings.TrimPrefix(q.digits, "00")
	}
	return q, len(q.digits) >= 4
}

// match reports whether a card's number contains the searched digits. A
// number is compared in its international digits (E.164 without "+") when
// written so and as written otherwise; the search matches either spelling
// of the other: "+39 02 1234" finds "02 1234 5678" (the country code
// dropped) and "02 1234" finds "+39 02 1234 5678". No default region is
// configured, so a national number is never given a country code itself.
func (q phoneQ) match(number string) bool {
	n := NormPhone(number)
	if n == "" {
		return false
	}
	if strings.Contains(n, q.digits) {
		return true
	}
	if q.intl {
		// Drop a country code of one to three digits (ITU E.164), and
		// try the national form with a trunk 0 as well.
		for k := 1; k <= 3 && len(q.digits)-k >= 4; k++ {
			rest := q.digits[k:]
			if strings.HasPrefix(n, rest) || strings.HasPrefix(n, "0"+rest) || strings.HasPrefix(strings.TrimPrefix(n, "0"), rest) {
				return true
			}
		}
	}
	if rest, ok := strings.CutPrefix(q.digits, "0"); ok && len(rest) >= 6 && strings.Contains(n, rest) && len(n) > len(q.digits) {
		// A national spelling (trunk 0) of an international number
		// whose country drops the 0 (+33 1… written 01…).
		return true
	}
	return false
}

// phoneKey compares numbers by their last nine digits so that national
// and international spellings of one number meet.
func phoneKey(s string) string {
	d := NormPhone(s)
	if len(d) > 9 {
		d = d[len(d)-9:]
	}
	return d
}

// Fold lower-cases and strips diacritics ("Núñez" → "nunez") for name
// matching.
func Fold(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		out = s
	}
	return strings.ToLower(out)
}
