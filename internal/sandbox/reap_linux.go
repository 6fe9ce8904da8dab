package sandbox

import (
	"errors"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// supervise runs the helper again as its own child (`sandbox-exec
// --supervised …`, which confines itself and executes the program) and
// stays, unconfined but with no other work, as a child subreaper: every
// descendant the program leaves behind (`cmd &`, a double fork, a setsid
// daemon) is reparented to it, and it kills them all when the program
// ends, then exits with the program's status. This is how the Landlock
// and rlimits modes end a call's background processes where no cgroup is
// available (bubblewrap has its pid namespace); the supervisor stays
// outside Landlock because it must read /proc, which the program may not.
// It returns the exit status to use; ok is false when it could not
// supervise (the caller then runs the program in place).
func supervise(args []string) (status int, ok bool) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return 0, false
	}
	argv := append([]string{os.Args[0], "sandbox-exec", "--supervised"}, args...)
	env := os.Environ()
	// The caller's signals (SIGTERM from a timeout) reach the program;
	// a SIGKILL to the process group reaches everyone anyway.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	pid, err := syscall.ForkExec("/proc/self/exe", argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		return 0, false
	}
	go func() {
		for s := range sigs {
			_ = syscall.Kill(pid, s.(syscall.Signal))
		}
	}()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	killOrphans()
	switch {
	case ws.Exited():
		return ws.ExitStatus(), true
	case ws.Signaled():
		// Die the same way, so the caller sees the program's signal.
		signal.Reset()
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		return 128 + int(ws.Signal()), true
	}
	return 126, true
}

// killOrphans kills and reaps every process reparented to this subreaper
// until none is left (a killed one's children come to us in turn).
func killOrphans() {
	self := os.Getpid()
	for range 1000 {
		kids := childrenOf(self)
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		reaped := false
		for {
			p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if p <= 0 || err != nil {
				break
			}
			reaped = true
		}
		if len(kids) == 0 && !reaped {
			if _, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); errors.Is(err, syscall.ECHILD) {
				return
			}
		}
	}
}

// childrenOf lists the live processes whose parent is pid (/proc).
func childrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := strconv.Itoa(pid)
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 2 && f[1] == want && f[0] != "Z" {
			out = append(out, n)
		}
	}
	return out
}
