package telegram

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
)

// The connection test asks getMe and sends nothing; a refused token names
// the setting and never the token.
func TestCheck(t *testing.T) {
	t.Parallel()
	tg := tgtest.New(t)
	ok := NewAdapter(NewClient(tg.URL, tgtest.Token), nil, AdapterConfig{}, nil)
	who, err := ok.Check(context.Background())
	if err != nil || who != "@"+tgtest.BotUsername {
		t.Fatalf("Check = %q, %v", who, err)
	}
	if n := tg.Calls("sendMessage"); n != 0 {
		t.Errorf("the check sent %d messages", n)
	}

	const wrong = "999:wrong-token-SECRET"
	_, err = NewAdapter(NewClient(tg.URL, wrong), nil, AdapterConfig{}, nil).Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "telegram.token") || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("wrong token: %v", err)
	}

	tg.Throttle("getMe", 1)
	if _, err := ok.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "429") {
		t.Errorf("flood control: %v", err)
	}

	// Nothing listening: the error names the API URL setting and not the
	// token that was in the request's URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	_, err = NewAdapter(NewClient(dead, tgtest.Token), nil, AdapterConfig{}, nil).Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "telegram.api_url") || strings.Contains(err.Error(), tgtest.Token) {
		t.Errorf("unreachable: %v", err)
	}
}
