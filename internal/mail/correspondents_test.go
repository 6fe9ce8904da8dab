package mail

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestCorrespondents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp", ".Sent/cur", ".Sent/new", ".Sent/tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	msg := func(dir, name, hdr string) {
		os.WriteFile(filepath.Join(md, dir, name), []byte(hdr+"\nSubject: x\n\nbody\n"), 0o644)
	}
	msg("cur", "1:2,S", "Message-ID: <1@x>\nFrom: \"Rossi, Marco\" <Marco@Acme.example>\nTo: me@x.org\nDate: Mon, 5 Jan 2026 10:00:00 +0000")
	msg("cur", "2:2,S", "Message-ID: <2@x>\nFrom: Marco Verdi <mverdi@example.net>\nTo: me@x.org\nDate: Tue, 6 Jan 2026 10:00:00 +0000")
	msg(".Sent/cur", "3:2,S", "Message-ID: <3@x>\nFrom: me@x.org\nTo: Marco Rossi <marco@acme.example>, Anna <anna@polimi.it>\nDate: Wed, 7 Jan 2026 10:00:00 +0000")
	msg(".Sent/cur", "4:2,S", "Message-ID: <4@x>\nFrom: me@x.org\nTo: marco@acme.example\nDate: Thu, 8 Jan 2026 10:00:00 +0000")
	if _, err := s.Import(ctx, md, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Correspondents(ctx, "marco", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("correspondents %+v", cs)
	}
	r := cs[0]
	if r.Address != "marco@acme.example" || r.Sent != 2 || r.Received != 1 || r.Last.Day() != 8 {
		t.Fatalf("rossi %+v", r)
	}
	if cs[1].Address != "mverdi@example.net" || cs[1].Name != "Marco Verdi" || cs[1].Received != 1 {
		t.Fatalf("verdi %+v", cs[1])
	}
	if cs, _ := s.Correspondents(ctx, "polimi", 10); len(cs) != 1 || cs[0].Sent != 1 {
		t.Fatalf("polimi %+v", cs)
	}
	if _, err := s.Correspondents(ctx, " ", 10); err == nil {
		t.Fatal("empty query accepted")
	}
	// Every address, for the contacts index; the scan bound keeps to the
	// newest messages (the two Sent ones: Rossi twice, Anna once).
	all, err := s.RecentCorrespondents(ctx, 100, 0)
	if err != nil || len(all) != 3 || all[0].Address != "marco@acme.example" || all[0].Sent != 2 || all[0].Received != 1 {
		t.Fatalf("all %+v %v", all, err)
	}
	recent, err := s.RecentCorrespondents(ctx, 2, 0)
	if err != nil || len(recent) != 2 || recent[0].Received != 0 || recent[1].Address != "anna@polimi.it" {
		t.Fatalf("newest two messages %+v %v", recent, err)
	}
}
