package mail

import (
	"context"
	"testing"
	"time"
)

func TestNotmuchDefaultThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	if _, err := s.Import(ctx, corpus(t, "notmuch/test/corpora/default"), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Stats(ctx)
	// notmuch itself counts 52 messages in 24 threads in this corpus.
	if st.Messages != 52 || st.Threads != 24 {
		t.Errorf("stats = %+v, want 52 messages in 24 threads", st)
	}
	cases := []struct {
		dir               string
		messages, threads int
	}{
		// Two conversations, one of them only linked through a ghost
		// (never delivered) ticket reference, one with a fake root.
		{"threading/ghost-root", 9, 2},
		{"threading/parent-priority", 3, 1},
		// 210 files, 34 of them second copies of the same Message-ID.
		{"lkml", 176, 7},
	}
	for _, c := range cases {
		s := openStore(t, nil)
		if _, err := s.Import(ctx, corpus(t, "notmuch/test/corpora/"+c.dir), ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		st, _ := s.Stats(ctx)
		if st.Messages != c.messages || st.Threads != c.threads {
			t.Errorf("%s: %+v, want %d messages in %d threads", c.dir, st, c.messages, c.threads)
		}
	}
}

func TestThreadRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	day := func(d int) string {
		return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).AddDate(0, 0, d).Format(time.RFC1123Z)
	}
	type m struct{ key, raw string }
	cases := []struct {
		name  string
		msgs  []m
		same  [][2]string // pairs that must share a thread
		apart [][2]string // pairs that must not
	}{
		{"reply arrives before parent", []m{
			{"child", msg("c@x", "b@x.org", "a@x.org", "Re: plan", day(1), "ok", "In-Reply-To: <p@x>", "References: <p@x>")},
			{"parent", msg("p@x", "a@x.org", "b@x.org", "plan", day(0), "the plan")},
		}, [][2]string{{"child", "parent"}}, nil},
		{"siblings under a missing parent", []m{
			{"s1", msg("s1@x", "b@x.org", "a@x.org", "Re: ghost", day(1), "one", "References: <ghost@x>")},
			{"s2", msg("s2@x", "c@x.org", "a@x.org", "Re: ghost", day(40), "two", "References: <ghost@x>")},
		}, [][2]string{{"s1", "s2"}}, nil},
		{"gmail thread id without reply headers", []m{
			{"g1", msg("g1@x", "a@x.org", "b@x.org", "one topic", day(0), "x", "X-GM-THRID: 123")},
			{"g2", msg("g2@x", "z@y.org", "q@y.org", "another subject", day(90), "y", "X-GM-THRID: 123")},
		}, [][2]string{{"g1", "g2"}}, nil},
		{"subject and participant within 14 days", []m{
			{"a", msg("a@x", "ann@x.org", "bob@x.org", "Budget 2026", day(0), "x")},
			{"b", msg("b@x", "bob@x.org", "ann@x.org", "RE: [team] Budget 2026", day(10), "y")},
			{"late", msg("late@x", "ann@x.org", "bob@x.org", "Budget 2026", day(40), "z")},
			{"stranger", msg("st@x", "eve@y.org", "mal@y.org", "Budget 2026", day(2), "w")},
		}, [][2]string{{"a", "b"}}, [][2]string{{"a", "late"}, {"a", "stranger"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := openStore(t, nil)
			ids := map[string]int64{}
			for _, mm := range c.msgs {
				// One at a time, in the listed order.
				if _, err := s.Ingest(ctx, []Item{{Account: "a", Mailbox: "INBOX", Path: mm.key, Raw: []byte(mm.raw)}}); err != nil {
					t.Fatal(err)
				}
			}
			for _, mm := range c.msgs {
				var id int64
				s.DB().QueryRowContext(ctx, `SELECT thread_id FROM messages m JOIN message_paths p ON p.message_id = m.id WHERE p.path = ?`, mm.key).Scan(&id)
				ids[mm.key] = id
			}
			for _, p := range c.same {
				if ids[p[0]] != ids[p[1]] || ids[p[0]] == 0 {
					t.Errorf("%s and %s in threads %d and %d, want same", p[0], p[1], ids[p[0]], ids[p[1]])
				}
			}
			for _, p := range c.apart {
				if ids[p[0]] == ids[p[1]] {
					t.Errorf("%s and %s share thread %d", p[0], p[1], ids[p[0]])
				}
			}
		})
	}
}

func TestReingestKeepsThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	raw := []byte(msg("k@x", "a@x.org", "b@x.org", "keep", "Mon, 5 Jan 2026 10:00:00 +0000", "x"))
	s.Ingest(ctx, []Item{{Account: "a", Mailbox: "INBOX", Path: "p1", Raw: raw}})
	var t1, t2 int64
	s.DB().QueryRow(`SELECT thread_id FROM messages`).Scan(&t1)
	// A later message with the same subject would match by subject; the
	// known identity must keep its own thread regardless.
	s.Ingest(ctx, []Item{{Account: "a", Mailbox: "Archive", Path: "p2", Raw: raw}})
	s.DB().QueryRow(`SELECT thread_id FROM messages`).Scan(&t2)
	if t1 != t2 || t1 == 0 {
		t.Errorf("thread changed %d → %d", t1, t2)
	}
	if NormalizeSubject("Re: Fwd: [list] AW:  Hello   World") != "hello world" {
		t.Error("NormalizeSubject")
	}
}
