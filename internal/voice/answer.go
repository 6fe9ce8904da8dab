package voice

import (
	"strings"
	"unicode"
)

// Answer is what a spoken reply to an approval card decides.
type Answer int

// Answers. NotAnAnswer: the utterance is an ordinary message.
const (
	NotAnAnswer Answer = iota
	Approve
	Deny
)

// Only these whole utterances decide a card. The match is strict on
// purpose: "approve" inside a longer sentence ("don't approve that until
// I've read it") must never approve, and a misheard word must rather
// become a message the model sees than an approval.
var (
	approvePhrases = set("approve", "approved", "approve it", "i approve", "yes", "yes please", "yes approve",
		"yes approve it", "yes go ahead", "yeah", "yep", "go ahead", "do it", "okay", "ok", "allow", "allow it")
	denyPhrases = set("deny", "denied", "deny it", "i deny", "no", "no thanks", "no thank you", "nope",
		"no deny", "no deny it", "don't", "do not", "reject", "reject it", "decline", "don't do it", "do not do it")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// maxAnswerWords bounds what can be an answer at all.
const maxAnswerWords = 4

// ParseAnswer reads a transcript as an answer to an approval card:
// Approve or Deny only when the whole utterance, less punctuation, case
// and filler ("uh", "please" is part of a phrase), is one of a few fixed
// phrases of at most four words; anything else is NotAnAnswer.
func ParseAnswer(transcript string) Answer {
	words := strings.FieldsFunc(strings.ToLower(transcript), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\'' && r != '’'
	})
	kept := words[:0]
	for _, w := range words {
		w = strings.Trim(strings.ReplaceAll(w, "’", "'"), "'")
		switch w {
		case "", "uh", "um", "er", "erm", "hmm":
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) == 0 || len(kept) > maxAnswerWords {
		return NotAnAnswer
	}
	// A transcript that had digits or other symbols beyond punctuation is
	// not a bare answer ("no 2 files").
	if strings.ContainsFunc(transcript, unicode.IsDigit) {
		return NotAnAnswer
	}
	p := strings.Join(kept, " ")
	switch {
	case approvePhrases[p]:
		return Approve
	case denyPhrases[p]:
		return Deny
	}
	return NotAnAnswer
}
