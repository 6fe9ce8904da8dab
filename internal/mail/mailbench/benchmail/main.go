// Command benchmail measures Hestia's mail mirror the way a user meets it
// (one CLI process per query, the daemon's HTTP search, import, rescan,
// incremental import, index size, peak RSS) side by side with notmuch and
// mu on the same synthetic Maildir, in one sequential run, and prints the
// table of issue 16 with the ratios and targets. Repeated measurements go
// round the tools once per repetition (Hestia, notmuch, mu, Hestia, …), so
// a host whose speed drifts over minutes moves every tool's figures alike. It installs nothing:
// notmuch and mu are used when they are on PATH.
//
//	go run ./internal/mail/mailbench/benchmail -hestia bin/hestia -n 100000
//
// `make bench-mail` builds the binary and runs it. Nothing here is part of
// `make test`.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hestia-dev/hestia/internal/mail/mailbench"
	_ "modernc.org/sqlite" // to find the Hestia id of the message read
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchmail:", err)
		os.Exit(1)
	}
}

type config struct {
	n       int
	corpus  string
	work    string
	hestia  string
	reps    int
	added   int
	tools   map[string]bool
	genOnly bool
	// baseline is a second hestia binary (an earlier build) measured in
	// turn with the first as "hestia-base", each with its own home.
	baseline string
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("benchmail", flag.ContinueOnError)
	var c config
	fs.IntVar(&c.n, "n", 100000, "messages in the synthetic corpus")
	fs.StringVar(&c.corpus, "corpus", "", "corpus directory (default $TMPDIR/hestia-bench-mail-N; reused when present)")
	fs.StringVar(&c.work, "work", "", "directory for the three indexes (default a fresh temporary directory, removed afterwards)")
	fs.StringVar(&c.hestia, "hestia", "bin/hestia", "the hestia binary")
	fs.IntVar(&c.reps, "reps", 25, "runs per query and rescan (the median is reported; with 9, medians moved by 10-15 % between runs on a shared 2-core host)")
	fs.IntVar(&c.added, "add", 1000, "messages added for the incremental import")
	only := fs.String("only", "hestia,notmuch,mu", "which tools to run")
	fs.BoolVar(&c.genOnly, "gen-only", false, "only generate the corpus and print its path")
	fs.StringVar(&c.baseline, "baseline", "", "another hestia binary to measure in turn with -hestia (as hestia-base), e.g. the build before a change")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.tools = map[string]bool{}
	for _, t := range strings.Split(*only, ",") {
		c.tools[strings.TrimSpace(t)] = true
	}
	if c.corpus == "" {
		c.corpus = filepath.Join(os.TempDir(), fmt.Sprintf("hestia-bench-mail-%d", c.n))
	}
	if err := ensureCorpus(c.corpus, c.n); err != nil {
		return err
	}
	if c.genOnly {
		fmt.Println(c.corpus)
		return nil
	}
	if c.work == "" {
		w, err := os.MkdirTemp("", "hestia-bench-work-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(w)
		c.work = w
	}
	hestia, err := filepath.Abs(c.hestia)
	if err != nil {
		return err
	}
	c.hestia = hestia
	if c.baseline != "" {
		if c.baseline, err = filepath.Abs(c.baseline); err != nil {
			return err
		}
	}
	// The incremental batch is generated separately and moved in later; a
	// previous run may have left it in the corpus.
	addDir := filepath.Join(c.work, "added")
	if err := removeAdded(c.corpus); err != nil {
		return err
	}
	if _, err := mailbench.Generate(addDir, mailbench.Options{Messages: c.added, Seed: 4242, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Years: 1}); err != nil {
		return err
	}
	defer removeAdded(c.corpus)

	corpusBytes := dirSize(c.corpus)
	fmt.Printf("corpus: %s, %d messages, %.0f MB\n", c.corpus, c.n, mb(corpusBytes))
	fmt.Printf("load average at start: %s\n", loadavg())

	var tools []tool
	if c.tools["hestia"] {
		tools = append(tools, newHestia(c))
		if c.baseline != "" {
			b := newHestia(c)
			b.label, b.bin, b.home = "hestia-base", c.baseline, filepath.Join(c.work, "hestia-base")
			tools = append(tools, b)
		}
	}
	for _, name := range []string{"notmuch", "mu"} {
		if !c.tools[name] {
			continue
		}
		if _, err := exec.LookPath(name); err != nil {
			fmt.Printf("%s: not installed, left out\n", name)
			continue
		}
		if name == "notmuch" {
			tools = append(tools, newNotmuch(c))
		} else {
			tools = append(tools, newMu(c))
		}
	}
	res := map[string]*result{}
	for _, t := range tools {
		res[t.name()] = &result{queries: map[string]time.Duration{}, queryCPU: map[string]time.Duration{}}
	}
	step := func(what string, fn func(t tool, r *result) error) error {
		for _, t := range tools {
			fmt.Printf("%-8s %s…\n", t.name(), what)
			if err := fn(t, res[t.name()]); err != nil {
				return fmt.Errorf("%s %s: %w", t.name(), what, err)
			}
		}
		return nil
	}
	if err := step("full import", func(t tool, r *result) error {
		st, err := t.index(ctx)
		r.importWall, r.importRSS = st.wall, st.rss
		return err
	}); err != nil {
		return err
	}
	if err := step("index size", func(t tool, r *result) error {
		r.size = t.size()
		if h, ok := t.(*hestiaTool); ok {
			r.blobs = h.blobs()
		}
		return nil
	}); err != nil {
		return err
	}
	// The repeated steps go round the tools once per repetition, so a
	// machine that speeds up or slows down over the minutes a step takes
	// (a shared host does) moves every tool's figures alike; each round
	// starts with the next tool, so none always follows mu's heavy rescan.
	fmt.Printf("all      rescan of an unchanged tree…\n")
	// The first rescan may still settle state (directory mtimes the import
	// did not trust yet); the median of the next ones is what a user
	// rerunning it sees.
	rescans := map[string][]time.Duration{}
	for i := 0; i <= c.reps; i++ {
		for _, t := range rotated(tools, i) {
			st, err := t.index(ctx)
			if err != nil {
				return fmt.Errorf("%s rescan of an unchanged tree: %w", t.name(), err)
			}
			if i > 0 {
				rescans[t.name()] = append(rescans[t.name()], st.wall)
			}
		}
	}
	for _, t := range tools {
		res[t.name()].rescan = median(rescans[t.name()])
	}
	qs, err := pickQueries(c.corpus)
	if err != nil {
		return err
	}
	for _, h := range hestias(tools) {
		if err := h.resolve(ctx, qs); err != nil {
			return err
		}
	}
	fmt.Printf("all      queries (one process each)…\n")
	for _, q := range qs {
		ds, cs := map[string][]time.Duration{}, map[string][]time.Duration{}
		for i := 0; i < c.reps; i++ {
			for _, t := range rotated(tools, i) {
				st, err := t.search(ctx, q)
				if err != nil {
					return fmt.Errorf("%s query %s: %w", t.name(), q.name, err)
				}
				ds[t.name()], cs[t.name()] = append(ds[t.name()], st.wall), append(cs[t.name()], st.cpu)
			}
		}
		for _, t := range tools {
			r := res[t.name()]
			r.queries[q.name], r.queryCPU[q.name] = median(ds[t.name()]), median(cs[t.name()])
		}
	}
	// What starting a process costs on this machine, beside the queries:
	// every one-process figure above includes it, and it differs
	// fivefold between machines (an empty Go program: 1.1 ms on one,
	// 5-6 ms on a VM where each page fault traps to the host).
	floor := processFloor(ctx, c)
	if err := moveAdded(addDir, c.corpus); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("incremental import of %d new messages", c.added), func(t tool, r *result) error {
		st, err := t.index(ctx)
		r.incremental = st.wall
		return err
	}); err != nil {
		return err
	}
	// Last: the vectors the daemon would compute in the background, then
	// the daemon itself, answering as it does once they exist (hybrid
	// search); the steps above measure the mirror alone.
	for _, h := range hestias(tools) {
		fmt.Printf("%-8s vectors for every message…\n", h.name())
		st, out, err := runCmd(ctx, h.env(), h.bin, "mail", "embed")
		if err != nil {
			return fmt.Errorf("%s mail embed: %w: %s", h.name(), err, out)
		}
		res[h.name()].embedWall, res[h.name()].sizeVectors = st.wall, h.size()
	}
	for _, h := range hestias(tools) {
		fmt.Printf("%-8s daemon HTTP search…\n", h.name())
		var others []tool
		for _, t := range tools {
			if _, isHestia := t.(*hestiaTool); !isHestia {
				others = append(others, t)
			}
		}
		d, cli, alongside, err := h.daemonSearch(ctx, qs, c.reps, others)
		if err != nil {
			fmt.Printf("%s daemon search failed: %v\n", h.name(), err)
		}
		res[h.name()].http, res[h.name()].cliDaemon = d, cli
		if h.name() == "hestia" {
			for name, a := range alongside {
				res[name].alongside = a
			}
		}
	}
	printTable(os.Stdout, c, corpusBytes, tools, res, qs)
	printFloor(os.Stdout, floor, res, qs)
	fmt.Printf("load average at end: %s\n", loadavg())
	return nil
}

type result struct {
	importWall, rescan, incremental time.Duration
	// alongside is notmuch's or mu's one-process query time measured
	// between the CLI queries Hestia's daemon answers (same minutes).
	alongside   map[string]time.Duration
	importRSS   int64 // KiB
	size        int64
	embedWall   time.Duration // hestia: vectors for every message
	sizeVectors int64         // hestia: mail.db once they are stored
	blobs       int64         // hestia's attachment copies, beside the index
	queries     map[string]time.Duration
	queryCPU    map[string]time.Duration
	http        map[string]time.Duration
	cliDaemon   map[string]time.Duration // CLI processes while the daemon runs
}

type stat struct {
	wall time.Duration
	cpu  time.Duration // user + system time of the process
	rss  int64
}

type query struct {
	name, label string
	words       []string // free text
	phrase      string
	from        string
	after       string
	before      string
	subject     string
	// show, when set ("read" or "thread"), shows the message whose
	// Message-ID is msgid (the corpus file file) or its whole thread
	// instead of searching.
	show, msgid, file string
}

// tool is one indexer under test.
type tool interface {
	name() string
	index(ctx context.Context) (stat, error)
	size() int64
	search(ctx context.Context, q query) (stat, error)
}

// rotated is ts starting at its i-th (modulo its length).
func rotated[T any](ts []T, i int) []T {
	k := i % len(ts)
	return append(append([]T(nil), ts[k:]...), ts[:k]...)
}

// hestias are the Hestia builds among ts.
func hestias(ts []tool) []*hestiaTool {
	var out []*hestiaTool
	for _, t := range ts {
		if h, ok := t.(*hestiaTool); ok {
			out = append(out, h)
		}
	}
	return out
}

// runCmd runs a command to completion, returning its wall time and peak RSS.
func runCmd(ctx context.Context, env []string, name string, args ...string) (stat, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	st := time.Now()
	err := cmd.Run()
	wall := time.Since(st)
	s := stat{wall: wall}
	if cmd.ProcessState != nil {
		s.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			s.rss = ru.Maxrss
		}
	}
	if err != nil {
		return s, out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(out.String(), 2000))
	}
	return s, out.String(), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// --- Hestia ---

type hestiaTool struct {
	c     config
	label string // "hestia", or "hestia-base" for -baseline
	bin   string
	home  string
	ids   map[string]int64 // Hestia's id of each shown Message-ID
}

func newHestia(c config) *hestiaTool {
	return &hestiaTool{c: c, label: "hestia", bin: c.hestia, home: filepath.Join(c.work, "hestia")}
}

func (h *hestiaTool) name() string { return h.label }

func (h *hestiaTool) env() []string { return []string{"HESTIA_HOME=" + h.home} }

func (h *hestiaTool) index(ctx context.Context) (stat, error) {
	st, _, err := runCmd(ctx, h.env(), h.bin, "mail", "import", "--quiet", h.c.corpus)
	return st, err
}

// size is the index as the issue measures it: mail.db and its WAL. The
// attachment copies under DATA/mail are reported apart (blobs): they are
// a store of their own, which notmuch and mu do not keep.
func (h *hestiaTool) size() int64 {
	var n int64
	for _, f := range []string{"mail.db", "mail.db-wal"} {
		if fi, err := os.Stat(filepath.Join(h.home, "db", f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func (h *hestiaTool) blobs() int64 { return dirSize(filepath.Join(h.home, "mail")) }

func (h *hestiaTool) args(q query) []string {
	if q.show != "" {
		return []string{"mail", q.show, strconv.FormatInt(h.ids[q.msgid], 10)}
	}
	a := []string{"mail", "search", "--limit", "50"}
	if q.from != "" {
		a = append(a, "--from", q.from)
	}
	if q.after != "" {
		a = append(a, "--after", q.after, "--before", q.before)
	}
	if q.subject != "" {
		a = append(a, "--subject", q.subject)
	}
	if q.phrase != "" {
		a = append(a, `"`+q.phrase+`"`)
	}
	return append(a, q.words...)
}

// resolve finds Hestia's id of each message the queries show (the CLI
// reads by id), before anything is timed.
func (h *hestiaTool) resolve(ctx context.Context, qs []query) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.home, "db", "mail.db")+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	h.ids = map[string]int64{}
	for _, q := range qs {
		if q.show == "" {
			continue
		}
		var id int64
		if err := db.QueryRowContext(ctx, `SELECT id FROM messages WHERE message_id = ? AND deleted_at IS NULL`, q.msgid).Scan(&id); err != nil {
			return fmt.Errorf("finding message %s in Hestia's mirror: %w", q.msgid, err)
		}
		h.ids[q.msgid] = id
	}
	return nil
}

func (h *hestiaTool) search(ctx context.Context, q query) (stat, error) {
	st, _, err := runCmd(ctx, h.env(), h.bin, h.args(q)...)
	return st, err
}

// httpPath is the daemon's HTTP route answering what q asks.
func (h *hestiaTool) httpPath(q query) string {
	switch q.show {
	case "read":
		return fmt.Sprintf("/api/mail/messages/%d", h.ids[q.msgid])
	case "thread":
		return fmt.Sprintf("/api/mail/messages/%d/thread", h.ids[q.msgid])
	}
	v := url.Values{"limit": {"50"}}
	text := strings.Join(q.words, " ")
	if q.phrase != "" {
		text = `"` + q.phrase + `" ` + text
	}
	if text = strings.TrimSpace(text); text != "" {
		v.Set("q", text)
	}
	if q.from != "" {
		v.Set("from", q.from)
	}
	if q.after != "" {
		v.Set("after", q.after)
		v.Set("before", q.before)
	}
	if q.subject != "" {
		v.Set("subject", q.subject)
	}
	return "/api/mail/search?" + v.Encode()
}

// daemonSearch starts Hestia's daemon on a free loopback port and times
// its HTTP routes from this process (warm caches, no process start), then
// the CLI's queries (which it answers), each repetition followed by the
// same query of each of others, one process each, for a comparison from
// the same minutes.
func (h *hestiaTool) daemonSearch(ctx context.Context, qs []query, reps int, others []tool) (httpP50, cliP50 map[string]time.Duration, alongside map[string]map[string]time.Duration, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, h.bin, "serve", "--addr", addr)
	cmd.Env = append(os.Environ(), h.env()...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, nil, nil, err
	}
	defer func() {
		cancel() // SIGTERM, then wait for the daemon to stop
		cmd.Wait()
	}()
	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, nil, errors.New("daemon did not become healthy in 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	tok, err := os.ReadFile(filepath.Join(h.home, "auth-token"))
	if err != nil {
		return nil, nil, nil, err
	}
	out := map[string]time.Duration{}
	for _, q := range qs {
		u := base + h.httpPath(q)
		var ds []time.Duration
		for i := 0; i <= reps; i++ {
			req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
			st := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return out, nil, nil, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return out, nil, nil, fmt.Errorf("%s: HTTP %d", q.name, resp.StatusCode)
			}
			if i > 0 { // the first request warms the caches
				ds = append(ds, time.Since(st))
			}
		}
		out[q.name] = median(ds)
	}
	cli := map[string]time.Duration{}
	alongside = map[string]map[string]time.Duration{}
	for _, t := range others {
		alongside[t.name()] = map[string]time.Duration{}
	}
	for _, q := range qs {
		ds := map[string][]time.Duration{}
		for i := 0; i < reps; i++ {
			for _, t := range rotated(append([]tool{h}, others...), i) {
				st, err := t.search(ctx, q)
				if err != nil {
					return out, cli, alongside, fmt.Errorf("%s query %s with Hestia's daemon running: %w", t.name(), q.name, err)
				}
				ds[t.name()] = append(ds[t.name()], st.wall)
			}
		}
		cli[q.name] = median(ds[h.name()])
		for _, t := range others {
			alongside[t.name()][q.name] = median(ds[t.name()])
		}
	}
	return out, cli, alongside, nil
}

// --- notmuch ---

type notmuchTool struct {
	c   config
	cfg string
	db  string
}

func newNotmuch(c config) *notmuchTool {
	dir := filepath.Join(c.work, "notmuch")
	os.MkdirAll(filepath.Join(dir, "db"), 0o755)
	cfg := filepath.Join(dir, "config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[database]\npath=%s\nmail_root=%s\n[new]\ntags=inbox;\n[maildir]\nsynchronize_flags=false\n", filepath.Join(dir, "db"), c.corpus)), 0o644)
	return &notmuchTool{c: c, cfg: cfg, db: filepath.Join(dir, "db")}
}

func (n *notmuchTool) name() string { return "notmuch" }

func (n *notmuchTool) index(ctx context.Context) (stat, error) {
	st, _, err := runCmd(ctx, nil, "notmuch", "--config="+n.cfg, "new", "--quiet")
	return st, err
}

func (n *notmuchTool) size() int64 { return dirSize(n.db) }

func (n *notmuchTool) search(ctx context.Context, q query) (stat, error) {
	switch q.show {
	case "read":
		st, _, err := runCmd(ctx, nil, "notmuch", "--config="+n.cfg, "show", "id:"+q.msgid)
		return st, err
	case "thread":
		st, _, err := runCmd(ctx, nil, "notmuch", "--config="+n.cfg, "show", "thread:{id:"+q.msgid+"}")
		return st, err
	}
	terms := append([]string(nil), q.words...)
	if q.phrase != "" {
		terms = append(terms, `"`+q.phrase+`"`)
	}
	if q.from != "" {
		terms = append(terms, "from:"+q.from)
	}
	if q.after != "" {
		terms = append(terms, "date:"+q.after+".."+q.before)
	}
	if q.subject != "" {
		terms = append(terms, "subject:"+q.subject)
	}
	st, _, err := runCmd(ctx, nil, "notmuch", append([]string{"--config=" + n.cfg, "search", "--limit=50"}, terms...)...)
	return st, err
}

// --- mu ---

type muTool struct {
	c    config
	home string
}

func newMu(c config) *muTool { return &muTool{c: c, home: filepath.Join(c.work, "mu")} }

func (m *muTool) name() string { return "mu" }

func (m *muTool) index(ctx context.Context) (stat, error) {
	if _, err := os.Stat(filepath.Join(m.home, "xapian")); err != nil {
		if _, _, err := runCmd(ctx, nil, "mu", "init", "--muhome="+m.home, "--maildir="+m.c.corpus); err != nil {
			return stat{}, err
		}
	}
	st, _, err := runCmd(ctx, nil, "mu", "index", "--muhome="+m.home, "--quiet")
	return st, err
}

func (m *muTool) size() int64 { return dirSize(filepath.Join(m.home, "xapian")) }

func (m *muTool) search(ctx context.Context, q query) (stat, error) {
	switch q.show {
	case "read":
		st, _, err := runCmd(ctx, nil, "mu", "view", "--muhome="+m.home, q.file)
		return st, err
	case "thread":
		st, _, err := runCmd(ctx, nil, "mu", "find", "--muhome="+m.home, "--include-related", "--threads", "msgid:"+q.msgid)
		return st, err
	}
	terms := append([]string(nil), q.words...)
	if q.phrase != "" {
		terms = append(terms, `"`+q.phrase+`"`)
	}
	if q.from != "" {
		terms = append(terms, "from:"+q.from)
	}
	if q.after != "" {
		terms = append(terms, "date:"+strings.ReplaceAll(q.after, "-", "")+".."+strings.ReplaceAll(q.before, "-", ""))
	}
	if q.subject != "" {
		terms = append(terms, "subject:"+q.subject)
	}
	st, out, err := runCmd(ctx, nil, "mu", append([]string{"find", "--muhome=" + m.home, "--maxnum=50"}, terms...)...)
	if err != nil && strings.Contains(out, "no matches") {
		err = nil // mu exits 2 (or 4) when nothing matches
	}
	return st, err
}

// --- corpus and queries ---

func ensureCorpus(dir string, n int) error {
	stamp := filepath.Join(dir, ".hestia-bench-complete")
	if b, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(b)) == fmt.Sprint(n) {
		return nil
	}
	os.RemoveAll(dir)
	fmt.Printf("generating %d messages into %s…\n", n, dir)
	st := time.Now()
	if _, err := mailbench.Generate(dir, mailbench.Options{Messages: n, Seed: 42}); err != nil {
		return err
	}
	fmt.Printf("generated in %s\n", time.Since(st).Round(time.Second))
	return os.WriteFile(stamp, []byte(fmt.Sprint(n)), 0o644)
}

const addedPrefix = "bench-added-"

func moveAdded(from, corpus string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(corpus, filepath.Dir(rel), addedPrefix+d.Name())
		return os.Rename(p, dst)
	})
}

func removeAdded(corpus string) error {
	return filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), addedPrefix) {
			return os.Remove(p)
		}
		return err
	})
}

// pickQueries chooses the query words from the corpus itself, so every
// tool gets the same realistic queries: a rare body word, a common one, a
// phrase copied from a message, a sender with a date range, a topical word
// with the same range, a word that occurs nowhere, and a subject word.
func pickQueries(corpus string) ([]query, error) {
	var files []string
	filepath.WalkDir(filepath.Join(corpus, "cur"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && len(files) < 2000 {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		return nil, errors.New("corpus has no INBOX messages")
	}
	sort.Strings(files)
	freq := map[string]int{}
	var phrase, from, msgid, shown string
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		head, body, _ := strings.Cut(string(b), "\n\n")
		// The message read and threaded: the first reply from the middle
		// on, so that its thread holds more than itself.
		if msgid == "" && i >= len(files)/2 && strings.Contains(head, "\nIn-Reply-To:") {
			msgid, shown = headerMessageID(head), f
		}
		if strings.Contains(head, "multipart") {
			continue
		}
		words := strings.Fields(strings.ToLower(strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == ' ' || r == '\n' {
				return r
			}
			return ' '
		}, body)))
		for _, w := range words {
			freq[w]++
		}
		if i == len(files)/2 && len(words) > 12 {
			phrase = strings.Join(words[8:11], " ")
			sc := bufio.NewScanner(strings.NewReader(head))
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "From: ") {
					if a, b, ok := strings.Cut(l, "<"); ok && a != "" {
						from = strings.TrimSuffix(b, ">")
					}
				}
			}
		}
	}
	var rare string
	var keys []string
	for w := range freq {
		keys = append(keys, w)
	}
	sort.Strings(keys)
	for _, w := range keys {
		if freq[w] == 2 && len(w) >= 8 {
			rare = w
			break
		}
	}
	if rare == "" || phrase == "" || from == "" || msgid == "" {
		return nil, errors.New("corpus too small to pick queries")
	}
	return []query{
		{name: "rare", label: "rare word", words: []string{rare}},
		{name: "common", label: "common word, first 50", words: []string{"water"}},
		{name: "phrase", label: "phrase", phrase: phrase},
		{name: "fromdate", label: "from + date range", from: from, after: "2024-01-01", before: "2024-07-01"},
		{name: "worddate", label: "word + date range", words: []string{"contract"}, after: "2024-01-01", before: "2024-07-01"},
		{name: "absent", label: "absent word", words: []string{"zqxjvwkq"}},
		{name: "subject", label: "subject word", subject: "invoice"},
		{name: "read", label: "read one message", show: "read", msgid: msgid, file: shown},
		{name: "thread", label: "show its whole thread", show: "thread", msgid: msgid, file: shown},
	}, nil
}

// headerMessageID is the Message-ID in a message's header, without its
// angle brackets, or "".
func headerMessageID(head string) string {
	for _, l := range strings.Split(head, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Message-ID") {
			return strings.Trim(strings.TrimSpace(v), "<>")
		}
	}
	return ""
}

// --- output ---

func printTable(w io.Writer, c config, corpusBytes int64, tools []tool, res map[string]*result, qs []query) {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.name()
	}
	h, hasH := res["hestia"]
	nm, hasN := res["notmuch"]
	mu, hasM := res["mu"]
	fmt.Fprintf(w, "\n%d messages, corpus %.0f MB, one sequential run\n\n", c.n, mb(corpusBytes))
	fmt.Fprintf(w, "| | %s | target | met |\n|---|%s---|---|\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	row := func(label string, cell func(r *result) string, target string, met func() (bool, bool)) {
		cells := make([]string, len(names))
		for i, n := range names {
			cells[i] = cell(res[n])
		}
		m := ""
		if ok, known := met(); known {
			m = map[bool]string{true: "yes", false: "NO"}[ok]
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", label, strings.Join(cells, " | "), target, m)
	}
	row("full import wall / peak RSS", func(r *result) string {
		return fmt.Sprintf("%.1f s / %d MB", r.importWall.Seconds(), r.importRSS/1024)
	}, "≥ 3× faster than notmuch, ≥ 2× faster than mu, RSS ≤ ½ notmuch", func() (bool, bool) {
		if !hasH || !hasN || !hasM {
			return false, false
		}
		return h.importWall*3 <= nm.importWall && h.importWall*2 <= mu.importWall && h.importRSS*2 <= nm.importRSS, true
	})
	row("mail.db size / corpus", func(r *result) string {
		return fmt.Sprintf("%.0f MB (%.2f×)", mb(r.size), float64(r.size)/float64(corpusBytes))
	}, "≤ 1.5× the corpus", func() (bool, bool) { return hasH && float64(h.size) <= 1.5*float64(corpusBytes), hasH })
	row("re-run on an unchanged tree, p50", func(r *result) string { return msecs(r.rescan) }, "≤ notmuch", func() (bool, bool) {
		return hasH && hasN && h.rescan <= nm.rescan, hasH && hasN
	})
	row(fmt.Sprintf("%d new messages added", c.added), func(r *result) string { return secs(r.incremental) }, "faster than both", func() (bool, bool) {
		return hasH && hasN && hasM && h.incremental < nm.incremental && h.incremental < mu.incremental, hasH && hasN && hasM
	})
	for _, q := range qs {
		// Without the daemon the bar is parity (issue 32 retired issue
		// 16's half of notmuch: see docs/decisions/one-binary.md).
		row("CLI "+q.label+", p50 wall (cpu)", func(r *result) string {
			return msecs(r.queries[q.name]) + " (" + msecs(r.queryCPU[q.name]) + ")"
		}, "≤ notmuch", func() (bool, bool) {
			return hasH && hasN && h.queries[q.name] <= nm.queries[q.name], hasH && hasN
		})
	}
	// notmuch and mu have no daemon: their cells are their one-process
	// figures again, measured between Hestia's (the comparison the issue
	// asks for, from the same minutes).
	oneProcess := func(r *result, q string) time.Duration {
		if r.alongside != nil {
			return r.alongside[q]
		}
		return r.queries[q]
	}
	for _, q := range qs {
		if !hasH || h.cliDaemon == nil {
			break
		}
		row("CLI "+q.label+", Hestia's daemon running, p50 wall", func(r *result) string {
			if r.cliDaemon != nil {
				return msecs(r.cliDaemon[q.name])
			}
			return msecs(oneProcess(r, q.name))
		}, "≤ ½ notmuch", func() (bool, bool) {
			return hasN && h.cliDaemon[q.name]*2 <= oneProcess(nm, q.name), hasN
		})
	}
	if hasH {
		fmt.Fprintf(w, "\nHestia's attachment copies (DATA/mail, beside mail.db): %.0f MB (%.2f× the corpus); index + copies %.2f×\n",
			mb(h.blobs), float64(h.blobs)/float64(corpusBytes), float64(h.size+h.blobs)/float64(corpusBytes))
	}
	if hasH && h.embedWall > 0 {
		fmt.Fprintf(w, "\nHestia's vectors (`hestia mail embed`, local embedder, what the daemon does in the background): %s; mail.db with them %.0f MB (%.2f× the corpus). The daemon rows above and below search with them (hybrid).\n",
			secs(h.embedWall), mb(h.sizeVectors), float64(h.sizeVectors)/float64(corpusBytes))
	}
	for _, name := range names {
		r := res[name]
		if r.http == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s daemon over HTTP (GET /api/mail/search, read and thread GET /api/mail/messages/{id}[/thread]; warm, p50):", name)
		for _, q := range qs {
			fmt.Fprintf(w, " %s %s;", q.name, msecs(r.http[q.name]))
		}
		fmt.Fprintln(w)
	}
	if hasH && hasN {
		fmt.Fprintf(w, "\nratios notmuch/hestia: import %.1f×, rescan %.1f×, incremental %.1f×", ratio(nm.importWall, h.importWall), ratio(nm.rescan, h.rescan), ratio(nm.incremental, h.incremental))
		for _, q := range qs {
			fmt.Fprintf(w, ", %s %.1f×", q.name, ratio(nm.queries[q.name], h.queries[q.name]))
		}
		fmt.Fprintln(w)
	}
	if hasH && hasM {
		fmt.Fprintf(w, "ratios mu/hestia: import %.1f×, rescan %.1f×, incremental %.1f×", ratio(mu.importWall, h.importWall), ratio(mu.rescan, h.rescan), ratio(mu.incremental, h.incremental))
		for _, q := range qs {
			fmt.Fprintf(w, ", %s %.1f×", q.name, ratio(mu.queries[q.name], h.queries[q.name]))
		}
		fmt.Fprintln(w)
	}
	var qdesc []string
	for _, q := range qs {
		d := strings.Join(q.words, " ")
		if q.phrase != "" {
			d = `"` + q.phrase + `"`
		}
		if q.after != "" {
			d += " " + q.after + ".." + q.before
		}
		if q.from != "" {
			d = "from " + q.from + " " + q.after + ".." + q.before
		}
		if q.subject != "" {
			d = "subject " + q.subject
		}
		if q.show != "" {
			d = "Message-ID " + q.msgid
		}
		qdesc = append(qdesc, q.name+": "+d)
	}
	fmt.Fprintf(w, "queries: %s\n", strings.Join(qdesc, "; "))
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func secs(d time.Duration) string  { return fmt.Sprintf("%.2f s", d.Seconds()) }
func msecs(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func mb(n int64) float64           { return float64(n) / 1e6 }

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// floorRun is one program of the process floor and its median wall time.
type floorRun struct {
	label string
	p50   time.Duration
}

// processFloor times, in turn and c.reps rounds, programs that do nothing
// but start: /bin/true, an empty static Go program (built here when a Go
// toolchain is at hand) and `hestia version`, the start every CLI query
// pays, with the daemon or without. A program that cannot be had is left
// out.
func processFloor(ctx context.Context, c config) []floorRun {
	fmt.Printf("all      process start…\n")
	type prog struct {
		label string
		argv  []string
		walls []time.Duration
	}
	var progs []*prog
	if _, err := os.Stat("/bin/true"); err == nil {
		progs = append(progs, &prog{label: "/bin/true", argv: []string{"/bin/true"}})
	}
	if bin, err := emptyGoProgram(ctx, c.work); err == nil {
		progs = append(progs, &prog{label: "an empty static Go program", argv: []string{bin}})
	} else {
		fmt.Printf("empty Go program left out: %v\n", err)
	}
	progs = append(progs, &prog{label: "`hestia version`", argv: []string{c.hestia, "version"}})
	for i := 0; i < c.reps; i++ {
		for _, p := range rotated(progs, i) {
			st, _, err := runCmd(ctx, nil, p.argv[0], p.argv[1:]...)
			if err != nil {
				fmt.Printf("%s left out: %v\n", p.label, err)
				return nil
			}
			p.walls = append(p.walls, st.wall)
		}
	}
	out := make([]floorRun, len(progs))
	for j, p := range progs {
		out[j] = floorRun{p.label, median(p.walls)}
	}
	return out
}

// emptyGoProgram builds, under dir, a static Go program whose main does
// nothing, as the Makefile builds Hestia's binaries.
func emptyGoProgram(ctx context.Context, dir string) (string, error) {
	src := filepath.Join(dir, "empty")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module empty\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(src, "empty")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin+".new", ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w: %s", err, tail(string(out), 500))
	}
	// Copied with write(2), as `make build` installs: a file the linker
	// wrote through its shared mapping starts slower (see the Makefile).
	b, err := os.ReadFile(bin + ".new")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		return "", err
	}
	return bin, nil
}

// printFloor prints processFloor's figures under the table, and the
// queries whose daemon target (½ notmuch) is below the start of the
// binary alone: no answer of the daemon, however fast, meets those.
func printFloor(w io.Writer, floor []floorRun, res map[string]*result, qs []query) {
	if len(floor) == 0 {
		return
	}
	var parts []string
	var start time.Duration
	for _, f := range floor {
		parts = append(parts, fmt.Sprintf("%s %s", f.label, msecs(f.p50)))
		if f.label == "`hestia version`" {
			start = f.p50
		}
	}
	fmt.Fprintf(w, "process start on this machine (p50, in turn with each other): %s. Every CLI row pays `hestia version`'s start.\n", strings.Join(parts, "; "))
	nm, ok := res["notmuch"]
	if !ok || start == 0 {
		return
	}
	var below []string
	for _, q := range qs {
		if half := nm.queries[q.name] / 2; half > 0 && half < start {
			below = append(below, fmt.Sprintf("%s (½ notmuch %s)", q.name, msecs(half)))
		}
	}
	if len(below) > 0 {
		fmt.Fprintf(w, "½ notmuch is under `hestia version`'s start alone (%s) for: %s.\n", msecs(start), strings.Join(below, ", "))
	}
}
