// Package graphcards mirrors Microsoft 365 contact folders, read through
// Microsoft Graph's delta query (/me/contactFolders/{id}/contacts/delta,
// paged, the round's deltaLink kept in the folder's .hestia-graph.json; a
// 410 Gone starts a full round), into vdir folders of vCard 4.0 files
// (DATA/contacts/graph/<account>/<folder>) that the contacts index reads
// like any address book. The mirror is read-only, like CardDAV's: no tool
// writes contacts.
//
// Mapping (Card): displayName → FN; surname, givenName, middleName, title
// and generation → N; nickName → NICKNAME; companyName and department →
// ORG; jobTitle → TITLE; profession → ROLE; emailAddresses → EMAIL (the
// first PREF=1); businessPhones, homePhones and mobilePhone → TEL with
// TYPE work, home and cell; the three postal addresses → ADR with TYPE
// home, work or none; birthday → BDAY; personalNotes → NOTE; categories →
// CATEGORIES; businessHomePage → URL; lastModifiedDateTime → REV; the id →
// UID. Text is escaped as RFC 6350 §3.4 asks, control characters dropped.
package graphcards

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/hestia-dev/hestia/internal/contacts"
)

// Contact is the part of a Graph contact the mirror reads.
type Contact struct {
	ID               string   `json:"id"`
	ChangeKey        string   `json:"changeKey"`
	DisplayName      string   `json:"displayName"`
	GivenName        string   `json:"givenName"`
	MiddleName       string   `json:"middleName"`
	Surname          string   `json:"surname"`
	Title            string   `json:"title"`
	Generation       string   `json:"generation"`
	NickName         string   `json:"nickName"`
	JobTitle         string   `json:"jobTitle"`
	Profession       string   `json:"profession"`
	CompanyName      string   `json:"companyName"`
	Department       string   `json:"department"`
	EmailAddresses   []Email  `json:"emailAddresses"`
	BusinessPhones   []string `json:"businessPhones"`
	HomePhones       []string `json:"homePhones"`
	MobilePhone      string   `json:"mobilePhone"`
	HomeAddress      *Postal  `json:"homeAddress"`
	BusinessAddress  *Postal  `json:"businessAddress"`
	OtherAddress     *Postal  `json:"otherAddress"`
	Birthday         string   `json:"birthday"`
	PersonalNotes    string   `json:"personalNotes"`
	Categories       []string `json:"categories"`
	BusinessHomePage string   `json:"businessHomePage"`
	LastModified     string   `json:"lastModifiedDateTime"`
}

// Email is one address.
type Email struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

// Postal is a physicalAddress.
type Postal struct {
	Street          string `json:"street"`
	City            string `json:"city"`
	State           string `json:"state"`
	CountryOrRegion string `json:"countryOrRegion"`
	PostalCode      string `json:"postalCode"`
}

// ErrEmpty marks a contact with nothing to search by: no name, address
// or number.
var ErrEmpty = errors.New("contact has no name, email address or phone number")

// maxText bounds one value (a pasted document in the notes).
const maxText = 32 << 10

// text escapes a TEXT value (RFC 6350 §3.4): backslash, comma and
// newline; other control characters are dropped. A semicolon is escaped
// only in a component of a structured value (component), where it would
// split the value; readers do not all unescape it elsewhere.
func text(s string) string { return escape(s, false) }

func component(s string) string { return escape(s, true) }

func escape(s string, structured bool) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	if len(s) > maxText {
		s = s[:maxText]
	}
	s = strings.ToValidUTF8(strings.TrimSpace(s), "")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\', r == ',', r == ';' && structured:
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writer builds the card, folding lines at 75 octets (RFC 6350 §3.2)
// without splitting a UTF-8 sequence.
type writer struct{ b strings.Builder }

func (w *writer) line(name, value string) {
	l := name + ":" + value
	// A continuation line starts with a space: 74 octets of content.
	for limit := 75; len(l) > limit; limit = 74 {
		cut := limit
		for cut > 1 && !utfStart(l[cut]) {
			cut--
		}
		w.b.WriteString(l[:cut] + "\r\n ")
		l = l[cut:]
	}
	w.b.WriteString(l + "\r\n")
}

func utfStart(c byte) bool { return c&0xC0 != 0x80 }

func joinText(parts ...string) string {
	for i, p := range parts {
		parts[i] = component(p)
	}
	return strings.Join(parts, ";")
}

func nonEmpty(parts ...string) bool {
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			return true
		}
	}
	return false
}

// Card writes a Graph contact as a vCard 4.0 (RFC 6350).
func Card(c *Contact) ([]byte, error) {
	var w writer
	w.b.WriteString("BEGIN:VCARD\r\nVERSION:4.0\r\n")
	w.line("PRODID", "-//Hestia//Microsoft Graph mirror//EN")
	w.line("UID", text(c.ID))
	fn := strings.TrimSpace(c.DisplayName)
	if fn == "" {
		fn = strings.Join(strings.Fields(strings.Join([]string{c.Title, c.GivenName, c.MiddleName, c.Surname, c.Generation}, " ")), " ")
	}
	if fn == "" {
		fn = strings.TrimSpace(c.CompanyName)
	}
	var emails []string
	for _, e := range c.EmailAddresses {
		if a := strings.TrimSpace(e.Address); contacts.NormEmail(a) != "" && !strings.ContainsFunc(a, unicode.IsControl) {
			emails = append(emails, a)
		}
	}
	if fn == "" && len(emails) > 0 {
		fn = emails[0]
	}
	phones := 0
	for _, list := range [][]string{c.BusinessPhones, c.HomePhones, {c.MobilePhone}} {
		for _, p := range list {
			if contacts.NormPhone(p) != "" {
				phones++ // a number the index can search by
			}
		}
	}
	if text(fn) == "" && phones == 0 {
		return nil, fmt.Errorf("contact %s: %w", c.ID, ErrEmpty)
	}
	w.line("FN", text(fn))
	if nonEmpty(c.Surname, c.GivenName, c.MiddleName, c.Title, c.Generation) {
		w.line("N", joinText(c.Surname, c.GivenName, c.MiddleName, c.Title, c.Generation))
	}
	if nonEmpty(c.NickName) {
		w.line("NICKNAME", text(c.NickName))
	}
	if nonEmpty(c.CompanyName, c.Department) {
		w.line("ORG", joinText(c.CompanyName, c.Department))
	}
	if nonEmpty(c.JobTitle) {
		w.line("TITLE", text(c.JobTitle))
	}
	if nonEmpty(c.Profession) {
		w.line("ROLE", text(c.Profession))
	}
	for i, a := range emails {
		name := "EMAIL"
		if i == 0 && len(emails) > 1 {
			name += ";PREF=1"
		}
		w.line(name, text(a))
	}
	for _, t := range []struct {
		typ  string
		list []string
	}{{"work,voice", c.BusinessPhones}, {"home,voice", c.HomePhones}, {"cell", []string{c.MobilePhone}}} {
		for _, p := range t.list {
			if nonEmpty(p) {
				w.line("TEL;TYPE="+t.typ, text(p))
			}
		}
	}
	for _, a := range []struct {
		typ string
		p   *Postal
	}{{";TYPE=home", c.HomeAddress}, {";TYPE=work", c.BusinessAddress}, {"", c.OtherAddress}} {
		if a.p != nil && nonEmpty(a.p.Street, a.p.City, a.p.State, a.p.PostalCode, a.p.CountryOrRegion) {
			w.line("ADR"+a.typ, joinText("", "", a.p.Street, a.p.City, a.p.State, a.p.PostalCode, a.p.CountryOrRegion))
		}
	}
	if len(c.Birthday) >= 10 {
		if d, err := time.Parse("2006-01-02", c.Birthday[:10]); err == nil {
			w.line("BDAY", d.Format("20060102"))
		}
	}
	if nonEmpty(c.PersonalNotes) {
		w.line("NOTE", text(c.PersonalNotes))
	}
	var cats []string
	for _, x := range c.Categories {
		if x = text(x); x != "" {
			cats = append(cats, x)
		}
	}
	if len(cats) > 0 {
		w.line("CATEGORIES", strings.Join(cats, ","))
	}
	if u := strings.TrimSpace(c.BusinessHomePage); (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && !strings.ContainsFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		w.line("URL", u)
	}
	if t, err := time.Parse(time.RFC3339Nano, c.LastModified); err == nil {
		w.line("REV", t.UTC().Format("20060102T150405Z"))
	}
	w.b.WriteString("END:VCARD\r\n")
	return []byte(w.b.String()), nil
}
