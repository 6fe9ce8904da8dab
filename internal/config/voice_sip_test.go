package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSIPDefaultsOff(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Voice.SIP
	if s.Enabled() || s.Transport != "udp" || s.RingTimeout.D() != 30*time.Second || s.RTPTimeout.D() != 15*time.Second || s.MaxDuration.D() != 20*time.Minute || !s.BargeIn {
		t.Errorf("defaults: %+v", s)
	}
}

// Barge-in is on unless turned off, in the file or the environment.
func TestSIPBargeIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want       bool
	}{
		{"default", sipGood, nil, true},
		{"on", sipGood + "barge_in = true\n", nil, true},
		{"off", sipGood + "barge_in = false\n", nil, false},
		{"off by environment", sipGood, map[string]string{"HESTIA_VOICE_SIP_BARGE_IN": "false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, tc.file, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Voice.SIP.BargeIn; got != tc.want {
				t.Errorf("barge_in = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := load(t, sipGood+"barge_in = \"sometimes\"\n", nil); err == nil || !strings.Contains(err.Error(), "barge_in") {
		t.Errorf("a barge_in that is not a boolean: %v", err)
	}
}

const sipGood = `[voice.sip]
registrar = "sip:sip.example.net"
username = "alice"
password_file = "/home/alice/.config/hestia/sip-password"
number = "+393471234567"
`

func TestSIPValid(t *testing.T) {
	t.Parallel()
	for name, file := range map[string]string{
		"provider": sipGood,
		"pbx over tls": "[voice.sip]\nregistrar = \"sips:pbx.lan:5061\"\ntransport = \"tls\"\nusername = \"201\"\nauth_username = \"u201\"\npassword = \"x\"\n" +
			"number = \"100\"\nfrom = \"sip:201@pbx.lan\"\nlocal_ip = \"192.168.1.20\"\nrtp_port_min = 16384\nrtp_port_max = 16483\nlisten_port = 5070\n",
		"direct uri":   "[voice.sip]\nnumber = \"sip:phone@[2001:db8::7]:5062;transport=tcp\"\ntransport = \"tcp\"\nring_timeout = \"45s\"\n",
		"keypad codes": "[voice.sip]\nregistrar = \"sip:10.0.0.1\"\nusername = \"a\"\nnumber = \"*97#\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !cfg.Voice.SIP.Enabled() {
				t.Error("not enabled")
			}
		})
	}
	cfg, err := load(t, sipGood+"password = \"\"\n", map[string]string{"HESTIA_VOICE_SIP_NUMBER": "+4915112345678"})
	if err != nil || cfg.Voice.SIP.Number != "+4915112345678" {
		t.Fatalf("environment override: %v %+v", err, cfg.Voice.SIP)
	}
	cfg, _ = load(t, "[voice.sip]\nnumber = \"sip:a@b\"\npassword = \"hunter2\"\n", nil)
	if m := cfg.Masked().Voice.SIP; m.Password != "********" {
		t.Errorf("password not masked: %q", m.Password)
	}
}

func TestSIPInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, key string }{
		{"transport", sipGood + "transport = \"sctp\"\n", "voice.sip.transport"},
		{"registrar not a uri", strings.Replace(sipGood, "sip:sip.example.net", "sip.example.net", 1), "voice.sip.registrar"},
		{"registrar with user", strings.Replace(sipGood, "sip:sip.example.net", "sip:alice@sip.example.net", 1), "voice.sip.registrar"},
		{"sips without tls", strings.Replace(sipGood, "sip:sip.example.net", "sips:sip.example.net", 1), "voice.sip.registrar"},
		{"bad port", strings.Replace(sipGood, "sip:sip.example.net", "sip:sip.example.net:99999", 1), "voice.sip.registrar"},
		{"no username", strings.Replace(sipGood, "username = \"alice\"\n", "", 1), "voice.sip.username"},
		{"number with spaces", strings.Replace(sipGood, "+393471234567", "+39 347 1234567", 1), "voice.sip.number"},
		{"number with letters", strings.Replace(sipGood, "+393471234567", "mum", 1), "voice.sip.number"},
		{"number without registrar", "[voice.sip]\nnumber = \"+393471234567\"\n", "voice.sip.number"},
		{"uri without user", "[voice.sip]\nnumber = \"sip:pbx.lan\"\n", "voice.sip.number"},
		{"from", sipGood + "from = \"alice\"\n", "voice.sip.from"},
		{"two passwords", sipGood + "password = \"x\"\n", "voice.sip.password"},
		{"relative password file", strings.Replace(sipGood, "/home/alice/.config/hestia/sip-password", "sip-password", 1), "voice.sip.password_file"},
		{"listen port", sipGood + "listen_port = 70000\n", "voice.sip.listen_port"},
		{"local ip", sipGood + "local_ip = \"0.0.0.0\"\n", "voice.sip.local_ip"},
		{"rtp range reversed", sipGood + "rtp_port_min = 20000\nrtp_port_max = 10000\n", "voice.sip.rtp_port_min"},
		{"rtp range privileged", sipGood + "rtp_port_min = 100\nrtp_port_max = 200\n", "voice.sip.rtp_port_min"},
		{"rtp half set", sipGood + "rtp_port_min = 20000\n", "voice.sip.rtp_port_min"},
		{"ring timeout", sipGood + "ring_timeout = \"1s\"\n", "voice.sip.ring_timeout"},
		{"max duration", sipGood + "max_duration = \"12h\"\n", "voice.sip.max_duration"},
		{"rtp timeout", sipGood + "rtp_timeout = \"0s\"\n", "voice.sip.rtp_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tc.file, nil)
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("want an error naming %s, got %v", tc.key, err)
			}
		})
	}
}

// pinFile writes a PIN file with mode perm in a fresh folder.
func pinFile(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sip-pin")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; set it exactly.
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSIPInboundOffByDefault(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, sipGood, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Voice.SIP; s.Inbound || len(s.InboundNumbers) != 0 || s.InboundPINFile != "" {
		t.Errorf("inbound defaults: %+v", s)
	}
}

func TestSIPInboundValid(t *testing.T) {
	t.Parallel()
	pin := pinFile(t, "482913\n", 0o600)
	for name, extra := range map[string]string{
		"the number calls":    "inbound = true\ninbound_pin_file = " + strconv.Quote(pin) + "\n",
		"listed numbers":      "inbound = true\ninbound_numbers = [\"+39 347 1234567\", \"0039 06 1234567\", \"100\"]\ninbound_pin_file = " + strconv.Quote(pin) + "\n",
		"off with a bad file": "inbound = false\ninbound_pin_file = \"/nonexistent/pin\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, sipGood+extra, nil)
			if err != nil {
				t.Fatal(err)
			}
			if s := cfg.Voice.SIP; s.Inbound {
				got, err := s.InboundPIN()
				if err != nil || got != "482913" {
					t.Errorf("InboundPIN = %q, %v", got, err)
				}
			}
		})
	}
	// A SIP URI number with a numeric user part is the allowed caller.
	uri := "[voice.sip]\nnumber = \"sip:+393471234567@pbx.lan\"\ninbound = true\ninbound_pin_file = " + strconv.Quote(pin) + "\n"
	if _, err := load(t, uri, nil); err != nil {
		t.Errorf("a SIP URI with a number: %v", err)
	}
	env := map[string]string{"HESTIA_VOICE_SIP_INBOUND": "true", "HESTIA_VOICE_SIP_INBOUND_PIN_FILE": pin, "HESTIA_VOICE_SIP_INBOUND_NUMBERS": "+393471234567, 100"}
	cfg, err := load(t, sipGood, env)
	if err != nil || !cfg.Voice.SIP.Inbound || len(cfg.Voice.SIP.InboundNumbers) != 2 {
		t.Errorf("environment: %v %+v", err, cfg.Voice.SIP)
	}
}

func TestSIPInboundInvalid(t *testing.T) {
	t.Parallel()
	good := pinFile(t, "482913", 0o600)
	on := sipGood + "inbound = true\n"
	for _, tc := range []struct {
		name, file string
		want       []string // in the error
	}{
		{"no pin file", on, []string{"voice.sip.inbound_pin_file", "required when voice.sip.inbound = true"}},
		{"relative pin file", on + "inbound_pin_file = \"pin\"\n", []string{"voice.sip.inbound_pin_file", "absolute path"}},
		{"missing pin file", on + "inbound_pin_file = \"/nonexistent/hestia-pin\"\n", []string{"voice.sip.inbound_pin_file", "exists"}},
		{"group-readable pin file", on + "inbound_pin_file = " + strconv.Quote(pinFile(t, "482913", 0o640)) + "\n", []string{"voice.sip.inbound_pin_file", "-rw-r-----", "chmod 600"}},
		{"world-readable pin file", on + "inbound_pin_file = " + strconv.Quote(pinFile(t, "482913", 0o604)) + "\n", []string{"voice.sip.inbound_pin_file", "chmod 600"}},
		{"short pin", on + "inbound_pin_file = " + strconv.Quote(pinFile(t, "12345", 0o600)) + "\n", []string{"voice.sip.inbound_pin_file", "6 to 16 digits"}},
		{"pin with letters", on + "inbound_pin_file = " + strconv.Quote(pinFile(t, "12ab34", 0o600)) + "\n", []string{"voice.sip.inbound_pin_file", "6 to 16 digits"}},
		{"pin folder", on + "inbound_pin_file = " + strconv.Quote(t.TempDir()) + "\n", []string{"voice.sip.inbound_pin_file", "regular file"}},
		{"bad number", on + "inbound_pin_file = " + strconv.Quote(good) + "\ninbound_numbers = [\"mum\"]\n", []string{"voice.sip.inbound_numbers", `"mum"`}},
		{"bad number while off", sipGood + "inbound_numbers = [\"+39 abc\"]\n", []string{"voice.sip.inbound_numbers"}},
		{"no number", "[voice.sip]\ninbound = true\ninbound_pin_file = " + strconv.Quote(good) + "\n", []string{"voice.sip.inbound", "voice.sip.number"}},
		{"uri number without digits", "[voice.sip]\nnumber = \"sip:phone@pbx.lan\"\ninbound = true\ninbound_pin_file = " + strconv.Quote(good) + "\n", []string{"voice.sip.inbound_numbers", `"phone"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tc.file, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q: %v", w, err)
				}
			}
			if strings.Contains(err.Error(), "482913") {
				t.Errorf("the error shows the PIN: %v", err)
			}
		})
	}
}

// The commented [voice.sip] example in config.example.toml, uncommented,
// is a valid configuration, and so it is with inbound calls turned on
// (its PIN file swapped for a real one): the documented keys ship.
func TestSIPExampleParses(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	start := strings.Index(s, "# [voice.sip]\n")
	if start < 0 {
		t.Fatal("config.example.toml has no commented [voice.sip] example")
	}
	var b strings.Builder
	for _, l := range strings.Split(s[start:], "\n") {
		rest, ok := strings.CutPrefix(l, "# ")
		if !ok {
			break
		}
		if rest == "[voice.sip]" || strings.Contains(rest, " = ") {
			b.WriteString(rest + "\n")
		}
	}
	example := b.String()
	for _, key := range []string{"barge_in", "inbound", "inbound_numbers", "inbound_pin_file"} {
		if !strings.Contains(example, "\n"+key+" = ") {
			t.Errorf("the example does not document %s", key)
		}
	}
	cfg, err := Parse([]byte(example), func(string) string { return "" })
	if err != nil {
		t.Fatalf("the [voice.sip] example does not parse:\n%s\n%v", example, err)
	}
	if !cfg.Voice.SIP.Enabled() || cfg.Voice.SIP.Inbound || !cfg.Voice.SIP.BargeIn {
		t.Errorf("example: %+v", cfg.Voice.SIP)
	}
	on := strings.Replace(example, "inbound = false", "inbound = true", 1)
	on = strings.Replace(on, `"/home/you/.config/hestia/sip-pin"`, strconv.Quote(pinFile(t, "135790", 0o600)), 1)
	cfg, err = Parse([]byte(on), func(string) string { return "" })
	if err != nil || !cfg.Voice.SIP.Inbound {
		t.Fatalf("with inbound = true: %v\n%s", err, on)
	}
}
