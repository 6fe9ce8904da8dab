package journal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func openJournal(t *testing.T) (*Journal, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)}
	j, err := Open(context.Background(), filepath.Join(t.TempDir(), "mailops.db"), nil, c.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j, c
}

// fakeSender records sends and can fail or observe the journal mid-send.
type fakeSender struct {
	mu     sync.Mutex
	sent   []Draft
	err    error
	during func()
}

func (f *fakeSender) Send(ctx context.Context, account string, d Draft, raw []byte) error {
	if f.during != nil {
		f.during()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.sent = append(f.sent, d)
	return nil
}

type fakeFinder struct {
	ids []int64
	err error
	got []Expected
}

func (f *fakeFinder) FindSent(ctx context.Context, account string, exp Expected, from, to time.Time) ([]int64, error) {
	f.got = append(f.got, exp)
	return f.ids, f.err
}

var draft = Draft{From: "me@home.org", To: []string{"ann@x.org"}, Subject: "Hello", Body: "Hi Ann"}

func TestSendRecordsBeforeSMTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, _ := openJournal(t)
	s := &fakeSender{}
	s.during = func() {
		ops, _ := j.List(ctx, "", 10)
		if len(ops) != 1 || ops[0].State != StateStarted || ops[0].Attempts != 1 || ops[0].Draft.Body != "Hi Ann" {
			t.Errorf("during SMTP the journal holds %+v, want one started op", ops)
		}
	}
	op, err := j.Send(ctx, KindSend, "work", draft, s)
	if err != nil {
		t.Fatal(err)
	}
	if op.State != StateSent || len(s.sent) != 1 || op.MessageID == "" || s.sent[0].MessageID != op.MessageID {
		t.Errorf("op = %+v sent %d", op, len(s.sent))
	}
}

func TestSendOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"refused", &SendError{Delivered: "no", Err: errors.New("550 no such user")}, StateFailed},
		{"broken during data", &SendError{Delivered: "maybe", Err: errors.New("connection reset")}, StateUnknown},
		{"unclassified", errors.New("boom"), StateUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j, _ := openJournal(t)
			op, err := j.Send(context.Background(), KindSend, "work", draft, &fakeSender{err: c.err})
			if err != nil || op.State != c.want || op.Error == "" {
				t.Errorf("op = %+v, %v; want state %s", op, err, c.want)
			}
		})
	}
}

func TestDraftValidation(t *testing.T) {
	t.Parallel()
	j, _ := openJournal(t)
	bad := []Draft{
		{From: "me@home.org", Subject: "x"},
		{From: "me@home.org", To: []string{"not an address"}, Subject: "x"},
		{From: "me", To: []string{"a@b.c"}, Subject: "x"},
		{From: "me@home.org", To: []string{"a@b.c"}, Subject: "two\nlines"},
		{From: "me@home.org", To: []string{"a@b.c"}},
	}
	for _, d := range bad {
		if _, err := j.Send(context.Background(), KindSend, "w", d, &fakeSender{}); err == nil {
			t.Errorf("%+v accepted", d)
		}
	}
	if _, err := j.Send(context.Background(), KindReply, "w", draft, &fakeSender{}); err == nil {
		t.Error("reply without In-Reply-To accepted")
	}
	ops, _ := j.List(context.Background(), "", 10)
	if len(ops) != 0 {
		t.Errorf("invalid drafts were journaled: %d", len(ops))
	}
}

func TestScheduledClaimIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, c := openJournal(t)
	for i := 0; i < 5; i++ {
		d := draft
		d.Subject = fmt.Sprint("s", i)
		if _, err := j.Schedule(ctx, "work", d, c.now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Schedule(ctx, "work", draft, c.now().Add(-time.Hour)); err == nil {
		t.Error("schedule in the past accepted")
	}
	s := &fakeSender{}
	if n, _ := j.SendDue(ctx, s); n != 0 {
		t.Fatalf("sent %d before due", n)
	}
	c.add(2 * time.Hour)
	// Two schedulers (two processes on one file) race for the same rows.
	j2, err := Open(ctx, j.db.Path, nil, c.now)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	var wg sync.WaitGroup
	for _, jj := range []*Journal{j, j2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := jj.SendDue(ctx, s); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(s.sent) != 5 {
		t.Fatalf("sent %d messages, want each of 5 exactly once", len(s.sent))
	}
	seen := map[string]bool{}
	for _, d := range s.sent {
		if seen[d.Subject] {
			t.Errorf("%s sent twice", d.Subject)
		}
		seen[d.Subject] = true
	}
}

func TestCrashAfterClaimNeverResends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, c := openJournal(t)
	op, _ := j.Schedule(ctx, "work", draft, c.now())
	// Simulate a process that claimed the row and died before recording.
	s := &fakeSender{}
	s.during = func() { panic("crash") }
	func() {
		defer func() { recover() }()
		j.SendDue(ctx, s)
	}()
	got, _ := j.Get(ctx, op.ID)
	if got.State != StateStarted {
		t.Fatalf("after crash state = %s", got.State)
	}
	s.during = nil
	if n, _ := j.SendDue(ctx, s); n != 0 || len(s.sent) != 0 {
		t.Fatal("a claimed operation was sent again")
	}
	f := &fakeFinder{}
	// Not stale yet: left alone.
	if _, _, err := j.Confirm(ctx, f, ConfirmOptions{MaxChecks: 2}); err != nil || len(f.got) != 0 {
		t.Fatalf("fresh started op checked: %v %d", err, len(f.got))
	}
	c.add(2 * time.Minute)
	j.Confirm(ctx, f, ConfirmOptions{MaxChecks: 2})
	c.add(2 * time.Minute)
	_, review, _ := j.Confirm(ctx, f, ConfirmOptions{MaxChecks: 2})
	got, _ = j.Get(ctx, op.ID)
	if review != 1 || got.State != StateNeedsReview || got.Checks != 2 || len(s.sent) != 0 {
		t.Errorf("after checks: %+v", got)
	}
	// needs_review is final for the confirmation loop.
	j.Confirm(ctx, f, ConfirmOptions{MaxChecks: 2})
	if len(f.got) != 2 {
		t.Errorf("needs_review op checked again (%d checks)", len(f.got))
	}
}

func TestConfirmation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, _ := openJournal(t)
	d := draft
	d.InReplyTo = "orig@x"
	op, _ := j.Send(ctx, KindReply, "work", d, &fakeSender{})
	amb := &fakeFinder{ids: []int64{1, 2}}
	j.Confirm(ctx, amb, ConfirmOptions{})
	got, _ := j.Get(ctx, op.ID)
	if got.State != StateSent || !strings.Contains(got.Evidence, "ambiguous") {
		t.Errorf("ambiguous: %+v", got)
	}
	if amb.got[0].InReplyTo != "orig@x" || amb.got[0].MessageID != op.MessageID {
		t.Errorf("expected = %+v", amb.got[0])
	}
	confirmed, _, _ := j.Confirm(ctx, &fakeFinder{ids: []int64{7}}, ConfirmOptions{})
	got, _ = j.Get(ctx, op.ID)
	if confirmed != 1 || got.State != StateConfirmed || !strings.Contains(got.Evidence, "7") {
		t.Errorf("confirmed: %+v", got)
	}
}

func TestBuildMessage(t *testing.T) {
	t.Parallel()
	d := Draft{From: "me@home.org", To: []string{"a@x.org"}, Cc: []string{"c@x.org"}, Bcc: []string{"secret@x.org"},
		Subject: "Grüße", Body: "Ciao è tutto ok\n", InReplyTo: "p@x", References: []string{"r@x"}, MessageID: "m@hestia"}
	raw, err := BuildMessage(d, time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{"Message-Id: <m@hestia>", "In-Reply-To: <p@x>", "References: <r@x> <p@x>", "Cc: <c@x.org>", "=?utf-8?"} {
		if !strings.Contains(s, want) {
			t.Errorf("message lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "secret@") {
		t.Error("Bcc leaked into the header")
	}
}
