package config

import (
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
	if s.Enabled() || s.Transport != "udp" || s.RingTimeout.D() != 30*time.Second || s.RTPTimeout.D() != 15*time.Second || s.MaxDuration.D() != 20*time.Minute {
		t.Errorf("defaults: %+v", s)
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
