package contacts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/emersion/go-vcard"
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
	dec := vcard.NewDecoder(bytes.NewReader(data))
	var out []Card
	n := 0
	for {
		vc, err := decodeSafe(dec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
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
