package signal

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels/signal/signaltest"
)

// The connection test asks signal-cli's version and, where the daemon
// serves several accounts, whether ours is one; it subscribes to nothing
// and sends nothing, and names the setting to fix when it fails.
func TestCheck(t *testing.T) {
	t.Parallel()
	want := signaltest.Account + " via signal-cli " + signaltest.Version
	t.Run("single-account daemon", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		who, err := newAdapter(t, s, nil).Check(context.Background())
		if err != nil || who != want+" (single-account daemon)" {
			t.Fatalf("Check = %q, %v", who, err)
		}
		if s.Calls("subscribeReceive") != 0 || s.Calls("send") != 0 {
			t.Errorf("the check subscribed %d times, sent %d", s.Calls("subscribeReceive"), s.Calls("send"))
		}
	})
	t.Run("multi-account daemon, on the receiving connection", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		s.MultiAccount("+15550009999", signaltest.Account)
		a := newAdapter(t, s, nil)
		receive(t, a)
		s.WaitSubscribed(1)
		who, err := a.Check(context.Background())
		if err != nil || who != want {
			t.Fatalf("Check = %q, %v", who, err)
		}
		if s.Calls("subscribeReceive") != 1 || s.Calls("listAccounts") != 1 {
			t.Errorf("subscribeReceive %d, listAccounts %d", s.Calls("subscribeReceive"), s.Calls("listAccounts"))
		}
	})
	t.Run("another account", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		s.MultiAccount("+15550009999")
		_, err := newAdapter(t, s, nil).Check(context.Background())
		if err == nil || !strings.Contains(err.Error(), "serves +15550009999 but not "+signaltest.Account) || !strings.Contains(err.Error(), "channels.signal.account") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no account at all", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		s.MultiAccount()
		if _, err := newAdapter(t, s, nil).Check(context.Background()); err == nil || !strings.Contains(err.Error(), "no registered account") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no daemon", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		a := newAdapter(t, s, func(c *Config) { c.Socket = filepath.Join(filepath.Dir(s.Socket), "nothing-here") })
		if _, err := a.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "channels.signal.socket") {
			t.Fatalf("err = %v", err)
		}
	})
}
