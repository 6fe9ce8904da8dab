package graphcal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/msgraph"
	"github.com/hestia-dev/hestia/internal/msgraph/graphtest"
)

// BenchmarkSync measures a full pass (a new round: 1,000 single events
// and 50 weekly series, about 5,500 entries in the window, 100 a page)
// and an idle incremental pass, against the in-process fake.
func BenchmarkSync(b *testing.B) {
	fake := graphtest.New("tok")
	defer fake.Close()
	cal := fake.AddCalendar("Calendar", true)
	const zone = "W. Europe Standard Time"
	base := time.Date(2026, 1, 5, 9, 0, 0, 0, berlin)
	for i := 0; i < 1000; i++ {
		s := base.Add(time.Duration(i) * 17 * time.Hour)
		fake.AddEvent(cal, graphtest.Event{Subject: fmt.Sprintf("Event %d", i), Start: graphtest.At(s, zone), End: graphtest.At(s.Add(time.Hour), zone), OriginalStartTimeZone: zone})
	}
	for i := 0; i < 50; i++ {
		s := base.AddDate(0, 0, i%7).Add(time.Duration(i) * time.Hour / 2)
		fake.AddEvent(cal, graphtest.Event{Subject: fmt.Sprintf("Series %d", i), Start: graphtest.At(s, zone), End: graphtest.At(s.Add(30*time.Minute), zone), OriginalStartTimeZone: zone,
			Recurrence: &graphtest.Recurrence{Pattern: graphtest.Pattern{Type: "weekly", Interval: 1, DaysOfWeek: []string{s.Weekday().String()}},
				Range: graphtest.Range{Type: "noEnd", StartDate: s.Format("2006-01-02"), RecurrenceTimeZone: zone}}})
	}
	now := time.Date(2026, 3, 20, 9, 0, 0, 0, time.UTC)
	newCol := func() *Collection {
		return &Collection{Client: &msgraph.Client{BaseURL: fake.URL, Tokens: msgraph.StaticToken("tok")}, Calendar: Calendar{ID: cal, Name: "Calendar", CanEdit: true},
			Dir: filepath.Join(b.TempDir(), "c"), Now: func() time.Time { return now }, PageSize: 100}
	}
	b.Run("full", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			st, err := newCol().Sync(context.Background())
			if err != nil || st.Files != 1050 {
				b.Fatal(st, err)
			}
		}
	})
	b.Run("idle", func(b *testing.B) {
		col := newCol()
		if _, err := col.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if st, err := col.Sync(context.Background()); err != nil || st.Written != 0 {
				b.Fatal(st, err)
			}
		}
	})
}
