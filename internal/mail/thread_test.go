package mail

import (
	"context"
	"math/rand"
	"strings"
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
	type m struct{ key, raw, mailbox string }
	cases := []struct {
		name  string
		msgs  []m
		same  [][2]string // pairs that must share a thread
		apart [][2]string // pairs that must not
	}{
		{"reply arrives before parent", []m{
			{"child", msg("c@x", "b@x.org", "a@x.org", "Re: plan", day(1), "ok", "In-Reply-To: <p@x>", "References: <p@x>"), ""},
			{"parent", msg("p@x", "a@x.org", "b@x.org", "plan", day(0), "the plan"), ""},
		}, [][2]string{{"child", "parent"}}, nil},
		{"siblings under a missing parent", []m{
			{"s1", msg("s1@x", "b@x.org", "a@x.org", "Re: ghost", day(1), "one", "References: <ghost@x>"), ""},
			{"s2", msg("s2@x", "c@x.org", "a@x.org", "Re: ghost", day(40), "two", "References: <ghost@x>"), ""},
		}, [][2]string{{"s1", "s2"}}, nil},
		{"gmail thread id without reply headers", []m{
			{"g1", msg("g1@x", "a@x.org", "b@x.org", "one topic", day(0), "x", "X-GM-THRID: 123"), ""},
			{"g2", msg("g2@x", "z@y.org", "q@y.org", "another subject", day(90), "y", "X-GM-THRID: 123"), ""},
		}, [][2]string{{"g1", "g2"}}, nil},
		{"subject and participant within 14 days", []m{
			{"a", msg("a@x", "ann@x.org", "bob@x.org", "Budget 2026", day(0), "x"), ""},
			{"b", msg("b@x", "bob@x.org", "ann@x.org", "RE: [team] Budget 2026", day(10), "y"), ""},
			{"late", msg("late@x", "ann@x.org", "bob@x.org", "Budget 2026", day(40), "z"), ""},
			{"stranger", msg("st@x", "eve@y.org", "mal@y.org", "Budget 2026", day(2), "w"), ""},
		}, [][2]string{{"a", "b"}}, [][2]string{{"a", "late"}, {"a", "stranger"}}},
		{"generic subjects never join by subject", []m{
			{"n1", msg("n1@x", "list@lists.org", "me@x.org", "(no subject)", day(0), "x"), ""},
			{"n2", msg("n2@x", "list@lists.org", "me@x.org", "(no subject)", day(12), "y"), ""},
			{"e1", msg("e1@x", "list@lists.org", "me@x.org", "", day(1), "x"), ""},
			{"e2", msg("e2@x", "list@lists.org", "me@x.org", "Re:", day(2), "y"), ""},
			{"h1", msg("h1@x", "list@lists.org", "me@x.org", "Hello", day(3), "x"), ""},
			{"h2", msg("h2@x", "list@lists.org", "me@x.org", "Re: Hello", day(4), "y"), ""},
		}, nil, [][2]string{{"n1", "n2"}, {"e1", "e2"}, {"h1", "h2"}}},
		{"junk never joins ham by subject", []m{
			{"ham", msg("ham@x", "ann@x.org", "bob@x.org", "Invoice for March", day(0), "x"), ""},
			{"spam", msg("spam@x", "ann@x.org", "bob@x.org", "Invoice for March", day(1), "y"), "Junk"},
			{"spam2", msg("spam2@x", "ann@x.org", "bob@x.org", "Invoice for March", day(2), "y"), "Spam"},
			{"ham2", msg("ham2@x", "bob@x.org", "ann@x.org", "Re: Invoice for March", day(3), "z"), ""},
		}, [][2]string{{"ham", "ham2"}}, [][2]string{{"ham", "spam"}, {"spam", "spam2"}, {"ham2", "spam2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := openStore(t, nil)
			ids := map[string]int64{}
			for _, mm := range c.msgs {
				// One at a time, in the listed order.
				box := mm.mailbox
				if box == "" {
					box = "INBOX"
				}
				if _, err := s.Ingest(ctx, []Item{{Account: "a", Mailbox: box, Path: mm.key, Raw: []byte(mm.raw)}}); err != nil {
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

// TestThreadsIgnoreImportOrder: threads are the connected components of
// the Message-ID/References graph, whatever order the messages arrive in.
// r1 and r2 reply to different stored messages (x, y) and both name the
// missing parent p, so all five belong together.
func TestThreadsIgnoreImportOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	msgs := map[string]string{
		"x":  msg("x@x", "a@x.org", "b@x.org", "first topic", d, "x"),
		"y":  msg("y@x", "c@y.org", "d@y.org", "second topic", d, "y"),
		"r1": msg("r1@x", "b@x.org", "a@x.org", "Re: first topic", d, "r1", "In-Reply-To: <x@x>", "References: <p@x> <x@x>"),
		"r2": msg("r2@x", "d@y.org", "c@y.org", "Re: second topic", d, "r2", "In-Reply-To: <y@x>", "References: <p@x> <y@x>"),
		"c":  msg("c@x", "e@z.org", "f@z.org", "odd subject", d, "c", "In-Reply-To: <r2@x>"),
		"s":  msg("s@x", "g@w.org", "h@w.org", "unrelated", d, "s"),
	}
	keys := []string{"x", "y", "r1", "r2", "c", "s"}
	orders := [][]string{keys, {"s", "c", "r2", "r1", "y", "x"}, {"r1", "r2", "x", "y", "c", "s"}}
	rng := rand.New(rand.NewSource(19))
	for len(orders) < 16 {
		o := append([]string(nil), keys...)
		rng.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
		orders = append(orders, o)
	}
	for _, order := range orders {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			t.Parallel()
			s := openStore(t, nil)
			for _, k := range order {
				if _, err := s.Ingest(ctx, []Item{{Account: "a", Mailbox: "INBOX", Path: k, Raw: []byte(msgs[k])}}); err != nil {
					t.Fatal(err)
				}
			}
			thread := map[string]int64{}
			for _, k := range keys {
				var id int64
				s.DB().QueryRowContext(ctx, `SELECT thread_id FROM messages m JOIN message_paths p ON p.message_id = m.id WHERE p.path = ?`, k).Scan(&id)
				thread[k] = id
			}
			for _, k := range []string{"y", "r1", "r2", "c"} {
				if thread[k] != thread["x"] {
					t.Errorf("%s in thread %d, x in %d", k, thread[k], thread["x"])
				}
			}
			if thread["s"] == thread["x"] {
				t.Error("unrelated message joined")
			}
			var n, count int
			s.DB().QueryRowContext(ctx, `SELECT count(*), coalesce(max(message_count), 0) FROM threads WHERE message_count > 0`).Scan(&n, &count)
			if n != 2 || count != 5 {
				t.Errorf("%d live threads, largest %d messages; want 2 and 5", n, count)
			}
		})
	}
}
