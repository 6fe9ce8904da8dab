package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hestia-dev/hestia/internal/tailbuf"

	"golang.org/x/sys/unix"
)

// The descriptors the worker is started with.
const (
	workerConnFD = 3
	workerExeFD  = 4
)

const (
	// workerStartTimeout is generous: the start runs in the background,
	// and a loaded machine starts a big binary slowly.
	workerStartTimeout = 30 * time.Second
	// killGrace is how long the worker has to kill a call's programs
	// before the daemon kills the worker itself.
	killGrace = 5 * time.Second
	// maxCallTime bounds a call inside the worker when the request names
	// no deadline.
	maxCallTime = 10 * time.Minute
	// workerThreadReserve is added to the process limit for the worker's
	// own threads, which count against it.
	workerThreadReserve = 16
)

// errNotSent: the request never reached the worker, so nothing ran.
var errNotSent = errors.New("the request did not reach the sandbox worker")

// request is a message to the worker: a call (Argv, with 3 descriptors
// per program attached) or, with Kill, the end of the call ID.
type request struct {
	ID   uint64     `json:"id"`
	Spec string     `json:"spec,omitempty"` // digest of the spec the daemon means
	Argv [][]string `json:"argv,omitempty"`
	Env  []string   `json:"env,omitempty"`
	MS   int64      `json:"ms,omitempty"` // time left to the call
	Kill bool       `json:"kill,omitempty"`
}

// reply is a message from the worker: Ready once at start, then one per
// call.
type reply struct {
	Ready  bool     `json:"ready,omitempty"`
	ID     uint64   `json:"id,omitempty"`
	Exit   []string `json:"exit,omitempty"`
	Retire bool     `json:"retire,omitempty"` // the worker ends after this reply
	Err    string   `json:"err,omitempty"`
}

// worker is the daemon's side of one worker.
type worker struct {
	key, sum string
	cmd      *exec.Cmd // bubblewrap
	conn     *net.UnixConn
	replies  chan reply
	done     chan struct{} // closed once the connection is gone
	started  chan struct{} // closed once the start is over, either way
	stderr   *tailbuf.Buffer
	cgDone   func() // removes the worker's cgroup once it has ended
	seq      uint64 // used only by the caller holding the worker
	retire   bool   // likewise

	// pool.mu guards the fields below.
	ready, busy bool
	idle        *time.Timer

	stopOnce sync.Once
}

// Close stops the workers and waits (briefly) for them to end. The
// Sandbox keeps working afterwards, the one-shot way only.
func (s *Sandbox) Close() error {
	p := &s.workers
	p.mu.Lock()
	p.closed = true
	var stop []*worker
	for _, w := range p.all {
		if w.ready { // one still starting is stopped by launch
			stop = append(stop, w)
			if w.idle != nil {
				w.idle.Stop()
			}
		}
	}
	p.mu.Unlock()
	for _, w := range stop {
		w.stop()
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return nil
}

// WorkerCount reports the workers started or starting and not yet
// stopped.
func (s *Sandbox) WorkerCount() int {
	s.workers.mu.Lock()
	defer s.workers.mu.Unlock()
	return len(s.workers.all)
}

func (s *Sandbox) workerFor(spec Spec) bool {
	return !s.NoWorker && len(s.Helper) > 0 && !spec.Writable && !spec.Net
}

// Run starts a pipeline's programs in a worker for spec and returns each
// program's exit ("0", "1", "signal: killed"). It returns ErrNoWorker,
// touching nothing, when no worker can take the call now: not bubblewrap,
// a writable or networked spec, no idle worker for this spec yet (one is
// then started in the background), or a pipeline too long for one
// message. Otherwise the jobs' files are closed once the worker holds
// them, so a pipe's reader sees its end when the programs end; closing
// them again is harmless. When ctx ends the programs are killed.
func (s *Sandbox) Run(ctx context.Context, spec Spec, env []string, jobs []Job) ([]string, error) {
	if !s.workerFor(spec) || len(jobs) == 0 || len(jobs) > maxJobs {
		return nil, ErrNoWorker
	}
	for _, j := range jobs {
		if len(j.Argv) == 0 || !filepath.IsAbs(j.Argv[0]) {
			return nil, fmt.Errorf("%w: the program path must be absolute", ErrSetup)
		}
	}
	if s.Status(ctx).Mode != Bubblewrap {
		return nil, ErrNoWorker
	}
	spec, err := normalize(spec)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	key, sum := workerKey(spec, js)
	w := s.workers.take(key)
	if w == nil {
		s.launch(spec, js, key, sum)
		return nil, ErrNoWorker
	}
	exits, err := w.run(ctx, env, jobs)
	s.release(w)
	if err == nil {
		s.workers.served.Add(1)
	}
	if errors.Is(err, errNotSent) {
		return nil, ErrNoWorker
	}
	return exits, err
}

// Warm starts a worker for spec, unless one is there, and waits until it
// is ready; Run then uses it from the first call.
func (s *Sandbox) Warm(ctx context.Context, spec Spec) error {
	if !s.workerFor(spec) {
		return ErrNoWorker
	}
	if st := s.Status(ctx); st.Mode != Bubblewrap {
		return fmt.Errorf("%w: the sandbox is %s", ErrNoWorker, st.Mode)
	}
	spec, err := normalize(spec)
	if err != nil {
		return err
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	key, sum := workerKey(spec, js)
	for range 3 {
		if w := s.workers.take(key); w != nil {
			s.release(w)
			return nil
		}
		started, err := s.launch(spec, js, key, sum)
		if err != nil {
			return err
		}
		select {
		case <-started:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("%w: every worker for this spec is busy", ErrNoWorker)
}

// workerKey identifies what a worker was built from: the spec and the
// identity of every path its mounts name, so a path created, removed or
// replaced since gets a new worker. sum is the spec's digest alone.
func workerKey(spec Spec, js []byte) (key, sum string) {
	d := sha256.Sum256(js)
	sum = hex.EncodeToString(d[:])
	var b strings.Builder
	b.WriteString(sum)
	for _, list := range [][]string{{spec.Dir}, spec.Read, spec.Hide} {
		for _, p := range list {
			b.WriteString("\x00" + p + "=")
			st, err := os.Stat(p)
			if err != nil {
				b.WriteString("-")
				continue
			}
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				fmt.Fprintf(&b, "%d:%d:%o", sys.Dev, sys.Ino, uint32(st.Mode().Type()))
			}
		}
	}
	return b.String(), sum
}

// take hands out an idle, ready worker for key, marked busy.
func (p *pool) take(key string) *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.all {
		if w.key != key || !w.ready || w.busy || w.gone() {
			continue
		}
		w.busy = true
		if w.idle != nil {
			w.idle.Stop()
		}
		return w
	}
	return nil
}

// remove drops w from the pool; p.mu must be held.
func (p *pool) remove(w *worker) {
	for i, x := range p.all {
		if x == w {
			p.all = append(p.all[:i], p.all[i+1:]...)
			return
		}
	}
}

func (p *pool) drop(w *worker) {
	p.mu.Lock()
	p.remove(w)
	p.mu.Unlock()
}

// release returns a worker after a call: idle again, or stopped when it
// retires or is gone.
func (s *Sandbox) release(w *worker) {
	p := &s.workers
	p.mu.Lock()
	w.busy = false
	if w.retire || w.gone() || p.closed {
		p.remove(w)
		p.mu.Unlock()
		w.stop()
		return
	}
	s.armIdle(w)
	p.mu.Unlock()
}

// armIdle stops w once it has been idle for WorkerIdle; pool.mu must be
// held.
func (s *Sandbox) armIdle(w *worker) {
	p := &s.workers
	idle := s.WorkerIdle
	if idle <= 0 {
		idle = defaultWorkerIdle
	}
	w.idle = time.AfterFunc(idle, func() {
		p.mu.Lock()
		if w.busy {
			p.mu.Unlock()
			return
		}
		p.remove(w)
		p.mu.Unlock()
		w.stop()
	})
}

// launch starts a worker for key in the background, unless the pool is
// full or closed, or a start failed recently. The channel closes when the
// start is over, this one's or one already under way for key.
func (s *Sandbox) launch(spec Spec, js []byte, key, sum string) (<-chan struct{}, error) {
	p := &s.workers
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: the sandbox is closed", ErrNoWorker)
	case !p.failedAt.IsZero() && time.Since(p.failedAt) < startBackoff:
		err := p.failErr
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: a worker failed to start recently: %w", ErrNoWorker, err)
	case len(p.all) >= maxWorkers:
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: %d workers are running", ErrNoWorker, maxWorkers)
	}
	for _, w := range p.all {
		if w.key == key && !w.ready {
			p.mu.Unlock()
			return w.started, nil
		}
	}
	w := &worker{key: key, sum: sum, replies: make(chan reply, 4), done: make(chan struct{}), started: make(chan struct{}), stderr: tailbuf.New(2048)}
	p.all = append(p.all, w)
	p.mu.Unlock()
	go func() {
		defer close(w.started)
		err := s.startWorker(w, spec, js)
		p.mu.Lock()
		switch {
		case err != nil:
			p.remove(w)
			p.failedAt, p.failErr = time.Now(), err
		case p.closed:
			p.remove(w)
			w.kill()
			go func() { w.cmd.Wait(); w.cgDone() }()
		default:
			p.failedAt = time.Time{}
			w.ready = true
			s.armIdle(w) // idle from the start: unused, it goes away
			// Added under p.mu before Close can see closed and wait.
			p.wg.Add(1)
			go w.readLoop(p)
		}
		p.mu.Unlock()
	}()
	return w.started, nil
}

// startWorker starts bubblewrap with the spec's mounts and this binary as
// the worker inside, and waits for it to say it is ready.
func (s *Sandbox) startWorker(w *worker, spec Spec, js []byte) error {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("creating the worker's socket: %w", err)
	}
	local := os.NewFile(uintptr(pair[0]), "sandbox-worker")
	remote := os.NewFile(uintptr(pair[1]), "sandbox-worker-peer")
	defer remote.Close()
	c, err := net.FileConn(local)
	local.Close()
	if err != nil {
		return fmt.Errorf("the worker's socket: %w", err)
	}
	w.conn = c.(*net.UnixConn)
	// The binary is handed over as a descriptor and executed through
	// /proc/self/fd, so the sandbox needs no extra mount for it.
	exe, err := os.Open(s.Helper[0])
	if err != nil {
		w.conn.Close()
		return fmt.Errorf("opening the worker binary: %w", err)
	}
	defer exe.Close()
	args := s.bwrapMounts(spec)
	// pid 1 of its namespace (no capabilities, as every bubblewrap here),
	// and nothing writable but /tmp (emptied after each call).
	args = append(args, "--as-pid-1", "--remount-ro", "/", "--remount-ro", "/dev",
		"--chdir", spec.Dir, "--", "/proc/self/fd/"+strconv.Itoa(workerExeFD))
	args = append(args, s.Helper[1:]...)
	args = append(args, "--worker", string(js))
	cmd := exec.Command(args[0], args[1:]...)
	// The worker serves one call at a time, so its cgroup bounds each
	// call's memory and processes as a one-shot call's does.
	cg, cgDone, err := s.cg.make(spec.Limits)
	if err != nil {
		w.conn.Close()
		return err
	}
	w.cgDone = cgDone
	if cg != "" {
		d, err := os.Open(cg)
		if err != nil {
			w.conn.Close()
			cgDone()
			return fmt.Errorf("%w: opening the worker's cgroup: %w", ErrSetup, err)
		}
		defer d.Close()
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(d.Fd())}
	}
	cmd.ExtraFiles = []*os.File{remote, exe} // workerConnFD, workerExeFD
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stderr = w.stderr
	err = cmd.Start()
	// Only the worker may hold the other end: with it open here, a
	// worker that dies would never be seen to.
	remote.Close()
	exe.Close()
	if err != nil {
		w.conn.Close()
		cgDone()
		return fmt.Errorf("starting the worker: %w", err)
	}
	w.cmd = cmd
	w.conn.SetReadDeadline(time.Now().Add(workerStartTimeout))
	r, err := readReply(w.conn, make([]byte, 16<<10))
	w.conn.SetReadDeadline(time.Time{})
	if err == nil && !r.Ready {
		err = errors.New("no ready message")
	}
	if err != nil {
		cmd.Process.Kill()
		w.conn.Close()
		cmd.Wait()
		cgDone()
		return fmt.Errorf("the worker did not start (%v): %s", err, w.stderr.String())
	}
	return nil
}

// readReply reads one message from the worker into buf (replies are
// small: exits of at most maxJobs programs).
func readReply(c *net.UnixConn, buf []byte) (reply, error) {
	n, _, flags, _, err := c.ReadMsgUnix(buf, nil)
	if err != nil {
		return reply{}, err
	}
	if n == 0 {
		return reply{}, errors.New("the worker closed its connection")
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return reply{}, errors.New("a truncated message from the worker")
	}
	var r reply
	if err := json.Unmarshal(buf[:n], &r); err != nil {
		return reply{}, fmt.Errorf("a malformed message from the worker: %w", err)
	}
	return r, nil
}

// readLoop hands the worker's replies to the caller holding it, until the
// connection ends; then it reaps the worker and drops it.
func (w *worker) readLoop(p *pool) {
	defer p.wg.Done()
	buf := make([]byte, 16<<10)
	for {
		r, err := readReply(w.conn, buf)
		if err != nil {
			break
		}
		select {
		case w.replies <- r:
		default: // nobody waits for it (a call given up on)
		}
	}
	close(w.done)
	w.stop()
	w.cmd.Wait()
	w.cgDone()
	p.drop(w)
}

func (w *worker) gone() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// stop closes the connection, on which the worker kills what runs and
// exits; a worker that does not is killed, and its namespace with it.
func (w *worker) stop() {
	w.stopOnce.Do(func() {
		if w.conn != nil {
			w.conn.Close()
		}
		if w.cmd != nil {
			p := w.cmd.Process
			time.AfterFunc(2*time.Second, func() { p.Kill() })
		}
	})
}

// kill ends the worker at once: bubblewrap's --die-with-parent takes the
// worker, and so the whole pid namespace, with it.
func (w *worker) kill() {
	if w.cmd != nil {
		w.cmd.Process.Kill()
	}
	w.stop()
}

// run is one call on a worker the caller holds.
func (w *worker) run(ctx context.Context, env []string, jobs []Job) ([]string, error) {
	w.seq++
	req := request{ID: w.seq, Spec: w.sum, Env: env}
	for _, j := range jobs {
		req.Argv = append(req.Argv, j.Argv)
	}
	if dl, ok := ctx.Deadline(); ok {
		req.MS = max(time.Until(dl).Milliseconds(), 1)
	}
	b, err := json.Marshal(req)
	if err != nil || len(b) > maxRequest {
		return nil, errNotSent
	}
	var devnull *os.File
	fds := make([]int, 0, 3*len(jobs))
	for _, j := range jobs {
		for _, f := range []*os.File{j.Stdin, j.Stdout, j.Stderr} {
			if f == nil {
				if devnull == nil {
					if devnull, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
						return nil, fmt.Errorf("%w: %w", errNotSent, err)
					}
					defer devnull.Close()
				}
				f = devnull
			}
			// Fd also puts the descriptor in blocking mode, which the
			// program expects.
			fds = append(fds, int(f.Fd()))
		}
	}
	if _, _, err := w.conn.WriteMsgUnix(b, unix.UnixRights(fds...), nil); err != nil {
		return nil, fmt.Errorf("%w: %w", errNotSent, err)
	}
	for _, j := range jobs {
		for _, f := range []*os.File{j.Stdin, j.Stdout, j.Stderr} {
			if f != nil {
				f.Close()
			}
		}
	}
	killed := func() []string {
		out := make([]string, len(jobs))
		for i := range out {
			out[i] = "signal: killed"
		}
		return out
	}
	ctxDone := ctx.Done()
	var backstop <-chan time.Time
	for {
		select {
		case r := <-w.replies:
			if r.ID != req.ID {
				continue
			}
			w.retire = r.Retire
			if r.Err != "" {
				w.retire = true
				return nil, fmt.Errorf("%w: the sandbox worker refused the call: %s", ErrSetup, r.Err)
			}
			if len(r.Exit) != len(jobs) {
				w.retire = true
				return nil, fmt.Errorf("%w: the sandbox worker sent %d exits for %d programs", ErrSetup, len(r.Exit), len(jobs))
			}
			return r.Exit, nil
		case <-ctxDone:
			ctxDone = nil
			b, _ := json.Marshal(request{ID: req.ID, Kill: true})
			if _, err := w.conn.Write(b); err != nil {
				w.kill()
			}
			backstop = time.After(killGrace)
		case <-backstop:
			w.kill()
			w.retire = true
			return killed(), nil
		case <-w.done:
			w.retire = true
			select {
			case r := <-w.replies:
				if r.ID == req.ID && r.Err == "" && len(r.Exit) == len(jobs) {
					return r.Exit, nil
				}
			default:
			}
			if ctx.Err() != nil {
				return killed(), nil
			}
			return nil, fmt.Errorf("%w: the sandbox worker ended during the call: %s", ErrSetup, w.stderr.String())
		}
	}
}
