package memory

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/untrusted"
)

// normalize folds case, accents and punctuation so "Café, Paris!" and
// "cafe paris" compare equal.
func normalize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range norm.NFKD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case unicode.IsLetter(r) || unicode.IsNumber(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		default:
			space = true
		}
	}
	return b.String()
}

// stop words carry no meaning for paraphrase detection.
// It is built once, on first use (not at every process start), and only read.
var stop = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("a an the is are was were be been to of in on at for and or but with by from as that this it its their his her they he she user s users i my me we our you your has have had do does not no so very") {
		m[w] = true
	}
	return m
})

func tokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(normalize(s)) {
		if !stop()[w] {
			out[w] = true
		}
	}
	return out
}

// paraphraseContainment is the share of the smaller entry's words found in
// the other above which two entries are taken to say the same thing.
const paraphraseContainment = 0.7

// FindDuplicate returns the existing entry that text duplicates (after
// normalising) or paraphrases (token max-containment ≥ 70 % with at least
// three meaningful words), or "".
func FindDuplicate(text string, existing []string) string {
	n := normalize(text)
	tt := tokens(text)
	for _, e := range existing {
		if normalize(e) == n {
			return e
		}
		et := tokens(e)
		small, big := tt, et
		if len(et) < len(tt) {
			small, big = et, tt
		}
		if len(small) < 3 {
			continue
		}
		common := 0
		for w := range small {
			if big[w] {
				common++
			}
		}
		if float64(common)/float64(len(small)) >= paraphraseContainment {
			return e
		}
	}
	return ""
}

var injectionRE = lazyre.New(`(?i)(ignore (all |any )?(previous|prior|above) (instructions|rules)|disregard (the |all )?(previous|prior|system)|you are now|new instructions:|system prompt|<\|im_(start|end)\|>|\[/?inst\]|do not (tell|ask) the user|without (asking|telling) the user|curl [^ ]+\s*\|\s*(sh|bash)|authorized_keys|api[_-]?key\s*[:=]|password\s*[:=]|BEGIN [A-Z ]*PRIVATE KEY)`)

// Scan refuses text that would be dangerous in every future system prompt:
// hidden or bidirectional control characters, chat-template tokens and
// instruction-like or credential-like patterns.
func Scan(text string) error {
	if untrusted.Contains(text) {
		return fmt.Errorf("%w: the text holds hidden characters or chat-template tokens", ErrRefused)
	}
	if m := injectionRE.FindString(text); m != "" {
		return fmt.Errorf("%w: the text looks like an instruction or a secret (%q), not a fact", ErrRefused, m)
	}
	return nil
}

// transientRE spots session state that does not belong in durable memory.
var transientRE = lazyre.New(`(?i)(\bchat[_ ]?id\b|\bsession[_ ]?id\b|\bturn[_ ]?id\b|\d{4}-\d{2}-\d{2}t\d{2}:\d{2}|\b(today|right now|currently|this (morning|afternoon|evening))\b)`)

// Warnings lists non-blocking concerns about a candidate fact for the
// review card: duplicate of an existing entry, transient state, or a
// pattern the scan would refuse.
func (p *Profile) Warnings(target, text string) []string {
	var out []string
	if err := Scan(text); err != nil {
		out = append(out, "unsafe: "+strings.TrimPrefix(err.Error(), ErrRefused.Error()+": "))
	}
	p.mu.Lock()
	cur, _ := p.Read(target)
	all := append(Entries(cur), p.allEntries(target)...)
	p.mu.Unlock()
	if d := FindDuplicate(text, all); d != "" {
		out = append(out, "duplicate of: "+clip(d))
	}
	if transientRE.MatchString(text) {
		out = append(out, "transient: looks like session state or a passing moment")
	}
	return out
}

// IsDuplicate reports whether err is a dedup refusal.
func IsDuplicate(err error) bool { return errors.Is(err, ErrDuplicate) }
