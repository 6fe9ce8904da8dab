package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/sandbox"
)

// Runner runs parsed pipelines.
type Runner struct {
	Paths *pathpolicy.Policy
	Home  string
	// Timeout bounds a whole pipeline (default 30 s).
	Timeout time.Duration
	// MaxOutput is what the model sees of stdout (default 64 KiB); the
	// pipeline is killed once it has written MaxRead (default 8 MiB).
	MaxOutput int
	MaxRead   int
	// MaxWalk bounds the entries checked under a directory handed to a
	// recursive program (default 20,000).
	MaxWalk int
	// SearchPath is where programs are looked up; never the daemon's PATH.
	SearchPath []string
	// TZ is passed on so date and ls show local time.
	TZ string
	// Sandbox confines every program (nil: none, only the clean
	// environment). shell_run programs get a read-only view and no
	// network; shell_exec's may write the working folder (the user
	// approved them), and use the network only with ExecNetwork.
	Sandbox *sandbox.Sandbox
	// ExecNetwork lets shell_exec's programs use the network. Off, they
	// run in their own network namespace (bubblewrap) or with TCP denied
	// (Landlock): sharing the host's would hand them the daemon's
	// loopback API, and approving one program is not granting that.
	ExecNetwork bool
	// Read are the folders programs may read (the path policy's roots, or
	// the home); Hide are the paths they may not (credentials, Hestia's
	// data). Both feed the sandbox.
	Read, Hide []string
	// Limits bound each sandboxed program (zero: the sandbox defaults).
	Limits sandbox.Limits
}

func (r *Runner) defaults() {
	if r.Timeout <= 0 {
		r.Timeout = 30 * time.Second
	}
	if r.MaxOutput <= 0 {
		r.MaxOutput = 64 << 10
	}
	if r.MaxRead <= 0 {
		r.MaxRead = 8 << 20
	}
	if r.MaxWalk <= 0 {
		r.MaxWalk = 20_000
	}
	if len(r.SearchPath) == 0 {
		r.SearchPath = []string{"/usr/local/bin", "/usr/bin", "/bin"}
		if runtime.GOOS == "darwin" {
			r.SearchPath = append([]string{"/opt/homebrew/bin"}, r.SearchPath...)
		}
	}
}

// Prepared is a checked pipeline: absolute program paths and expanded,
// policy-checked arguments, ready to run.
type Prepared struct {
	Argv [][]string
	cmds []Command
	Dir  string
	// exec marks shell_exec: a writable working folder; net, the network
	// (the call asked for it and the user approved the card saying so).
	exec, net bool
}

// Prepare checks a parsed pipeline against the allow-list and the path
// policy and expands ~ and globs.
func (r *Runner) Prepare(p *Pipeline) (*Prepared, error) {
	r.defaults()
	dir, err := r.Paths.Expand(".")
	if err != nil {
		return nil, err
	}
	out := &Prepared{Dir: dir, cmds: p.Commands}
	for _, c := range p.Commands {
		name := c.Args[0].Text
		if c.Args[0].Glob || c.Args[0].Tilde || strings.ContainsRune(name, '/') {
			return nil, refuse("run programs by name, not by path or pattern (%q)", name)
		}
		prog, ok := allowed()[name]
		if !ok {
			return nil, refuse("%s is not on the allow-list of read-only programs (%s); use shell_exec, which asks the user", name, strings.Join(sortedAllowed(), ", "))
		}
		args, err := r.expand(c.Args[1:])
		if err != nil {
			return nil, err
		}
		pa, err := prog.parse(name, args)
		if err != nil {
			return nil, err
		}
		operands, files, err := r.checkArgs(name, prog, pa)
		if err != nil {
			return nil, err
		}
		if pa.recursive {
			if len(operands) == 0 {
				operands = []string{dir}
			}
			for _, o := range append(operands, files...) {
				if err := r.walk(name, o); err != nil {
					return nil, err
				}
			}
			if name == "diff" && !slices.Contains(pa.args, "--no-dereference") {
				// diff -r follows symbolic links it meets inside the
				// folders (the walk does not): with -N it would print a
				// linked credential file in full.
				pa.args = append([]string{"--no-dereference"}, pa.args...)
			}
		}
		exe, err := r.lookPath(name)
		if err != nil {
			return nil, err
		}
		out.Argv = append(out.Argv, append([]string{exe}, pa.args...))
	}
	return out, nil
}

func sortedAllowed() []string {
	names := Allowed()
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if names[j] < names[i] {
				names[i], names[j] = names[j], names[i]
			}
		}
	}
	return names
}

func (r *Runner) lookPath(name string) (string, error) {
	for _, d := range r.SearchPath {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", refuse("%s is allowed but not installed (looked in %s)", name, strings.Join(r.SearchPath, ":"))
}

// expand applies ~ and glob expansion to arguments.
func (r *Runner) expand(words []Word) ([]string, error) {
	var out []string
	for _, w := range words {
		text := w.Text
		if w.Tilde {
			switch {
			case text == "~":
				text = r.Home
			case strings.HasPrefix(text, "~/"):
				text = filepath.Join(r.Home, text[2:])
			default:
				return nil, refuse("%q names another user's home; only ~/ is supported", text)
			}
		}
		if !w.Glob {
			out = append(out, text)
			continue
		}
		if strings.HasPrefix(text, "-") {
			return nil, refuse("a pattern in an option (%q) is not expanded; quote it", text)
		}
		abs, err := r.Paths.Expand(text)
		if err != nil {
			return nil, refuse("glob %q: %v", text, err)
		}
		// The folder the pattern lists must itself be allowed.
		base := abs
		for strings.ContainsAny(base, "*?[") {
			base = filepath.Dir(base)
		}
		if err := r.Paths.Check(base); err != nil {
			return nil, refuse("glob %q: %v", text, err)
		}
		matches, err := filepath.Glob(abs)
		if err != nil {
			return nil, refuse("glob %q is malformed: %v", text, err)
		}
		if len(matches) == 0 {
			return nil, refuse("glob %q matched nothing", text)
		}
		if len(matches) > 1000 {
			return nil, refuse("glob %q matched %d paths; at most 1000", text, len(matches))
		}
		out = append(out, matches...)
	}
	return out, nil
}

// checkArgs runs every path the program will open through the path
// policy: operands (all but a pattern), option values that name files, and
// other option values that look like paths. It returns the resolved
// operands and file values, which a recursive program walks.
func (r *Runner) checkArgs(name string, prog program, pa *parsed) (operands, files []string, err error) {
	for _, v := range pa.paths {
		abs, err := r.checkPath(v)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, abs)
	}
	for _, v := range pa.texts {
		if looksLikePath(v) {
			if _, err := r.checkPath(v); err != nil {
				return nil, nil, err
			}
		}
	}
	ops := pa.operands
	if prog.pattern && !pa.patternGiven && len(ops) > 0 {
		pat := ops[0]
		ops = ops[1:]
		if prog.checkPattern != nil {
			if err := prog.checkPattern(name, pat); err != nil {
				return nil, nil, err
			}
		}
		if looksLikePath(pat) {
			if _, err := r.checkPath(pat); err != nil {
				return nil, nil, err
			}
		}
	}
	if prog.maxOperands > 0 && len(ops) > prog.maxOperands {
		return nil, nil, refuse("%s takes at most %d file here (a second one would be written)", name, prog.maxOperands)
	}
	for _, a := range ops {
		abs, err := r.checkPath(a)
		if err != nil {
			return nil, nil, err
		}
		operands = append(operands, abs)
	}
	return operands, files, nil
}

func looksLikePath(s string) bool {
	return strings.ContainsRune(s, '/') || strings.HasPrefix(s, "~") || strings.HasPrefix(s, ".")
}

// checkPath resolves an argument as a path relative to the working folder:
// an existing path is checked with its symlinks resolved, a missing one as
// written. It returns the resolved (or, when missing, expanded) path.
func (r *Runner) checkPath(a string) (string, error) {
	abs, err := r.Paths.Expand(a)
	if err != nil {
		return "", refuse("argument %q: %v", a, err)
	}
	if _, err := os.Lstat(abs); err != nil {
		if err := r.Paths.Check(abs); err != nil {
			return "", fmt.Errorf("argument %q: %w", a, errors.Join(err, ErrRefused))
		}
		return abs, nil
	}
	res, err := r.Paths.Resolve(abs)
	if err != nil {
		return "", fmt.Errorf("argument %q: %w", a, errors.Join(err, ErrRefused))
	}
	return res, nil
}

// walk checks every entry under a folder a recursive program will read:
// one sensitive file inside refuses the command, so `grep -r key ~` cannot
// read ~/.ssh. Symbolic links are not followed (the options that would
// follow them are refused).
func (r *Runner) walk(name, root string) error {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return nil
	}
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are unreadable for the program too
		}
		n++
		if n > r.MaxWalk {
			return refuse("%s would read more than %d entries under %s; name a narrower folder", name, r.MaxWalk, root)
		}
		if cerr := r.Paths.Check(p); cerr != nil {
			return refuse("%s would read %s, which is refused (%v); name a folder that does not contain it", name, p, cerr)
		}
		return nil
	})
	return err
}

// Result is what a pipeline did.
type Result struct {
	Sandbox   sandbox.Mode
	Exit      []string // per command: "0", "1", "signal: killed"
	Stdout    string
	Stderr    string
	Truncated int // stdout bytes not shown
	TimedOut  bool
	Duration  time.Duration
}

// Run starts a prepared pipeline with a clean environment, each program in
// its own process group, killed at the timeout or once stdout passes
// MaxRead.
func (r *Runner) Run(ctx context.Context, p *Prepared) (*Result, error) {
	r.defaults()
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	env := []string{"PATH=" + strings.Join(r.SearchPath, ":"), "HOME=" + r.Home, "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TERM=dumb", "NO_COLOR=1"}
	if r.TZ != "" {
		env = append(env, "TZ="+r.TZ)
	}
	stdout := &capWriter{show: r.MaxOutput, limit: r.MaxRead, over: cancel}
	stderr := &capWriter{show: 8 << 10, limit: 1 << 20}
	cmds := make([]*exec.Cmd, len(p.Argv))
	var closeAfterStart []*os.File
	mode := sandbox.None
	if r.Sandbox != nil {
		mode = r.Sandbox.Status(ctx).Mode
	}
	spec := r.spec(p.Dir, p.exec, p.net)
	if mode == sandbox.Bubblewrap {
		res, err := r.runInWorker(ctx, p, spec, env, stdout, stderr)
		if !errors.Is(err, sandbox.ErrNoWorker) {
			if res != nil {
				res.Sandbox = mode
			}
			return res, err
		}
	}
	for i, argv := range p.Argv {
		name := filepath.Base(argv[0])
		if r.Sandbox != nil {
			wrapped, cleanup, err := r.Sandbox.Wrap(ctx, spec, argv)
			if err != nil {
				return nil, fmt.Errorf("confining %s: %w", name, err)
			}
			defer cleanup()
			argv = wrapped
		}
		c := exec.CommandContext(ctx, argv[0], argv[1:]...)
		if r.Sandbox == nil {
			c.Args[0] = name
		}
		c.Env, c.Dir = env, p.Dir
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		c.Cancel = func() error {
			if c.Process == nil {
				return nil
			}
			return syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		c.WaitDelay = time.Second
		c.Stderr = stderr
		if p.cmds[i].StderrNull {
			c.Stderr = nil
		}
		cmds[i] = c
	}
	for i := 0; i < len(cmds)-1; i++ {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("creating a pipe: %w", err)
		}
		cmds[i].Stdout = pw
		cmds[i+1].Stdin = pr
		closeAfterStart = append(closeAfterStart, pr, pw)
	}
	cmds[len(cmds)-1].Stdout = stdout
	for i, c := range cmds {
		if p.cmds[i].StdoutNull {
			c.Stdout = nil
		}
		if p.cmds[i].StderrToStdout {
			c.Stderr = c.Stdout
		}
	}
	start := time.Now()
	started := 0
	var startErr error
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			startErr = fmt.Errorf("starting %s: %w", c.Args[0], err)
			break
		}
		started++
	}
	for _, f := range closeAfterStart {
		f.Close()
	}
	res := &Result{Sandbox: mode}
	for _, c := range cmds[:started] {
		err := c.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			res.Exit = append(res.Exit, "0")
		case errors.As(err, &ee):
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.Exit = append(res.Exit, "signal: "+ws.Signal().String())
			} else {
				res.Exit = append(res.Exit, fmt.Sprint(ee.ExitCode()))
			}
		default:
			res.Exit = append(res.Exit, err.Error())
		}
	}
	if startErr != nil {
		cancel()
		return nil, startErr
	}
	res.Duration = time.Since(start)
	res.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	res.Stdout, res.Truncated = stdout.result()
	res.Stderr, _ = stderr.result()
	return res, nil
}

// spec is what the sandbox allows the programs of one pipeline: shell_exec
// (exec) may write the working folder, and use the network when the call
// asked for it (net, shown on its card) or ExecNetwork grants it.
func (r *Runner) spec(dir string, exec, net bool) sandbox.Spec {
	spec := sandbox.Spec{Dir: dir, Writable: exec, Net: exec && (net || r.ExecNetwork), Read: r.Read, Hide: r.Hide, Limits: r.Limits}
	if spec.Limits.CPUSeconds == 0 {
		spec.Limits.CPUSeconds = uint64(r.Timeout/time.Second) + 1
	}
	return spec
}

// Warm starts the sandbox worker shell_run's programs will use, so that
// even the first call skips starting bubblewrap.
func (r *Runner) Warm(ctx context.Context) error {
	r.defaults()
	if r.Sandbox == nil {
		return sandbox.ErrNoWorker
	}
	dir, err := r.Paths.Expand(".")
	if err != nil {
		return err
	}
	return r.Sandbox.Warm(ctx, r.spec(dir, false, false))
}

// runInWorker runs a pipeline in the sandbox's long-lived worker, with the
// same pipes, caps and kill as the one-shot path below: the programs are
// joined by pipes made here, the last one's stdout and everyone's stderr
// come back through pipes read into the capped writers, and ctx's end
// (the timeout, or too much output) kills them. sandbox.ErrNoWorker means
// no worker took the call and nothing ran.
func (r *Runner) runInWorker(ctx context.Context, p *Prepared, spec sandbox.Spec, env []string, stdout, stderr *capWriter) (*Result, error) {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	pipe := func() (*os.File, *os.File, error) {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("creating a pipe: %w", err)
		}
		files = append(files, pr, pw)
		return pr, pw, nil
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", os.DevNull, err)
	}
	files = append(files, devnull)
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	jobs := make([]sandbox.Job, len(p.Argv))
	for i, argv := range p.Argv {
		jobs[i] = sandbox.Job{Argv: argv, Stdin: devnull, Stdout: outW, Stderr: errW}
	}
	for i := 0; i < len(jobs)-1; i++ {
		pr, pw, err := pipe()
		if err != nil {
			return nil, err
		}
		jobs[i].Stdout, jobs[i+1].Stdin = pw, pr
	}
	for i := range jobs {
		if p.cmds[i].StderrNull {
			jobs[i].Stderr = devnull
		}
		if p.cmds[i].StdoutNull {
			jobs[i].Stdout = devnull
		}
		if p.cmds[i].StderrToStdout {
			jobs[i].Stderr = jobs[i].Stdout
		}
	}
	var copying sync.WaitGroup
	for _, c := range []struct {
		r *os.File
		w *capWriter
	}{{outR, stdout}, {errR, stderr}} {
		copying.Add(1)
		go func() {
			defer copying.Done()
			io.Copy(c.w, c.r)
		}()
	}
	start := time.Now()
	exits, err := r.Sandbox.Run(ctx, spec, env, jobs)
	// Run closed the files it handed over; a write end no program got
	// (stderr all sent to /dev/null) is closed here, so the readers see
	// their end once the programs are gone.
	for _, f := range files {
		if f != outR && f != errR {
			f.Close()
		}
	}
	if err != nil {
		// Nothing ran (ErrNoWorker) or the worker failed.
		outR.Close()
		errR.Close()
		copying.Wait()
		return nil, err
	}
	// Every program and whatever it started has ended (the worker kills
	// the rest), so the pipes reach their end; the wait is bounded anyway,
	// as exec.Cmd's WaitDelay bounds the one-shot path's.
	done := make(chan struct{})
	go func() { copying.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		outR.Close()
		errR.Close()
		<-done
	}
	res := &Result{Exit: exits, Duration: time.Since(start)}
	res.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	res.Stdout, res.Truncated = stdout.result()
	res.Stderr, _ = stderr.result()
	return res, nil
}

// capWriter keeps the first show bytes, counts the rest, and calls over
// once limit bytes were written.
type capWriter struct {
	mu    sync.Mutex // guards the fields below; programs write concurrently
	buf   bytes.Buffer
	n     int
	show  int
	limit int
	over  func()
	fired bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += len(p)
	if room := w.show - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	if w.n > w.limit && w.over != nil && !w.fired {
		w.fired = true
		w.over()
	}
	return len(p), nil
}

func (w *capWriter) result() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.ToValidUTF8(w.buf.String(), "\uFFFD"), w.n - w.buf.Len()
}
