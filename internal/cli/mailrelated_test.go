package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail"
)

// A search listing keeps related messages (found by meaning alone) under
// their own heading after the matches, and says when nothing matched.
func TestPrintSearchRelatedApart(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var out, errOut bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errOut}
	printSearch(env, mail.Result{Messages: []mail.Summary{},
		Related: []mail.Summary{{ID: 7, Subject: "Lunch", From: "a@x.org", Date: day, Related: true}}}, true)
	if !strings.Contains(errOut.String(), "no message matches") {
		t.Errorf("stderr %q does not say nothing matched", errOut.String())
	}
	heading, rest, ok := strings.Cut(out.String(), "related (close in meaning, none of the words):")
	if !ok || strings.TrimSpace(heading) != "" || !strings.Contains(rest, "≈") || !strings.Contains(rest, "Lunch") {
		t.Errorf("stdout %q: want only the related heading and the marked row", out.String())
	}

	out.Reset()
	errOut.Reset()
	printSearch(env, mail.Result{Messages: []mail.Summary{{ID: 3, Subject: "Alpha", From: "b@x.org", Date: day}},
		Related: []mail.Summary{{ID: 7, Subject: "Lunch", From: "a@x.org", Date: day, Related: true}}}, true)
	matches, rel, ok := strings.Cut(out.String(), "related (")
	if !ok || !strings.Contains(matches, "Alpha") || strings.Contains(matches, "Lunch") || strings.Contains(matches, "≈") || !strings.Contains(rel, "Lunch") {
		t.Errorf("stdout %q: the match then, apart, the related row", out.String())
	}
}
