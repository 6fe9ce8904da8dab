package contacts

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func corpusPath(t testing.TB, rel string) string {
	t.Helper()
	for _, root := range []string{"../../../shared/corpora", "../../../../shared/corpora"} {
		p := filepath.Join(root, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("corpus %s not present", rel)
	return ""
}

func writeVCF(t testing.TB, dir, name, body string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	body = strings.ReplaceAll(strings.TrimSpace(body), "\n", "\r\n") + "\r\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fixture(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "contacts.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	work := filepath.Join(t.TempDir(), "work")
	home := filepath.Join(t.TempDir(), "home")
	writeVCF(t, work, "marco.vcf", `
BEGIN:VCARD
VERSION:4.0
UID:urn:uuid:1
FN:Marco Rossi
N:Rossi;Marco;;;
ORG:Acme
EMAIL;TYPE=work:marco.rossi@acme.example
TEL;VALUE=uri:tel:+39-02-1234-5678
END:VCARD`)
	writeVCF(t, work, "anna.vcf", `
BEGIN:VCARD
VERSION:3.0
FN:Anna Bianchi
N:Bianchi;Anna;;;
ORG:Politecnico di Milano
EMAIL;TYPE=INTERNET:anna.bianchi@polimi.it
END:VCARD`)
	writeVCF(t, work, "broken.vcf", "BEGIN:VCARD\r\nVERSION:4.0\r\nFN Marco\r\n")
	// The same Marco in another book, by phone only, plus a second Marco
	// and a second Anna.
	writeVCF(t, home, "m.vcf", `
BEGIN:VCARD
VERSION:3.0
FN:Marco R.
NICKNAME:Marchino
TEL;TYPE=CELL:0039 02 12345678
EMAIL:marco@home.example
END:VCARD
BEGIN:VCARD
VERSION:3.0
FN:Marco Verdi
EMAIL:mverdi@example.net
END:VCARD`)
	writeVCF(t, home, "a.vcf", `
BEGIN:VCARD
VERSION:3.0
FN:Anna Neri
EMAIL:anna@gmail.example
END:VCARD`)
	for _, src := range []Source{{Name: "work", Path: work}, {Name: "home", Path: home}} {
		st, err := s.Sync(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		if src.Name == "work" && (len(st.Skipped) != 1 || st.Skipped[0].File != "broken.vcf" || st.Cards != 2) {
			t.Fatalf("work sync %+v", st)
		}
	}
	return s
}

func TestSearchMergesPeople(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	ps, err := s.Search(context.Background(), "marco", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("people %+v", ps)
	}
	var rossi Person
	for _, p := range ps {
		if p.Name == "Marco Rossi" || p.Name == "Marco R." {
			rossi = p
		}
	}
	if rossi.Cards != 2 || len(rossi.Emails) != 2 || strings.Join(rossi.Books, ",") != "home,work" {
		t.Fatalf("merged person %+v", rossi)
	}
	if ps, _ := s.Search(context.Background(), "polit", 10); len(ps) != 1 || ps[0].Name != "Anna Bianchi" {
		t.Fatalf("org prefix: %+v", ps)
	}
	if ps, _ := s.Search(context.Background(), "marchino", 10); len(ps) != 1 {
		t.Fatalf("nickname: %+v", ps)
	}
	if _, err := s.Search(context.Background(), " ", 10); !errors.Is(err, ErrBadQuery) {
		t.Fatalf("empty: %v", err)
	}
	if ps, err := s.Search(context.Background(), `") OR *`, 10); err != nil || len(ps) != 0 {
		t.Fatalf("syntax passed through: %v %v", ps, err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	mail := func(_ context.Context, q string, _ int) ([]Correspondent, error) {
		all := []Correspondent{
			{Address: "marco@home.example", Name: "Marco", Sent: 12, Received: 30, Last: now.AddDate(0, 0, -2)},
			{Address: "mverdi@example.net", Name: "Marco Verdi", Sent: 0, Received: 1, Last: now.AddDate(-2, 0, 0)},
			{Address: "marco.bruno@uni.example", Name: "Marco Bruno", Sent: 1, Received: 2, Last: now.AddDate(0, -1, 0)},
			{Address: "anna@polimi.it", Name: "Anna Bianchi", Sent: 3, Received: 3, Last: now.AddDate(0, 0, -10)},
		}
		var out []Correspondent
		for _, c := range all {
			if strings.Contains(strings.ToLower(c.Name+c.Address), strings.ToLower(q)) {
				out = append(out, c)
			}
		}
		return out, nil
	}
	r, err := s.Resolve(ctx, "Marco", mail, now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Ambiguous || len(r.Candidates) != 3 {
		t.Fatalf("marco: %+v", r)
	}
	top := r.Candidates[0]
	// The merged Rossi cards, mailed most, with the address actually used.
	if top.Email != "marco@home.example" || !top.Evidence.Card || top.Evidence.Mailed != 12 || top.Evidence.Last == nil {
		t.Fatalf("top %+v", top)
	}
	r, _ = s.Resolve(ctx, "Marco Verdi", mail, now)
	if r.Status != Unique || r.Candidates[0].Email != "mverdi@example.net" || r.Candidates[0].Evidence.Matched != "full name" {
		t.Fatalf("verdi %+v", r)
	}
	// The card's address and the one in mail differ: both are offered,
	// and the hint keeps out Anna Neri (gmail).
	r, _ = s.Resolve(ctx, "Anna from Polimi", mail, now)
	if r.Status != Ambiguous || len(r.Candidates) != 2 {
		t.Fatalf("anna from polimi %+v", r)
	}
	for _, c := range r.Candidates {
		if !strings.Contains(c.Email, "polimi") {
			t.Fatalf("hint not applied: %+v", r)
		}
	}
	if r, _ = s.Resolve(ctx, "Anna", mail, now); len(r.Candidates) != 3 {
		t.Fatalf("anna %+v", r)
	}
	r, _ = s.Resolve(ctx, "Zorro", mail, now)
	if r.Status != NotFound || len(r.Candidates) != 0 || r.Note == "" {
		t.Fatalf("zorro %+v", r)
	}
	r, _ = s.Resolve(ctx, "Anna.Bianchi@Polimi.it", nil, now)
	if r.Status != Unique || r.Candidates[0].Name != "Anna Bianchi" {
		t.Fatalf("address %+v", r)
	}
	if _, err := s.Resolve(ctx, "", mail, now); !errors.Is(err, ErrBadQuery) {
		t.Fatalf("empty: %v", err)
	}
}

// TestCorporaParse parses the vCards of the ez-vcard and kcontacts test
// suites: none may panic, failures carry ErrMalformed and a reason.
func TestCorporaParse(t *testing.T) {
	t.Parallel()
	ok, bad, cards := 0, 0, 0
	for _, rel := range []string{"ez-vcard", "kcontacts", "icaljs/test/parser"} {
		root := corpusPath(t, rel)
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(strings.ToLower(p), ".vcf") {
				return nil
			}
			data, _ := os.ReadFile(p)
			cs, err := ParseVCF(bytes.NewReader(data))
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("%s: %v", p, err)
				}
				bad++
				return nil
			}
			ok++
			cards += len(cs)
			return nil
		})
	}
	t.Logf("%d files parsed (%d cards), %d rejected with a reason", ok, cards, bad)
	if ok < 20 || cards < 20 {
		t.Fatalf("too few parsed: %d files %d cards", ok, cards)
	}
}

func FuzzParseVCF(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.vcf")
	for _, p := range seeds {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The 2.1 rewriting is stable: rewritten cards rewrite to
		// themselves.
		if norm, err := checkVCF(data); err == nil {
			if again, err := checkVCF(norm); err != nil || !bytes.Equal(again, norm) {
				t.Fatalf("rewrite not stable: %q → %q → %q (%v)", data, norm, again, err)
			}
		}
		cs, err := ParseVCF(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		for _, c := range cs {
			if c.Name == "" && len(c.Phones) == 0 {
				t.Fatalf("empty card kept: %+v", c)
			}
			for _, e := range c.Emails {
				if NormEmail(e) != e {
					t.Fatalf("email not normalized: %q", e)
				}
			}
		}
	})
}

// TestSeenInMail: correspondents copied from mail are found by Search
// after the address books' people, never as cards; one whose address is
// on a card brings that card's person; machine senders are left out.
func TestSeenInMail(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	n, err := s.RefreshCorrespondents(ctx, []Correspondent{
		{Address: "Marco.Bruno@Uni.example", Name: "Marco Bruno", Sent: 1, Received: 2, Last: now.AddDate(0, -1, 0)},
		{Address: "marco.bruno@uni.example", Received: 1, Last: now.AddDate(0, 0, -3)}, // same address, summed
		{Address: "marco@home.example", Name: "Il Marchese", Sent: 12, Received: 30, Last: now.AddDate(0, 0, -2)},
		{Address: "noreply@marco-shop.example", Name: "Marco Shop", Received: 40, Last: now},
		{Address: "giulia@x.example", Name: "Giulia Neri", Sent: 3, Last: now.AddDate(0, 0, -1)},
		{Address: "not an address", Name: "Marco Broken", Sent: 5},
	})
	if err != nil || n != 4 {
		t.Fatalf("refresh %d %v", n, err)
	}
	ps, err := s.Search(ctx, "marco", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Name)
	}
	// Cards first (Rossi merged across books, Verdi), then Bruno from mail.
	if len(ps) != 3 || ps[2].Name != "Marco Bruno" || !ps[2].SeenInMail || ps[2].Cards != 0 || len(ps[2].Books) != 0 {
		t.Fatalf("marco: %v %+v", got, ps)
	}
	if m := ps[2].Mail; m == nil || m.Sent != 1 || m.Received != 3 || m.Last == nil || !m.Last.Equal(now.AddDate(0, 0, -3)) {
		t.Fatalf("bruno's mail stats %+v", ps[2].Mail)
	}
	for _, p := range ps[:2] {
		if p.SeenInMail || p.Cards == 0 {
			t.Fatalf("card person marked as mail-only: %+v", p)
		}
		if p.Name == "Marco Rossi" && (p.Mail == nil || p.Mail.Sent != 12) {
			t.Fatalf("rossi's mail stats %+v", p.Mail)
		}
	}
	// A mail name that matches no card brings the card holding its address.
	if ps, _ := s.Search(ctx, "marchese", 10); len(ps) != 1 || ps[0].SeenInMail || ps[0].Cards != 2 {
		t.Fatalf("marchese: %+v", ps)
	}
	if ps, _ := s.Search(ctx, "giulia", 10); len(ps) != 1 || ps[0].Emails[0] != "giulia@x.example" || !ps[0].SeenInMail {
		t.Fatalf("giulia: %+v", ps)
	}
	// Without the mail mirror, Resolve reads the stored copy; a person seen
	// only in mail ranks below one with a card and the same mail.
	r, err := s.Resolve(ctx, "Giulia", nil, now)
	if err != nil || r.Status != Unique || r.Candidates[0].Email != "giulia@x.example" || r.Candidates[0].Evidence.Card || r.Candidates[0].Evidence.Mailed != 3 {
		t.Fatalf("resolve giulia %+v %v", r, err)
	}
	// A refresh replaces the copy: Giulia is gone, the books are untouched.
	if _, err := s.RefreshCorrespondents(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ps, _ := s.Search(ctx, "giulia", 10); len(ps) != 0 {
		t.Fatalf("stale correspondent %+v", ps)
	}
	if ps, _ := s.Search(ctx, "marco", 10); len(ps) != 2 || ps[0].Mail != nil {
		t.Fatalf("cards after clearing mail %+v", ps)
	}
}

// TestBadVCF: broken files are refused with the line and what is wrong;
// real-world oddities (vCard 2.1 quoted-printable, a BOM, folded lines,
// an unreadable property) still give their cards.
func TestBadVCF(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, want string }{
		{"broken-nested.vcf", "line 4: BEGIN:VCARD inside the card begun on line 1 (its END:VCARD is missing)"},
		{"broken-truncated.vcf", "the card begun on line 1 has no END:VCARD"},
		{"broken-outside.vcf", `line 1: "junk before" is outside any BEGIN:VCARD`},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseVCF(bytes.NewReader(data))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		"":                                     "no BEGIN:VCARD",
		"BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n": "line 1: BEGIN:VCALENDAR is not a vCard",
		"BEGIN:VCARD\r\nFN:a\r\nEND:VCALENDAR\r\n":          "line 3: END:VCALENDAR closes the card begun on line 1",
		"\xff\xfeB\x00E\x00":                                "UTF-16",
		"BEGIN:VCARD\r\nFN:a\r\nEND:VCARD\r\nEND:VCARD\r\n": `line 4: "END:VCARD" is outside any`,
	} {
		if _, err := ParseVCF(strings.NewReader(in)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	for file, want := range map[string]string{
		"v21-quoted-printable.vcf": "José Núñez <jose@example.es>",
		"bom-folded.vcf":           "Long Folded Name <a@b.example>",
		"odd-quote.vcf":            "Unix Lines <>",
	} {
		data, _ := os.ReadFile(filepath.Join("testdata", file))
		cs, err := ParseVCF(bytes.NewReader(data))
		if err != nil || len(cs) != 1 {
			t.Errorf("%s: %+v %v", file, cs, err)
			continue
		}
		if got := cs[0].Name + " <" + strings.Join(cs[0].Emails, ",") + ">"; got != want {
			t.Errorf("%s: %q, want %q", file, got, want)
		}
	}
}

// TestBrokenFileKeepsCards: a card file that breaks after it was indexed
// is reported with its reason and its last good cards stay searchable;
// fixed, it is read again; removed, its cards go.
func TestBrokenFileKeepsCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "contacts.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	src := Source{Name: "b", Path: dir}
	writeVCF(t, dir, "p.vcf", "BEGIN:VCARD\nVERSION:3.0\nFN:Paola Bruni\nEMAIL:paola@example.org\nEND:VCARD")
	if st, err := s.Sync(ctx, src); err != nil || st.Cards != 1 {
		t.Fatalf("first sync %+v %v", st, err)
	}
	// An editor crashed half-way through a save.
	os.WriteFile(filepath.Join(dir, "p.vcf"), []byte("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Paola Br"), 0o644)
	st, err := s.Sync(ctx, src)
	if err != nil || st.Updated != 1 || st.Kept != 1 || len(st.Skipped) != 1 || st.Skipped[0].File != "p.vcf" ||
		!strings.Contains(st.Skipped[0].Reason, "the card begun on line 1 has no END:VCARD") {
		t.Fatalf("broken sync %+v %v", st, err)
	}
	if ps, err := s.Search(ctx, "paola", 5); err != nil || len(ps) != 1 || ps[0].Emails[0] != "paola@example.org" {
		t.Fatalf("card lost: %+v %v", ps, err)
	}
	// Unchanged since: not re-read, still kept.
	if st, _ := s.Sync(ctx, src); st.Unchanged != 1 || st.Kept != 0 {
		t.Fatalf("unchanged sync %+v", st)
	}
	writeVCF(t, dir, "p.vcf", "BEGIN:VCARD\nVERSION:3.0\nFN:Paola Bruni-Neri\nEMAIL:paola@example.org\nEND:VCARD")
	if st, _ := s.Sync(ctx, src); st.Updated != 1 || st.Cards != 1 || len(st.Skipped) != 0 {
		t.Fatalf("fixed sync %+v", st)
	}
	if ps, _ := s.Search(ctx, "neri", 5); len(ps) != 1 || ps[0].Name != "Paola Bruni-Neri" {
		t.Fatalf("fixed card %+v", ps)
	}
	os.WriteFile(filepath.Join(dir, "p.vcf"), []byte("garbage"), 0o644)
	s.Sync(ctx, src)
	os.Remove(filepath.Join(dir, "p.vcf"))
	if st, _ := s.Sync(ctx, src); st.Removed != 1 {
		t.Fatalf("removed sync %+v", st)
	}
	if ps, _ := s.Search(ctx, "paola", 5); len(ps) != 0 {
		t.Fatalf("removed file's card still found %+v", ps)
	}
}

func TestSearchByPhoneInAnyFormat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "contacts.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir := filepath.Join(t.TempDir(), "book")
	writeVCF(t, dir, "people.vcf", `
BEGIN:VCARD
VERSION:4.0
FN:Marco Rossi
TEL;VALUE=uri:tel:+39-02-1234-5678
END:VCARD
BEGIN:VCARD
VERSION:3.0
FN:Giulia National
TEL;TYPE=CELL:(06) 9876-5432
END:VCARD
BEGIN:VCARD
VERSION:3.0
FN:Pierre Paris
TEL:+33 1 45 67 89 00
END:VCARD`)
	if _, err := s.Sync(ctx, Source{Name: "book", Path: dir}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ q, want string }{
		{"+39 02 1234", "Marco Rossi"},
		{"0039 02 1234 5678", "Marco Rossi"},
		{"02 1234 5678", "Marco Rossi"},
		{"0212345678", "Marco Rossi"},
		{"02-1234", "Marco Rossi"},
		{"06 9876", "Giulia National"},
		{"+39 06 9876 5432", "Giulia National"}, // the card has no country code
		{"069876", "Giulia National"},
		{"01 45 67 89 00", "Pierre Paris"}, // national spelling, trunk 0
		{"+33145678900", "Pierre Paris"},
		{"5555 1212", ""},
	} {
		ps, err := s.Search(ctx, tc.q, 10)
		if err != nil {
			t.Fatalf("%q: %v", tc.q, err)
		}
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, ","); got != tc.want {
			t.Errorf("search %q = %q, want %q", tc.q, got, tc.want)
		}
	}
}

// List browses every person by name, page by page, without a search.
func TestListPages(t *testing.T) {
	t.Parallel()
	s := fixture(t)
	all, next, err := s.List(context.Background(), 0, 0)
	if err != nil || next != 0 || len(all) < 2 {
		t.Fatalf("list: %d people, next %d, %v", len(all), next, err)
	}
	var names []string
	seen := 0
	for off := 0; ; {
		page, nx, err := s.List(context.Background(), off, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			names = append(names, p.Name)
		}
		seen++
		if nx == 0 || seen > 100 {
			break
		}
		off = nx
	}
	if len(names) < len(all) {
		t.Fatalf("paging by one saw %v, the whole list has %d people", names, len(all))
	}
	if _, _, err := s.List(context.Background(), -1, 10); !errors.Is(err, ErrBadQuery) {
		t.Fatalf("negative offset: %v", err)
	}
}
