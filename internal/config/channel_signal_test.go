package config

import (
	"strings"
	"testing"
)

func TestSignalDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Channels.Signal; s.Enabled() || s.Socket != "" || s.Address != "" {
		t.Errorf("defaults: %+v", s)
	}
}

const signalGood = `[channels.signal]
account = "+15550001111"
socket = "/run/user/1000/signal-cli/socket"
owners = ["+393471234567"]
`

func TestSignalValid(t *testing.T) {
	t.Parallel()
	for name, file := range map[string]string{
		"minimal":  signalGood,
		"uuid":     strings.Replace(signalGood, `"+393471234567"`, `"0b1d9bd4-6ef4-4bb4-9a7e-6a3f8c3b2d10", "+393471234567"`, 1),
		"contacts": signalGood + "contacts = [\"+4915112345678:chat+approve\", \"0B1D9BD4-6EF4-4BB4-9A7E-6A3F8C3B2D10\"]\n",
		"tcp":      "[channels.signal]\naccount = \"+15550001111\"\naddress = \"127.0.0.1:7583\"\nowners = [\"+393471234567\"]\n",
		"tcp6":     "[channels.signal]\naccount = \"+15550001111\"\naddress = \"[::1]:7583\"\nowners = [\"+393471234567\"]\n",
		"user":     signalGood + "daemon_user = \"signal-cli\"\nattachments_dir = \"/var/lib/signal-cli/attachments\"\n",
		"uid":      signalGood + "daemon_user = \"998\"\n",
		"disabled": "[channels.signal]\nowners = []\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if name != "disabled" && !cfg.Channels.Signal.Enabled() {
				t.Error("not enabled")
			}
		})
	}
}

func TestSignalInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		want       []string
	}{
		{"no owner", strings.Replace(signalGood, `owners = ["+393471234567"]`, "", 1), []string{"channels.signal.owners", "serves nobody"}},
		{"spaces in owner", strings.Replace(signalGood, `"+393471234567"`, `"+39 347 1234567"`, 1), []string{"channels.signal.owners", "international format"}},
		{"no plus in owner", strings.Replace(signalGood, `"+393471234567"`, `"393471234567"`, 1), []string{"channels.signal.owners", "with +"}},
		{"owner is the bot", strings.Replace(signalGood, `"+393471234567"`, `"+15550001111"`, 1), []string{"channels.signal.owners", "not the assistant's"}},
		{"bad contact", signalGood + "contacts = [\"anna:chat\"]\n", []string{"channels.signal.contacts", "UUID"}},
		{"bad scope", signalGood + "contacts = [\"+4915112345678:admin\"]\n", []string{"channels.signal.contacts"}},
		{"bad account", strings.Replace(signalGood, `"+15550001111"`, `"15550001111"`, 1), []string{"channels.signal.account", "signal-cli -a"}},
		{"nowhere", strings.Replace(signalGood, `socket = "/run/user/1000/signal-cli/socket"`, "", 1), []string{"channels.signal.socket", "daemon --socket"}},
		{"both", signalGood + "address = \"127.0.0.1:7583\"\n", []string{"channels.signal.address", "one way"}},
		{"relative socket", strings.Replace(signalGood, `"/run/user/1000/signal-cli/socket"`, `"signal.sock"`, 1), []string{"channels.signal.socket", "absolute path"}},
		{"remote tcp", strings.Replace(signalGood, `socket = "/run/user/1000/signal-cli/socket"`, `address = "192.168.1.5:7583"`, 1), []string{"channels.signal.address", "loopback"}},
		{"any tcp", strings.Replace(signalGood, `socket = "/run/user/1000/signal-cli/socket"`, `address = "0.0.0.0:7583"`, 1), []string{"channels.signal.address", "loopback"}},
		{"no port", strings.Replace(signalGood, `socket = "/run/user/1000/signal-cli/socket"`, `address = "127.0.0.1"`, 1), []string{"channels.signal.address"}},
		{"bad port", strings.Replace(signalGood, `socket = "/run/user/1000/signal-cli/socket"`, `address = "127.0.0.1:99999"`, 1), []string{"channels.signal.address"}},
		{"named port", strings.Replace(signalGood, `socket = "/run/user/1000/signal-cli/socket"`, `address = "localhost:http"`, 1), []string{"channels.signal.address"}},
		{"bad user", signalGood + "daemon_user = \"signal cli; rm\"\n", []string{"channels.signal.daemon_user"}},
		{"relative attachments", signalGood + "attachments_dir = \"attachments\"\n", []string{"channels.signal.attachments_dir", "absolute path"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, c.file, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoopbackHostPort(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:7583": true, "localhost:7583": true, "[::1]:1": true, "127.1.2.3:65535": true,
		"127.0.0.1:0": false, "10.0.0.1:7583": false, "example.org:7583": false, ":7583": false, "127.0.0.1:+80": false, "": false,
	} {
		if got := LoopbackHostPort(addr); got != want {
			t.Errorf("LoopbackHostPort(%q) = %v", addr, got)
		}
	}
}
