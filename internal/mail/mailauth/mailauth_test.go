package mailauth

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-sasl"

	"github.com/hestia-dev/hestia/internal/oauth"
)

func TestPick(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		offered []string
		want    string
		err     string
	}{
		{[]string{"PLAIN", "XOAUTH2", "OAUTHBEARER"}, OAuthBearer, ""},
		{[]string{"plain", "xoauth2"}, XOAuth2, ""},
		{[]string{" oauthbearer "}, OAuthBearer, ""},
		{[]string{"PLAIN", "LOGIN"}, "", "it offers: PLAIN LOGIN"},
		{nil, "", "it offers: none"},
	} {
		got, err := Pick(tc.offered)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Pick(%q) = %q, %v; want %q, %q", tc.offered, got, err, tc.want, tc.err)
		}
	}
}

func TestInitialResponses(t *testing.T) {
	t.Parallel()
	mech, ir, err := NewClient(XOAuth2, "me@example.org", "tok", "imap.example.org", 993).Start()
	if err != nil || mech != XOAuth2 || string(ir) != "user=me@example.org\x01auth=Bearer tok\x01\x01" {
		t.Errorf("XOAUTH2 start = %q %q %v", mech, ir, err)
	}
	mech, ir, err = NewClient(OAuthBearer, "a,b=c", "tok", "h", 993).Start()
	if err != nil || mech != OAuthBearer || string(ir) != "n,a=a=2Cb=3Dc,\x01host=h\x01port=993\x01auth=Bearer tok\x01\x01" {
		t.Errorf("OAUTHBEARER start = %q %q %v", mech, ir, err)
	}
	if _, _, err := NewClient("PLAIN", "u", "t", "", 0).Start(); err == nil {
		t.Error("an unknown mechanism started")
	}
}

// The OAUTHBEARER exchange against go-sasl's server: the token and user
// arrive, and a refusal is answered with %x01 so the server can end it.
func TestOAuthBearerAgainstServer(t *testing.T) {
	t.Parallel()
	for _, good := range []bool{true, false} {
		var got sasl.OAuthBearerOptions
		srv := sasl.NewOAuthBearerServer(func(o sasl.OAuthBearerOptions) *sasl.OAuthBearerError {
			got = o
			if good {
				return nil
			}
			return &sasl.OAuthBearerError{Status: "invalid_token", Schemes: "bearer"}
		})
		c := NewClient(OAuthBearer, "me@example.org", "secret-token", "imap.example.org", 993)
		_, ir, _ := c.Start()
		chal, done, err := srv.Next(ir)
		if got.Username != "me@example.org" || got.Token != "secret-token" || got.Host != "imap.example.org" || got.Port != 993 {
			t.Fatalf("server parsed %+v", got)
		}
		if good {
			if !done || err != nil {
				t.Fatalf("good token: done=%v err=%v", done, err)
			}
			continue
		}
		if done || err != nil {
			t.Fatalf("refusal: done=%v err=%v", done, err)
		}
		resp, err := c.Next(chal)
		if err != nil || !bytes.Equal(resp, []byte{0x01}) {
			t.Fatalf("answer to the error challenge = %q, %v", resp, err)
		}
		if c.Refusal.Status != "invalid_token" {
			t.Errorf("refusal recorded as %+v", c.Refusal)
		}
		if _, done, err := srv.Next(resp); !done || err == nil {
			t.Errorf("the server did not end the exchange with an error: done=%v err=%v", done, err)
		}
		if _, err := c.Next(chal); err == nil {
			t.Error("a second challenge was answered")
		}
	}
}

func TestNextMalformedChallenge(t *testing.T) {
	t.Parallel()
	for _, chal := range [][]byte{nil, []byte("not json"), []byte(`{"status":`), []byte(`[1,2]`)} {
		c := NewClient(XOAuth2, "u", "t", "", 0)
		resp, err := c.Next(chal)
		if err != nil || resp == nil || len(resp) != 0 {
			t.Errorf("Next(%q) = %q, %v; want an empty response", chal, resp, err)
		}
		if c.Refusal.Status == "" {
			t.Errorf("Next(%q) recorded no refusal", chal)
		}
	}
}

// fakeTokens hands out tokens from a list; Invalidate moves to the next.
type fakeTokens struct {
	toks        []string
	i           int
	invalidated []string
	err         error // returned once the list is used up
}

func (f *fakeTokens) Token(context.Context) (oauth.Token, error) {
	if f.i >= len(f.toks) {
		return oauth.Token{}, f.err
	}
	return oauth.Token{AccessToken: f.toks[f.i]}, nil
}

func (f *fakeTokens) Invalidate(t oauth.Token) {
	f.invalidated = append(f.invalidated, t.AccessToken)
	if f.i < len(f.toks) && f.toks[f.i] == t.AccessToken {
		f.i++
	}
}

var errNo = errors.New("NO refused")

// server accepts the tokens in valid; it answers a refusal the way a
// server does, with an error challenge first.
func server(valid ...string) (func(sasl.Client) error, *[]string) {
	var seen []string
	return func(c sasl.Client) error {
		_, ir, err := c.Start()
		if err != nil {
			return err
		}
		tok := string(ir[strings.Index(string(ir), "Bearer ")+7:])
		tok = strings.TrimRight(tok, "\x01")
		seen = append(seen, tok)
		for _, v := range valid {
			if v == tok {
				return nil
			}
		}
		if _, err := c.Next([]byte(`{"status":"invalid_token","schemes":"bearer"}`)); err != nil {
			return err
		}
		return errNo
	}, &seen
}

func refusedNo(err error) bool { return errors.Is(err, errNo) }

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	offered := []string{"PLAIN", "XOAUTH2"}
	t.Run("valid at once", func(t *testing.T) {
		t.Parallel()
		auth, seen := server("a")
		ft := &fakeTokens{toks: []string{"a"}}
		if err := Authenticate(context.Background(), ft, Login{User: "u", Offered: offered, Auth: auth, Refused: refusedNo}); err != nil {
			t.Fatal(err)
		}
		if len(*seen) != 1 || len(ft.invalidated) != 0 {
			t.Errorf("seen %q, invalidated %q", *seen, ft.invalidated)
		}
	})
	t.Run("refused then refreshed", func(t *testing.T) {
		t.Parallel()
		auth, seen := server("b")
		ft := &fakeTokens{toks: []string{"a", "b"}}
		if err := Authenticate(context.Background(), ft, Login{User: "u", Offered: offered, Auth: auth, Refused: refusedNo}); err != nil {
			t.Fatal(err)
		}
		if strings.Join(*seen, ",") != "a,b" || strings.Join(ft.invalidated, ",") != "a" {
			t.Errorf("seen %q, invalidated %q", *seen, ft.invalidated)
		}
	})
	t.Run("refused twice", func(t *testing.T) {
		t.Parallel()
		auth, seen := server()
		ft := &fakeTokens{toks: []string{"a", "b", "c"}}
		err := Authenticate(context.Background(), ft, Login{User: "u", Offered: offered, Auth: auth, Refused: refusedNo})
		var re *RefusedError
		if !errors.As(err, &re) || re.Refusal.Status != "invalid_token" || re.Mechanism != XOAuth2 || !strings.Contains(err.Error(), "mail scope") {
			t.Fatalf("err = %v", err)
		}
		if len(*seen) != 2 {
			t.Errorf("tried %d times, want 2 (one retry)", len(*seen))
		}
	})
	t.Run("same token after refresh", func(t *testing.T) {
		t.Parallel()
		auth, seen := server()
		ft := &fakeTokens{toks: []string{"a"}}
		err := Authenticate(context.Background(), sameTokens{ft}, Login{User: "u", Offered: offered, Auth: auth, Refused: refusedNo})
		var re *RefusedError
		if !errors.As(err, &re) || len(*seen) != 1 {
			t.Fatalf("err = %v after %d tries; want a RefusedError without a second try of the same token", err, len(*seen))
		}
	})
	t.Run("dead grant", func(t *testing.T) {
		t.Parallel()
		auth, _ := server()
		ft := &fakeTokens{toks: []string{"a"}, err: &oauth.ReconnectError{Account: "gmail", Code: "invalid_grant"}}
		err := Authenticate(context.Background(), ft, Login{User: "u", Offered: offered, Auth: auth, Refused: refusedNo})
		if !errors.Is(err, oauth.ErrReconnect) || !errors.Is(err, errNo) || !strings.Contains(err.Error(), "hestia accounts connect gmail") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("not connected", func(t *testing.T) {
		t.Parallel()
		auth, seen := server()
		ft := &fakeTokens{err: oauth.ErrNotConnected}
		err := Authenticate(context.Background(), ft, Login{User: "u", Offered: offered, Auth: auth, Refused: refusedNo})
		if !errors.Is(err, oauth.ErrNotConnected) || len(*seen) != 0 {
			t.Fatalf("err = %v after %d tries", err, len(*seen))
		}
	})
	t.Run("broken connection is not retried", func(t *testing.T) {
		t.Parallel()
		broken := errors.New("connection reset")
		n := 0
		ft := &fakeTokens{toks: []string{"a", "b"}}
		err := Authenticate(context.Background(), ft, Login{User: "u", Offered: offered, Refused: refusedNo,
			Auth: func(sasl.Client) error { n++; return broken }})
		if !errors.Is(err, broken) || n != 1 || len(ft.invalidated) != 0 {
			t.Fatalf("err = %v, %d tries, invalidated %q", err, n, ft.invalidated)
		}
	})
	t.Run("no OAuth mechanism", func(t *testing.T) {
		t.Parallel()
		ft := &fakeTokens{toks: []string{"a"}}
		err := Authenticate(context.Background(), ft, Login{User: "u", Offered: []string{"PLAIN"}, Refused: refusedNo,
			Auth: func(sasl.Client) error { t.Fatal("tried to log in"); return nil }})
		if err == nil || !strings.Contains(err.Error(), "neither OAUTHBEARER nor XOAUTH2") {
			t.Fatalf("err = %v", err)
		}
	})
}

// sameTokens hands out the same token after Invalidate, as a source does
// when its refresh failed for a while but the old token has not expired.
type sameTokens struct{ f *fakeTokens }

func (s sameTokens) Token(ctx context.Context) (oauth.Token, error) { return s.f.Token(ctx) }
func (s sameTokens) Invalidate(oauth.Token)                         {}

func FuzzNext(f *testing.F) {
	f.Add([]byte(`{"status":"invalid_token","schemes":"bearer","scope":"https://mail.google.com/"}`))
	f.Add([]byte(`{"status":"400","schemes":"Bearer"}`))
	f.Add([]byte("\x00\xff"))
	f.Fuzz(func(t *testing.T, chal []byte) {
		for _, mech := range []string{OAuthBearer, XOAuth2} {
			c := NewClient(mech, "u", "t", "", 0)
			resp, err := c.Next(chal)
			if err != nil || resp == nil {
				t.Fatalf("%s: Next = %q, %v", mech, resp, err)
			}
			_ = c.Refusal.String()
		}
	})
}
