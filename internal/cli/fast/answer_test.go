package fast

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/clisock"
	"github.com/hestia-dev/hestia/internal/mail"
)

// Answer takes only the read-only queries, runs them on the store it is
// given, and prints dates in the asking user's zone.
func TestAnswer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := mail.Open(ctx, mail.Options{DBPath: filepath.Join(dir, "mail.db"), BlobDir: filepath.Join(dir, "blobs"), Embedder: sameVector{}, EmbedModel: "same"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	md := filepath.Join(dir, "Maildir")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: Ann <ann@x.org>\nTo: me@x.org\nSubject: Solar panels\nDate: Mon, 5 Jan 2026 23:30:00 +0000\n\nThe installer comes on Tuesday.\n"), 0o644)
	if _, err := st.Import(ctx, md, mail.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	env := &Env{Mail: st, Getenv: func(string) string { return "" }}
	zones := &Zones{}
	for _, args := range [][]string{{"mail"}, {"mail", "import", md}, {"chat", "hi"}, {"--log-level", "debug", "mail", "search", "x"}, {"wiki", "reindex"}, {"version"}} {
		if rep := Answer(ctx, clisock.Request{Args: args}, env, zones); rep.Handled {
			t.Errorf("%q answered by the daemon: %+v", args, rep)
		}
	}
	if rep := Answer(ctx, clisock.Request{Args: []string{"mail", "read", "1"}, TZ: "Not/AZone"}, env, zones); rep.Handled {
		t.Errorf("an unknown zone must leave the query to the front: %+v", rep)
	}
	rep := Answer(ctx, clisock.Request{Args: []string{"mail", "read", "1"}, TZ: "Pacific/Kiritimati"}, env, zones)
	if !rep.Handled || rep.Code != 0 || !strings.Contains(string(rep.Stdout), "Tue, 06 Jan 2026 13:30:00 +14") {
		t.Errorf("mail read in UTC+14: %+v %s", rep, rep.Stdout)
	}
	rep = Answer(ctx, clisock.Request{Args: []string{"mail", "search", "installer"}, TZ: ":UTC"}, env, zones)
	if !rep.Handled || rep.Code != 0 || !strings.Contains(string(rep.Stdout), "2026-01-05") || !strings.Contains(string(rep.Stdout), "Solar panels") {
		t.Errorf("mail search: %+v %s", rep, rep.Stdout)
	}
	rep = Answer(ctx, clisock.Request{Args: []string{"mail", "read", "x"}}, env, zones)
	if !rep.Handled || rep.Code != 2 || !strings.Contains(string(rep.Stderr), `message id "x" is not a number`) {
		t.Errorf("bad id: %+v %s", rep, rep.Stderr)
	}
	// The daemon's search is hybrid: a hit found by meaning alone is
	// marked, and the listing says what the mark means.
	os.WriteFile(filepath.Join(md, "cur", "2:2,S"), []byte("Message-ID: <b@x>\nFrom: Bo <bo@x.org>\nTo: me@x.org\nSubject: Roof\nDate: Tue, 6 Jan 2026 10:00:00 +0000\n\nThe roof is ready.\n"), 0o644)
	if _, err := st.Import(ctx, md, mail.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.EmbedPending(ctx, 8, 8); n != 2 || err != nil {
		t.Fatalf("embedded %d, %v", n, err)
	}
	rep = Answer(ctx, clisock.Request{Args: []string{"mail", "search", "installer"}, TZ: ":UTC"}, env, zones)
	lines := strings.Split(strings.TrimRight(string(rep.Stdout), "\n"), "\n")
	if !rep.Handled || rep.Code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "  ") || !strings.Contains(lines[0], "Solar panels") ||
		!strings.HasPrefix(lines[1], " ≈") || !strings.Contains(lines[1], "Roof") || !strings.Contains(string(rep.Stderr), "≈ close in meaning") {
		t.Errorf("hybrid mail search: %+v\n%s%s", rep, rep.Stdout, rep.Stderr)
	}
	// The store stays open for the next query: the daemon owns it.
	if _, err := st.Read(ctx, 1, 0, 10); err != nil {
		t.Errorf("store closed by a query: %v", err)
	}
}

func TestZones(t *testing.T) {
	t.Setenv("TZ", "")
	z := &Zones{}
	if loc, err := z.Load(""); err != nil || loc != time.Local {
		t.Errorf("the daemon's own TZ: %v %v", loc, err)
	}
	if loc, err := z.Load(":Europe/Rome"); err != nil || loc.String() != "Europe/Rome" {
		t.Errorf(":Europe/Rome: %v %v", loc, err)
	}
	if _, err := os.Stat("/usr/share/zoneinfo/Asia/Tokyo"); err == nil {
		loc, err := z.Load("/usr/share/zoneinfo/Asia/Tokyo")
		if err != nil {
			t.Fatal(err)
		}
		if _, off := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Zone(); off != 9*3600 {
			t.Errorf("Tokyo from a file: offset %d", off)
		}
	}
	for _, bad := range []string{"Not/AZone", "/nonexistent/zone", "../../etc/passwd"} {
		if _, err := z.Load(bad); err == nil {
			t.Errorf("%q loaded", bad)
		}
	}
}

// sameVector embeds every text alike: every message is as close as any.
type sameVector struct{}

func (sameVector) Dimension() int { return 4 }

func (sameVector) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0, 0, 0}
	}
	return out, nil
}
