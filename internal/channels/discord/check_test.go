package discord

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels/discord/discordtest"
)

// The connection test asks GET /users/@me: no gateway session, no post;
// refusals name the setting and never show the token.
func TestCheck(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	a, _ := newAdapter(t, srv, discordtest.Token)
	who, err := a.Check(context.Background())
	if err != nil || who != "@"+discordtest.BotName+" ("+discordtest.BotID+")" {
		t.Fatalf("Check = %q, %v", who, err)
	}
	if srv.Identifies() != 0 || srv.Calls("POST /channels/{cid}/messages") != 0 {
		t.Errorf("the check identified %d times, posted %d", srv.Identifies(), srv.Calls("POST /channels/{cid}/messages"))
	}

	const wrong = "MTIz.SECRET.wrong"
	bad, _ := newAdapter(t, srv, wrong)
	if _, err := bad.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "channels.discord.token") || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("wrong token: %v", err)
	}

	srv.Fail("GET /users/@me", http.StatusInternalServerError, 0, "500: Internal Server Error")
	if _, err := a.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("outage: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/api/v10"
	ln.Close()
	gone, err := New(Config{Token: discordtest.Token, APIURL: dead}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "channels.discord.api_url") || strings.Contains(err.Error(), discordtest.Token) {
		t.Errorf("unreachable: %v", err)
	}
}
