package calendar

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// genVdir writes n events over calendars collections, one file each, about
// a tenth recurring (weekly, daily or monthly; most bounded by COUNT or
// UNTIL, some open-ended), spread over three years around 2026.
func genVdir(tb testing.TB, root string, n, calendars int) []Source {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var srcs []Source
	for c := 0; c < calendars; c++ {
		dir := filepath.Join(root, fmt.Sprintf("cal%d", c))
		os.MkdirAll(dir, 0o755)
		srcs = append(srcs, Source{Name: fmt.Sprintf("cal%d", c), Path: dir})
	}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	words := []string{"review", "standup", "lunch", "dentist", "budget", "planning", "call", "gym", "sync", "retro", "interview", "demo"}
	for i := 0; i < n; i++ {
		day := rng.IntN(3 * 365)
		hour := 8 + rng.IntN(10)
		st := base.AddDate(0, 0, day).Add(time.Duration(hour)*time.Hour + time.Duration(rng.IntN(4))*15*time.Minute)
		dur := time.Duration(30+rng.IntN(4)*30) * time.Minute
		rule := ""
		if i%10 == 0 {
			switch rng.IntN(4) {
			case 0:
				rule = "RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=40\r\n"
			case 1:
				rule = "RRULE:FREQ=DAILY;UNTIL=" + st.AddDate(0, 2, 0).Format("20060102T150405Z") + "\r\n"
			case 2:
				rule = "RRULE:FREQ=MONTHLY;BYMONTHDAY=15\r\n"
			default:
				rule = "RRULE:FREQ=WEEKLY;INTERVAL=2\r\n"
			}
		}
		body := fmt.Sprintf("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\nBEGIN:VEVENT\r\nUID:ev-%d\r\nDTSTAMP:20250101T000000Z\r\n"+
			"DTSTART;TZID=Europe/Rome:%s\r\nDTEND;TZID=Europe/Rome:%s\r\n%sSUMMARY:%s %s %d\r\nLOCATION:Room %d\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
			i, st.Format("20060102T150405"), st.Add(dur).Format("20060102T150405"), rule, words[rng.IntN(len(words))], words[rng.IntN(len(words))], i, rng.IntN(20))
		if err := os.WriteFile(filepath.Join(srcs[i%calendars].Path, fmt.Sprintf("ev-%d.ics", i)), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return srcs
}

// benchStore indexes a generated 50,000-event vdir once per process.
func benchStore(b *testing.B) (*Store, *time.Location, time.Duration) {
	b.Helper()
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	srcs := genVdir(b, filepath.Join(dir, "vdir"), 50_000, 5)
	// "Today" in the middle of the generated span, so the months queried
	// lie inside the materialized horizon (−12..+25 months).
	now := time.Date(2026, 1, 15, 12, 0, 0, 0, loc)
	s, err := Open(context.Background(), Options{DBPath: filepath.Join(dir, "calendar.db"), Floating: loc, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	start := time.Now()
	c0 := cpuTime()
	for _, src := range srcs {
		if _, err := s.Sync(context.Background(), src); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime() - c0).Seconds(), "index-cpu-s")
	return s, loc, time.Since(start)
}

// BenchmarkCalendar reports: index time for 50,000 events (10% recurring)
// over 5 calendars, agenda p50 for a month, free slots for a week across
// all 5 calendars. Run: go test -run XXX -bench Calendar -benchtime 1x
// ./internal/calendar
func BenchmarkCalendar(b *testing.B) {
	s, loc, idx := benchStore(b)
	b.ReportMetric(idx.Seconds(), "index-s")
	ctx := context.Background()
	// The daemon keeps the horizon in memory; a CLI run reads it from SQL.
	s.KeepSnapshot()
	t0 := time.Now()
	if err := s.WarmSnapshot(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(t0).Seconds(), "snapshot-build-s")
	months := 24
	lat := make([]time.Duration, 0, months*5)
	events := 0
	c0 := cpuTime()
	for r := 0; r < 5; r++ {
		for m := 0; m < months; m++ {
			from := time.Date(2025, time.Month(1+m), 1, 0, 0, 0, 0, loc)
			t0 := time.Now()
			ag, err := s.Agenda(ctx, Query{From: from, To: from.AddDate(0, 1, 0), Max: 5000})
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			events += len(ag.Instances)
		}
	}
	// CPU per query (all threads, GC included): what the wall figure
	// would be on an idle core.
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(len(lat)), "agenda-month-cpu-ms/op")
	b.ReportMetric(p50(lat), "agenda-month-p50-ms")
	b.ReportMetric(float64(events)/float64(len(lat)), "instances/month")
	// The same months expanded lazily (what a window outside the horizon
	// costs), for comparison.
	lazy := make([]time.Duration, 0, months)
	for m := 0; m < months; m++ {
		from := time.Date(2025, time.Month(1+m), 1, 0, 0, 0, 0, loc)
		t0 := time.Now()
		if _, err := s.Agenda(ctx, Query{From: from, To: from.AddDate(0, 1, 0), Max: 5000, path: pathLazy}); err != nil {
			b.Fatal(err)
		}
		lazy = append(lazy, time.Since(t0))
	}
	b.ReportMetric(p50(lazy), "agenda-month-lazy-p50-ms")
	sqlLat := make([]time.Duration, 0, months)
	c0 = cpuTime()
	for m := 0; m < months; m++ {
		from := time.Date(2025, time.Month(1+m), 1, 0, 0, 0, 0, loc)
		t0 := time.Now()
		if _, err := s.Agenda(ctx, Query{From: from, To: from.AddDate(0, 1, 0), Max: 5000, path: pathSQL}); err != nil {
			b.Fatal(err)
		}
		sqlLat = append(sqlLat, time.Since(t0))
	}
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(len(sqlLat)), "agenda-month-sql-cpu-ms/op")
	b.ReportMetric(p50(sqlLat), "agenda-month-sql-p50-ms")
	flat := make([]time.Duration, 0, 50)
	c0 = cpuTime()
	for w := 0; w < 50; w++ {
		from := time.Date(2025, 3, 3, 0, 0, 0, 0, loc).AddDate(0, 0, 7*w)
		t0 := time.Now()
		if _, err := s.FreeSlots(ctx, FreeQuery{From: from, To: from.AddDate(0, 0, 7), Hours: WorkingHours{Start: 9 * time.Hour, End: 18 * time.Hour}}); err != nil {
			b.Fatal(err)
		}
		flat = append(flat, time.Since(t0))
	}
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(len(flat)), "free-week-cpu-ms/op")
	b.ReportMetric(p50(flat), "free-week-p50-ms")
}

// p50 is the median latency in milliseconds.
func p50(d []time.Duration) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2].Microseconds()) / 1000
}
