package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// serveWorker is `sandbox-exec --worker SPEC`, run by bubblewrap as pid 1
// of the sandbox with the daemon's socket on workerConnFD. It returns when
// the daemon closes the socket (0) or on a protocol error.
func serveWorker(args []string, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hestia sandbox worker: "+format+"\n", a...)
		return 126
	}
	if len(args) != 1 {
		return fail("usage: sandbox-exec --worker SPEC")
	}
	var spec Spec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fail("malformed spec: %v", err)
	}
	if !filepath.IsAbs(spec.Dir) {
		return fail("the working folder %q must be absolute", spec.Dir)
	}
	// Only read-only, offline specs are served: the sandbox must hold
	// nothing a call could change for the next one but /tmp.
	if spec.Writable || spec.Net {
		return fail("a writable or networked spec is not served by a worker")
	}
	// After each call the worker kills every other process it can see:
	// only safe as the first process of a pid namespace of its own.
	if os.Getpid() != 1 {
		return fail("not pid 1 of its own pid namespace (bwrap --unshare-pid --as-pid-1); refusing to serve")
	}
	// Not dumpable: the programs (same user) cannot ptrace the worker or
	// open its memory, environment or descriptors through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("prctl(PR_SET_DUMPABLE): %v", err)
	}
	unix.Close(workerExeFD)
	// Nothing the worker holds may reach a program: every descriptor
	// from 3 up closes on exec (the programs get 0–2 only).
	if err := cloexecFrom(3); err != nil {
		return fail("marking descriptors close-on-exec: %v", err)
	}
	runtime.GOMAXPROCS(2) // few threads: they count against the process limit
	lim := spec.Limits.withDefaults()
	if err := setWorkerLimits(lim); err != nil {
		return fail("setting limits: %v", err)
	}
	// As pid 1 the worker gets from inside only the signals it handles;
	// taking them all here means none of them ends it.
	// SIGCHLD gets its own channel: one pending is enough (reap takes
	// every ended child), and the others cannot crowd it out.
	all := make(chan os.Signal, 16)
	signal.Notify(all)
	go func() {
		for range all {
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	f := os.NewFile(workerConnFD, "sandbox-worker")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fail("the daemon's socket: %v", err)
	}
	conn, ok := c.(*net.UnixConn)
	if !ok {
		return fail("the daemon's socket is not a unix socket")
	}
	d := sha256.Sum256([]byte(args[0]))
	srv := &server{conn: conn, spec: spec, sum: hex.EncodeToString(d[:]), cpu: time.Duration(lim.CPUSeconds) * time.Second, stderr: stderr}
	if err := srv.send(reply{Ready: true}); err != nil {
		return fail("greeting the daemon: %v", err)
	}
	return srv.serve(sigs)
}

// cloexecFrom marks every descriptor from first up close-on-exec.
func cloexecFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	ents, rerr := os.ReadDir("/proc/self/fd") // kernels before 5.11
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	for _, e := range ents {
		fd, cerr := strconv.Atoi(e.Name())
		if cerr != nil || fd < first {
			continue
		}
		unix.CloseOnExec(fd)
	}
	return nil
}

// setWorkerLimits sets the limits on the worker, from which every program
// inherits them. CPU time is counted per process, so each program gets
// the whole allowance; the worker's threads count against the process
// limit, so they are added to it.
func setWorkerLimits(l Limits) error {
	if err := setResourceLimits(l); err != nil {
		return err
	}
	threads := 8
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					threads = n
				}
			}
		}
	}
	if err := lower(unix.RLIMIT_NPROC, l.Procs+uint64(threads)+workerThreadReserve); err != nil {
		return fmt.Errorf("processes: %w", err)
	}
	return nil
}

// server is the worker's side: one call at a time.
type server struct {
	conn   *net.UnixConn
	spec   Spec
	sum    string
	cpu    time.Duration // the CPU limit; the worker retires at half
	stderr io.Writer
	cur    *call
}

// call is the pipeline running now.
type call struct {
	id    uint64
	pids  map[int]int // pid → program index
	exit  []string
	left  int // programs still running
	timer *time.Timer
}

// incoming is one message from the daemon with its descriptors.
type incoming struct {
	req request
	fds []int
	err error
}

func (s *server) send(r reply) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = s.conn.Write(b)
	return err
}

func (s *server) serve(sigs <-chan os.Signal) int {
	msgs := make(chan incoming)
	go s.read(msgs)
	var timeout <-chan time.Time
	for {
		select {
		case m, ok := <-msgs:
			if !ok { // the daemon is gone or done with the worker
				s.sweep()
				return 0
			}
			switch {
			case m.err != nil:
				closeFDs(m.fds)
				s.sweep()
				fmt.Fprintf(s.stderr, "hestia sandbox worker: %v\n", m.err)
				return 1
			case m.req.Kill:
				if s.cur != nil && m.req.ID == s.cur.id {
					unix.Kill(-1, unix.SIGKILL)
				}
			case s.cur != nil:
				closeFDs(m.fds)
				s.sweep()
				fmt.Fprintln(s.stderr, "hestia sandbox worker: a second call while one runs")
				return 1
			default:
				s.start(m)
				if s.cur != nil {
					timeout = s.cur.timer.C
				}
			}
		case sig := <-sigs:
			if sig == syscall.SIGCHLD {
				s.reap()
			}
		case <-timeout:
			unix.Kill(-1, unix.SIGKILL)
		}
		if s.cur != nil && s.cur.left == 0 {
			timeout = nil
			if retire := s.finish(); retire {
				return 0
			}
		}
	}
}

// read passes the daemon's messages on until the socket ends.
func (s *server) read(out chan<- incoming) {
	defer close(out)
	buf := make([]byte, maxRequest+1)
	oob := make([]byte, unix.CmsgSpace(4*3*maxJobs))
	for {
		n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
		if err != nil || (n == 0 && oobn == 0) {
			return
		}
		var in incoming
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				in.err = fmt.Errorf("malformed control message: %w", err)
			}
			for _, m := range msgs {
				fds, err := unix.ParseUnixRights(&m)
				if err != nil {
					in.err = fmt.Errorf("malformed descriptors: %w", err)
					continue
				}
				in.fds = append(in.fds, fds...)
			}
		}
		switch {
		case in.err != nil:
		case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
			in.err = errors.New("a truncated message")
		default:
			if err := json.Unmarshal(buf[:n], &in.req); err != nil {
				in.err = fmt.Errorf("malformed request: %w", err)
			}
		}
		out <- in
		if in.err != nil {
			return
		}
	}
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// start begins a call: each program in its own process group, with its
// three descriptors, the spec's working folder and a clean environment.
func (s *server) start(m incoming) {
	req := m.req
	defer closeFDs(m.fds) // the programs hold their own copies
	refuse := func(format string, a ...any) {
		if err := s.send(reply{ID: req.ID, Err: fmt.Sprintf(format, a...)}); err != nil {
			fmt.Fprintf(s.stderr, "hestia sandbox worker: replying: %v\n", err)
		}
	}
	switch {
	case req.Spec != s.sum:
		refuse("the call is for another spec than this worker's")
		return
	case len(req.Argv) == 0 || len(req.Argv) > maxJobs:
		refuse("%d programs in a call", len(req.Argv))
		return
	case len(m.fds) != 3*len(req.Argv):
		refuse("%d descriptors for %d programs", len(m.fds), len(req.Argv))
		return
	}
	env := CleanEnv(req.Env)
	c := &call{id: req.ID, pids: map[int]int{}, exit: make([]string, len(req.Argv))}
	for i, argv := range req.Argv {
		files := []uintptr{uintptr(m.fds[3*i]), uintptr(m.fds[3*i+1]), uintptr(m.fds[3*i+2])}
		if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
			unix.Write(m.fds[3*i+2], []byte("hestia sandbox: the program path must be absolute\n"))
			c.exit[i] = "126"
			continue
		}
		pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
			Dir:   s.spec.Dir,
			Env:   env,
			Files: files,
			Sys:   &syscall.SysProcAttr{Setpgid: true},
		})
		if err != nil {
			unix.Write(m.fds[3*i+2], []byte(fmt.Sprintf("hestia sandbox: starting %s: %v\n", argv[0], err)))
			c.exit[i] = "126"
			if errors.Is(err, syscall.ENOENT) {
				c.exit[i] = "127"
			}
			continue
		}
		c.pids[pid] = i
		c.left++
	}
	d := time.Duration(req.MS) * time.Millisecond
	if d <= 0 || d > maxCallTime {
		d = maxCallTime
	}
	// The daemon asks for the kill at its deadline; this is the backstop.
	c.timer = time.NewTimer(d + time.Second)
	s.cur = c
}

// reap collects ended children. A program that ends takes its process
// group with it, as its own bubblewrap's namespace would.
func (s *server) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if s.cur == nil {
			continue
		}
		if i, ok := s.cur.pids[pid]; ok {
			delete(s.cur.pids, pid)
			s.cur.exit[i] = exitString(ws)
			s.cur.left--
			unix.Kill(-pid, unix.SIGKILL)
		}
	}
}

func exitString(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "signal: " + ws.Signal().String()
	}
	return strconv.Itoa(ws.ExitStatus())
}

// finish ends a call: everything else in the namespace is killed and
// reaped, /tmp is emptied, and the exits go back. It reports whether the
// worker retires (a process that would not die, or CPU time used).
func (s *server) finish() bool {
	c := s.cur
	s.cur = nil
	c.timer.Stop()
	retire := !s.sweep()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err == nil {
		used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		if used > s.cpu/2 {
			retire = true
		}
	}
	if err := s.send(reply{ID: c.id, Exit: c.exit, Retire: retire}); err != nil {
		return true
	}
	return retire
}

// sweep kills every process in the namespace but the worker, reaps them,
// empties /tmp and removes System V IPC objects. kill(-1) reaches every process the worker may signal
// except itself and (being pid 1) none outside its namespace; a fork
// cannot slip past it. It reports whether all were gone within 2 s.
func (s *server) sweep() bool {
	unix.Kill(-1, unix.SIGKILL)
	deadline := time.Now().Add(2 * time.Second)
	clean := true
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.ECHILD {
			break
		}
		if err == nil && pid > 0 {
			continue
		}
		if time.Now().After(deadline) {
			clean = false
			break
		}
		time.Sleep(200 * time.Microsecond)
	}
	var st unix.Stat_t
	if err := unix.Lstat("/tmp", &st); err == nil {
		wipe("/tmp", st.Dev)
	}
	clearSysVIPC()
	return clean
}

// wipe empties dir, staying on the filesystem dev: bubblewrap makes the
// mount points of roots that lie under /tmp there, and what is mounted on
// them is never entered.
func wipe(dir string, dev uint64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Dev != dev {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			wipe(p, dev)
			unix.Rmdir(p) // fails, rightly, above a mount point
			continue
		}
		unix.Unlink(p)
	}
}

// clearSysVIPC removes the System V shared memory, message queues and
// semaphores a call left in the sandbox's IPC namespace, which outlive
// the processes that made them. (POSIX message queues cannot be listed
// without mounting mqueue; the allowed programs do not read them.)
func clearSysVIPC() {
	for _, kind := range []string{"shm", "msg", "sem"} {
		b, err := os.ReadFile("/proc/sysvipc/" + kind)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for _, line := range lines[min(1, len(lines)):] { // after the header
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			id, err := strconv.Atoi(f[1])
			if err != nil {
				continue
			}
			switch kind {
			case "shm":
				unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			case "msg":
				unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)
			case "sem":
				unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0)
			}
		}
	}
}
