package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/sandbox"
	"github.com/hestia-dev/hestia/internal/tools"
)

// TestShellExecNoLoopback: a program an approved shell_exec runs cannot
// connect to a loopback listener (the daemon's API is one) unless the
// network was granted; under each confining mechanism this machine has.
func TestShellExecNoLoopback(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash for /dev/tcp")
	}
	helper := []string{os.Args[0], "sandbox-exec"}
	for _, c := range []struct {
		mode sandbox.Mode
		sb   func() *sandbox.Sandbox
	}{
		{sandbox.Bubblewrap, func() *sandbox.Sandbox { return &sandbox.Sandbox{NoLandlock: true, Helper: helper} }},
		{sandbox.Landlock, func() *sandbox.Sandbox { return &sandbox.Sandbox{Bwrap: "-", Helper: helper} }},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			argv := []string{"bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port)}
			// Granted by the runner's configuration, or by the call asking
			// for it (the card says "WITH network access").
			for i, granted := range []bool{false, true, true} {
				perCall := i == 2
				args, _ := json.Marshal(map[string]any{"argv": argv, "network": perCall})
				r, _ := newRunner(t)
				r.Sandbox = c.sb()
				t.Cleanup(func() { r.Sandbox.Close() })
				if st := r.Sandbox.Status(context.Background()); st.Mode != c.mode {
					t.Skipf("not available here: %s", st)
				}
				r.ExecNetwork = granted && !perCall
				if pv := r.Tools()[1].(tools.Previewer).Preview(context.Background(), args); strings.Contains(pv, "WITH network") != granted {
					t.Errorf("card line %q for network granted=%v", pv, granted)
				}
				res, err := r.Tools()[1].Run(context.Background(), tools.Call{Args: args})
				if err != nil {
					t.Fatal(err)
				}
				ln.SetDeadline(time.Now().Add(200 * time.Millisecond))
				conn, aerr := ln.Accept()
				if aerr == nil {
					conn.Close()
				}
				reached := aerr == nil || strings.Contains(res.Content, "connected")
				if reached != granted {
					t.Errorf("network granted=%v: loopback reached=%v:\n%s", granted, reached, res.Content)
				}
			}
		})
	}
}
