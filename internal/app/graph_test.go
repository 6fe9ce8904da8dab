package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/msgraph/graphtest"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// A Microsoft-365-shaped account with OAuth only: [[oauth.accounts]] at
// the fake provider, [[calendar.graph]] and [[contacts.graph]] naming it,
// against the fake Graph, which accepts only the provider's live tokens.
// Calendars and contacts sync into the indexes, a write goes to Graph
// journaled and confirmed and the read-only calendar is refused, the
// doctor reports each stage, and a revoked grant fails the sync and the
// check with the command to run.
func TestGraphAccountsWithOAuthOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prov := oauthtest.New(oauthtest.Options{User: "alice"})
	t.Cleanup(prov.Close)
	fake := graphtest.New("never-issued")
	t.Cleanup(fake.Close)
	fake.SetAuthorizer(prov.ActiveAccess)

	now := time.Now().UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1)
	calID := fake.AddCalendar("Calendar", true)
	holidays := fake.AddCalendar("Holidays", false)
	const zone = "W. Europe Standard Time"
	fake.AddEvent(calID, graphtest.Event{Subject: "Design review", Start: graphtest.At(day.Add(9*time.Hour), zone), End: graphtest.At(day.Add(10*time.Hour), zone),
		OriginalStartTimeZone: zone, ShowAs: "busy"})
	fake.AddEvent(calID, graphtest.Event{Subject: "Standup", Start: graphtest.At(day.Add(8*time.Hour), zone), End: graphtest.At(day.Add(8*time.Hour+15*time.Minute), zone),
		OriginalStartTimeZone: zone, Recurrence: &graphtest.Recurrence{Pattern: graphtest.Pattern{Type: "daily", Interval: 1},
			Range: graphtest.Range{Type: "numbered", StartDate: day.Format("2006-01-02"), NumberOfOccurrences: 5, RecurrenceTimeZone: zone}}})
	fake.AddEvent(holidays, graphtest.Event{Subject: "Founders' day", IsAllDay: true, Start: graphtest.Day(day.Year(), day.Month(), day.Day(), zone),
		End: graphtest.Day(day.Year(), day.Month(), day.Day()+1, zone), OriginalStartTimeZone: zone})
	fld := fake.AddContactFolder("Contacts")
	fake.AddContact(fld, graphtest.Contact{DisplayName: "Marco Rossi", EmailAddresses: []graphtest.EmailAddress{{Address: "marco@contoso.example"}}, CompanyName: "Contoso"})

	home := t.TempDir()
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Calendar.Timezone = "Europe/Rome"
	cfg.OAuth.Accounts = []config.OAuthAccount{{Name: "work", Provider: "custom", ClientID: prov.ClientID(),
		Scopes: []string{"calendar", "contacts"}, AuthURL: prov.AuthURL(), TokenURL: prov.TokenURL(), DeviceURL: prov.DeviceAuthURL(), RevokeURL: prov.RevokeURL()}}
	cfg.Calendar.Graph = []config.GraphAccount{{Name: "m365", OAuthAccount: "work", BaseURL: fake.URL}}
	cfg.Contacts.Graph = []config.GraphAccount{{Name: "m365", OAuthAccount: "work", BaseURL: fake.URL}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a := New(paths, cfg, slog.New(slog.DiscardHandler), "test")
	t.Cleanup(func() { a.Close() })

	check := func() (doctor.Status, string) {
		t.Helper()
		cs := a.graphChecks()
		if len(cs) != 1 || cs[0].Name != "graph.m365" {
			t.Fatalf("checks %v", cs)
		}
		return cs[0].Run(ctx)
	}
	if st, d := check(); st != doctor.Warn || !strings.Contains(d, "not connected yet: run hestia accounts connect work") {
		t.Errorf("before connecting: %s %s", st, d)
	}
	cal, err := a.OpenCalendar(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Not connected: the sync says so and nothing is written.
	if _, err := cal.SyncAll(ctx); !errors.Is(err, oauth.ErrNotConnected) {
		t.Fatalf("sync before connecting: %v", err)
	}
	m, err := a.OAuth()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectDevice(ctx, "work", oauth.DeviceOptions{
		Show:  func(oauth.DeviceCode) error { prov.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}

	stats, err := cal.SyncAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]calendar.SyncStats{}
	for _, s := range stats {
		byName[s.Calendar] = s
	}
	if s := byName["m365/Calendar"]; s.Events != 2 || s.Remote == nil || s.Remote.Mode != "full" {
		t.Fatalf("calendar sync %+v", stats)
	}
	ag, err := cal.Store.Agenda(ctx, calendar.Query{From: day, To: day.AddDate(0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range ag.Instances {
		got = append(got, in.Calendar+":"+in.Summary)
	}
	if strings.Join(got, ",") != "m365/Holidays:Founders' day,m365/Calendar:Standup,m365/Calendar:Design review" {
		t.Fatalf("agenda %v", got)
	}
	cals, err := cal.Store.Calendars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range cals {
		if k.Name == "m365/Holidays" != k.ReadOnly {
			t.Errorf("calendar %s read_only = %v", k.Name, k.ReadOnly)
		}
	}

	// A write through the journal reaches Graph and is confirmed.
	op, err := cal.Writer.Create(ctx, "call-1", calwrite.CreateArgs{Calendar: "m365/Calendar", Summary: "Lunch", Start: day.Add(12 * time.Hour).Format(time.RFC3339), Minutes: 45})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("create: %+v %v", op, err)
	}
	if ids := fake.Events(calID); len(ids) != 3 {
		t.Fatalf("server holds %v", ids)
	}
	if _, err := cal.Writer.Create(ctx, "call-2", calwrite.CreateArgs{Calendar: "m365/Holidays", Summary: "x", Start: day.Format(time.RFC3339)}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("write to a read-only calendar: %v", err)
	}
	// The mirror folder itself is never a write target.
	if _, err := os.Stat(filepath.Join(home, "calendar", "graph", "m365", "Calendar", op.Href)); err != nil {
		t.Errorf("the new event is not mirrored under its journal name: %v", err)
	}

	con, err := a.OpenContacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cst, err := con.SyncAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range cst {
		if s.Book == "m365/Contacts" && s.Cards == 1 && strings.HasPrefix(s.Mirror, "full") {
			found = true
		}
	}
	if !found {
		t.Fatalf("contacts sync %+v", cst)
	}
	if _, err := cal.SyncAll(ctx); err != nil {
		t.Fatal(err)
	}
	people, err := con.Store.Search(ctx, "marco", 5)
	if err != nil || len(people) != 1 || people[0].Name != "Marco Rossi" {
		t.Fatalf("contacts search %+v %v", people, err)
	}
	if st, d := check(); st != doctor.OK || !strings.Contains(d, "calendar: 4 items") || !strings.Contains(d, "contacts: 1 items") {
		t.Errorf("after syncing: %s %s", st, d)
	}

	// The user removes the app's access: the next pass's refresh finds
	// the grant dead; the sync error and the check say what to run.
	prov.RevokeAll()
	prov.ExpireAccessTokens()
	if _, err := cal.SyncAll(ctx); !errors.Is(err, oauth.ErrReconnect) || !strings.Contains(err.Error(), "hestia accounts connect work") {
		t.Fatalf("sync after revocation: %v", err)
	}
	if st, d := check(); st != doctor.Fail || !strings.Contains(d, "hestia accounts connect work") {
		t.Errorf("after revocation: %s %s", st, d)
	}
	// What was mirrored stays searchable.
	if ag, err := cal.Store.Agenda(ctx, calendar.Query{From: day, To: day.AddDate(0, 0, 1)}); err != nil || len(ag.Instances) != 4 {
		t.Errorf("agenda after revocation %d %v", len(ag.Instances), err)
	}
}
