package sandbox

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Long-lived workers.
//
// Starting bubblewrap and prlimit for every program costs 10–20 ms, far
// more than the programs shell_run starts. So a read-only, offline spec
// (shell_run's) is served by a worker: one bubblewrap with the same mounts
// as the one-shot path, running this binary as `sandbox-exec --worker`,
// which receives pipelines over a socket and starts each program inside
// the sandbox it already has.
//
// What keeps a call as isolated as with its own bubblewrap:
//   - one call at a time per worker; after each, everything else in the
//     worker's pid namespace is killed (kill(-1)), so nothing a program
//     left behind sees the next call, and /tmp is emptied. / and /dev are
//     read-only in a worker, so /tmp is the only place a call can write;
//   - the worker is pid 1 of its namespace (bwrap --as-pid-1): the kernel
//     drops SIGKILL and SIGSTOP sent to it from inside, and it ignores the
//     signals it can catch;
//   - it runs without capabilities (--cap-drop ALL, which matters for a
//     daemon running as root) and is not dumpable, so programs can neither
//     ptrace it nor open its memory or descriptors through /proc; every
//     descriptor it holds is close-on-exec, and a program gets only its own
//     stdin, stdout and stderr;
//   - the limits are the worker's own, inherited by every program: address
//     space, file size, open files and CPU time as in the one-shot path
//     (CPU time is counted per process; the worker retires before its own
//     use nears the limit), processes as the allowance plus the worker's
//     threads;
//   - a worker is keyed by its spec and by the identity (device, inode) of
//     the working folder, the roots and the hidden paths, so a root or a
//     hidden folder created or replaced since it started gets a new worker
//     with mounts built afresh; the worker also checks the spec it is sent;
//   - the daemon's timeout asks the worker to kill the call's programs and,
//     if it does not answer, kills the worker and its whole namespace.
//
// A call that finds no idle worker for its spec starts one in the
// background and runs the one-shot way, as do calls for writable or
// networked specs (shell_exec), Landlock and the rlimits-only mode.

// Job is one program of a pipeline that Run starts: an absolute argv and
// its standard files (nil: /dev/null).
type Job struct {
	Argv                  []string
	Stdin, Stdout, Stderr *os.File
}

// ErrNoWorker is returned by Run when no worker can take the call now; the
// caller then starts each program itself through Wrap. The jobs' files are
// left untouched.
var ErrNoWorker = errors.New("no sandbox worker for this call")

const (
	defaultWorkerIdle = time.Minute
	// maxWorkers bounds the workers of one Sandbox (calls at the same
	// time beyond it run the one-shot way).
	maxWorkers = 4
	// maxJobs keeps a pipeline's descriptors (3 per program) under the
	// kernel's 253 per message.
	maxJobs = 64
	// maxRequest bounds one request message; longer pipelines (many glob
	// matches) run the one-shot way.
	maxRequest = 192 << 10
	// startBackoff is how long after a failed start no new worker is
	// tried for this Sandbox.
	startBackoff = time.Minute
)

// pool holds a Sandbox's workers.
type pool struct {
	mu       sync.Mutex // guards the fields below
	all      []*worker
	closed   bool
	failedAt time.Time
	failErr  error
	wg       sync.WaitGroup // the workers' connection readers
	served   atomic.Uint64  // calls run by workers
}

// WorkerCalls reports how many calls workers have run (for tests and
// doctor: the one-shot path is the fallback, so only this tells them
// apart).
func (s *Sandbox) WorkerCalls() uint64 { return s.workers.served.Load() }
