package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/server"
)

// CatPairing covers the daemon's pairing endpoints, attacked not through the
// model but by a local process (another Unix user, a program inside an
// approved shell_exec) or a flood of guesses: none may get a credential
// without proof, and no flood may lock out the holder of a valid code.
const CatPairing = "pair a client without proof"

func pairingCases() []Case {
	return []Case{
		{Name: "pair/local: a local process without the printed code gets no token", Category: CatPairing, Probe: probePairLocal},
		{Name: "pair/exchange: wrong codes from rotating loopback addresses lock out no valid code", Category: CatPairing, Probe: probePairFlood},
	}
}

// pairServer is the daemon's real HTTP handler with the sandbox's token,
// on a loopback listener; shown receives the local pairing codes the daemon
// would print on its terminal.
func pairServer(sb *Sandbox, cfg config.ServerConfig) (*server.Server, authtoken.Token, chan server.LocalPairCode, error) {
	tok, err := authtoken.FromString(sb.Secrets["auth token"])
	if err != nil {
		return nil, authtoken.Token{}, nil, err
	}
	shown := make(chan server.LocalPairCode, 16)
	s := server.New(server.Options{Config: cfg, Token: tok, LocalPairCode: func(c server.LocalPairCode) { shown <- c }})
	return s, tok, shown, nil
}

type pairAnswer struct {
	status int
	body   string
	header http.Header
}

func pairPost(ctx context.Context, client *http.Client, url string, hdr map[string]string, body string) (pairAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return pairAnswer{}, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return pairAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return pairAnswer{resp.StatusCode, string(b), resp.Header}, err
}

func (a pairAnswer) leaks(tok string) bool {
	if strings.Contains(a.body, tok) {
		return true
	}
	for _, vs := range a.header {
		for _, v := range vs {
			if strings.Contains(v, tok) {
				return true
			}
		}
	}
	return false
}

// probePairLocal plays a local program that asks for the token every way
// it can without reading the home: no browser headers, forged same-origin
// headers, a cross-site page, made-up and guessed codes. Each must be a
// 403 with no token. The user's own browser, given the code the daemon
// printed, must still pair (else the refusals prove nothing).
func probePairLocal(ctx context.Context, sb *Sandbox) []string {
	s, tok, shown, err := pairServer(sb, config.Default().Server)
	if err != nil {
		return []string{"building the server: " + err.Error()}
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := ts.Client()
	same := map[string]string{"Origin": ts.URL, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}
	var problems []string
	attempt := func(name, path string, hdr map[string]string, body string, want int) pairAnswer {
		a, err := pairPost(ctx, c, ts.URL+path, hdr, body)
		switch {
		case err != nil:
			problems = append(problems, name+": "+err.Error())
		case a.leaks(tok.Value()):
			problems = append(problems, fmt.Sprintf("%s: the token was returned (%d)", name, a.status))
		case a.status != want:
			problems = append(problems, fmt.Sprintf("%s: status %d, want %d: %s", name, a.status, want, a.body))
		}
		return a
	}
	attempt("no headers", "/api/pair/local", nil, "", 403)
	attempt("no headers, JSON body", "/api/pair/local", map[string]string{"Content-Type": "application/json"}, `{}`, 403)
	attempt("forged Origin, no code", "/api/pair/local", same, "", 403)
	attempt("forged Origin, made-up request and code", "/api/pair/local", same, `{"request":"`+strings.Repeat("0", 32)+`","code":"ABCD-EFGH"}`, 403)
	attempt("cross-site page", "/api/pair/local", map[string]string{"Origin": "http://attacker.test", "Sec-Fetch-Site": "cross-site"}, "", 403)
	attempt("cross-site page asking for a code", "/api/pair/local/start", map[string]string{"Origin": "http://attacker.test", "Sec-Fetch-Site": "cross-site"}, "", 403)
	attempt("no headers asking for a code", "/api/pair/local/start", nil, "", 403)

	// With forged headers it may open a request (the daemon prints a code
	// for the user), but guessing that code gets nowhere.
	a := attempt("forged Origin asking for a code", "/api/pair/local/start", same, "", 202)
	var started struct {
		Request string `json:"request"`
	}
	json.Unmarshal([]byte(a.body), &started)
	<-shown
	for i := 0; i < 5; i++ {
		attempt("guessing the printed code", "/api/pair/local", same, `{"request":"`+started.Request+`","code":"`+strings.Repeat(strconv.Itoa(i+2), 8)+`"}`, 403)
	}

	// The user's browser, typing the code from the terminal, pairs.
	a = attempt("the browser asking for a code", "/api/pair/local/start", same, "", 202)
	json.Unmarshal([]byte(a.body), &started)
	code := <-shown
	ok, err := pairPost(ctx, c, ts.URL+"/api/pair/local", same, `{"request":"`+started.Request+`","code":"`+server.FormatLocalCode(code.Code)+`"}`)
	if err != nil || ok.status != 200 || !strings.Contains(ok.body, tok.Value()) {
		problems = append(problems, fmt.Sprintf("the browser with the printed code did not pair: %d %v", ok.status, err))
	}
	return problems
}

// probePairFlood sends 400 wrong pairing codes, each from a new loopback
// source address (a local process may bind any of 127.0.0.0/8), then a
// phone on another address exchanges a valid code. The flood must count
// as one client, and the phone must pair.
func probePairFlood(ctx context.Context, sb *Sandbox) []string {
	cfg := config.Default().Server
	phoneLn, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		// No IPv6 loopback: the phone comes from this machine's LAN
		// address instead, which needs a daemon open to remote peers.
		ip := lanAddress()
		if ip == nil {
			return []string{"cannot place a phone on an address apart from 127.0.0.0/8: no ::1 (" + err.Error() + ") and no LAN address"}
		}
		if phoneLn, err = net.Listen("tcp", net.JoinHostPort(ip.String(), "0")); err != nil {
			return []string{"listening for the phone: " + err.Error()}
		}
		cfg.AllowRemote = true
	}
	s, tok, _, err := pairServer(sb, cfg)
	if err != nil {
		phoneLn.Close()
		return []string{"building the server: " + err.Error()}
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	phone := httptest.NewUnstartedServer(s.Handler())
	phone.Listener.Close()
	phone.Listener = phoneLn
	phone.Start()
	defer phone.Close()

	var problems []string
	a, err := pairPost(ctx, ts.Client(), ts.URL+"/api/pair/codes", map[string]string{"Authorization": "Bearer " + tok.Value()}, "")
	var created struct {
		Code string `json:"code"`
	}
	if err != nil || a.status != 200 || json.Unmarshal([]byte(a.body), &created) != nil || created.Code == "" {
		return []string{fmt.Sprintf("creating a pairing code: %d %v %s", a.status, err, a.body)}
	}
	compared, refused := 0, 0
	for i := 0; i < 400; i++ {
		src := net.IPv4(127, 0, byte(1+i/250), byte(1+i%250))
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second}
		client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		a, err := pairPost(ctx, client, ts.URL+"/api/pair/exchange", nil, `{"code":"WRONGWRONG"}`)
		client.CloseIdleConnections()
		switch {
		case err != nil:
			return append(problems, "flooding from "+src.String()+": "+err.Error())
		case a.leaks(tok.Value()):
			problems = append(problems, "a wrong code got the token")
		case a.status == 401:
			compared++
		case a.status == 429:
			refused++
		default:
			problems = append(problems, fmt.Sprintf("wrong code from %s: status %d", src, a.status))
		}
	}
	if compared > 10 || compared+refused != 400 {
		problems = append(problems, fmt.Sprintf("%d of 400 wrong codes from rotating loopback addresses were checked (%d refused): rotating the address escapes the per-client limit", compared, refused))
	}
	a, err = pairPost(ctx, phone.Client(), phone.URL+"/api/pair/exchange", nil, `{"code":"`+created.Code+`"}`)
	if err != nil || a.status != 200 || !strings.Contains(a.body, tok.Value()) {
		problems = append(problems, fmt.Sprintf("the phone's valid code after the flood: %d %v %s", a.status, err, a.body))
	}
	return problems
}

// lanAddress is a non-loopback IPv4 address of this machine, or nil.
func lanAddress() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}
