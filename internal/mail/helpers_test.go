package mail

import (
	"context"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail/mailbench"
	"github.com/hestia-dev/hestia/internal/mail/parse"
	"github.com/hestia-dev/hestia/internal/search"
)

const corpora = "../../../shared/corpora"

func openStore(t testing.TB, emb search.Embedder) *Store {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(context.Background(), Options{DBPath: filepath.Join(dir, "db", "mail.db"), BlobDir: filepath.Join(dir, "blobs"), Embedder: emb, EmbedModel: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func corpus(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(corpora, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("corpus %s not present", rel)
	}
	return p
}

// hashEmbedder is a deterministic bag-of-words embedder: each word adds to
// one of dim buckets, so texts sharing words are close.
type hashEmbedder struct {
	dim   int
	calls int
	fail  func(text string) bool
}

func (h *hashEmbedder) Dimension() int { return h.dim }

func (h *hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	h.calls++
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if h.fail != nil && h.fail(t) {
			return nil, errEmbed
		}
		v := make([]float32, h.dim)
		for _, w := range search.Terms(t) {
			f := fnv.New32a()
			f.Write([]byte(w))
			v[f.Sum32()%uint32(h.dim)]++
		}
		out[i] = v
	}
	return out, nil
}

var errEmbed = &embedError{}

type embedError struct{}

func (*embedError) Error() string { return "embedder rejected input" }

// writeMaildir writes one message file into root/folder/{cur,new}.
func writeMaildir(t testing.TB, root, folder, name, raw string, mtime time.Time) string {
	t.Helper()
	dir := filepath.Join(root, folder, "cur")
	if strings.HasSuffix(name, ":new") {
		dir = filepath.Join(root, folder, "new")
		name = strings.TrimSuffix(name, ":new")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, folder, "tmp"), 0o755)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		os.Chtimes(p, mtime, mtime)
	}
	return p
}

func msg(id, from, to, subject, date, body string, extra ...string) string {
	var b strings.Builder
	if id != "" {
		b.WriteString("Message-ID: <" + id + ">\n")
	}
	b.WriteString("From: " + from + "\nTo: " + to + "\nSubject: " + subject + "\nDate: " + date + "\n")
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	b.WriteString("\n" + body + "\n")
	return b.String()
}

func flagsSeen() parse.Flags { return parse.Flags{Seen: true} }

// generatedStore writes a mailbench Maildir of n messages (seed decides
// them) into a fresh folder and opens an empty mirror beside it, closed
// when the test ends. It returns the store, the folder and the Maildir.
func generatedStore(t *testing.T, n int, seed int64) (s *Store, dir, maildir string) {
	t.Helper()
	dir = t.TempDir()
	maildir = filepath.Join(dir, "Maildir")
	if _, err := mailbench.Generate(maildir, mailbench.Options{Messages: n, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), Options{DBPath: filepath.Join(dir, "mail.db"), BlobDir: filepath.Join(dir, "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir, maildir
}
