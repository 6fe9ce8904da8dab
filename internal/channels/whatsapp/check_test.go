package whatsapp

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels/whatsapp/whatsapptest"
)

// The connection test reads the business number (GET /{phone-number-id})
// and sends nothing; a refused token, an expired one and a wrong number id
// each name their setting, and no error holds the token.
func TestCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	who, err := h.a.Check(context.Background())
	if err != nil || who != whatsapptest.DisplayNumber+" ("+whatsapptest.VerifiedName+")" {
		t.Fatalf("Check = %q, %v", who, err)
	}
	if h.fake.Calls("phone") != 1 || h.fake.Calls("messages") != 0 {
		t.Errorf("phone reads %d, messages %d", h.fake.Calls("phone"), h.fake.Calls("messages"))
	}

	for _, c := range []struct {
		name   string
		mod    func(*Config)
		expire bool
		want   string
	}{
		{"wrong token", func(c *Config) { c.Token = "EAAwrong-SECRET" }, false, "error 190"},
		{"expired token", nil, true, "Session has expired"},
		{"wrong number id", func(c *Config) { c.PhoneNumberID = "15550100001" }, false, "error 100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.mod)
			if c.expire {
				h.fake.ExpireToken()
			}
			_, err := h.a.Check(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			key := "channels.whatsapp.token"
			if strings.Contains(c.name, "number") {
				key = "channels.whatsapp.phone_number_id"
			}
			if !strings.Contains(err.Error(), key) {
				t.Errorf("err = %v, does not name %s", err, key)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), whatsapptest.Token) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	gone, err := New(Config{APIURL: dead, PhoneNumberID: whatsapptest.PhoneNumberID, Token: whatsapptest.Token, AppSecret: "s", VerifyToken: "v"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "channels.whatsapp.api_url") {
		t.Errorf("unreachable: %v", err)
	}
}
