package settings

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/hestia-dev/hestia/internal/mail/mailauth"
)

// connTimeout bounds one setup connection test.
const connTimeout = 20 * time.Second

func dial(ctx context.Context, host string, port int) (net.Conn, error) {
	d := net.Dialer{Timeout: connTimeout}
	return d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
}

// testIMAP logs in (with the password, or with tokens when set) and lists
// the mailboxes; it returns how many there are.
func testIMAP(ctx context.Context, in StepInput, tokens mailauth.Tokens) (int, error) {
	addr := net.JoinHostPort(in.IMAPHost, strconv.Itoa(in.IMAPPort))
	conn, err := dial(ctx, in.IMAPHost, in.IMAPPort)
	if err != nil {
		return 0, &StepError{Part: "IMAP connection to " + addr, Err: errors.New(rootCause(err))}
	}
	_ = conn.SetDeadline(time.Now().Add(connTimeout))
	tlsConf := &tls.Config{ServerName: in.IMAPHost}
	var c *imapclient.Client
	switch in.IMAPSecurity {
	case "tls":
		tc := tls.Client(conn, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return 0, &StepError{Part: "IMAP TLS with " + addr, Err: err}
		}
		c = imapclient.New(tc, nil)
	case "starttls":
		c, err = imapclient.NewStartTLS(conn, &imapclient.Options{TLSConfig: tlsConf})
		if err != nil {
			conn.Close()
			return 0, &StepError{Part: "IMAP STARTTLS with " + addr, Err: err}
		}
	default:
		c = imapclient.New(conn, nil)
	}
	defer c.Close()
	if tokens != nil {
		err = mailauth.Authenticate(ctx, tokens, mailauth.Login{User: in.Username, Host: in.IMAPHost, Port: in.IMAPPort,
			Offered: c.Caps().AuthMechanisms(), Auth: c.Authenticate, Refused: imapRefused, IMAP: true})
	} else {
		err = c.Login(in.Username, in.Password).Wait()
	}
	if err != nil {
		return 0, &StepError{Part: "IMAP login as " + in.Username + " at " + addr, Err: err}
	}
	boxes, err := c.List("", "*", nil).Collect()
	if err != nil {
		return 0, &StepError{Part: "IMAP mailbox list at " + addr, Err: err}
	}
	_ = c.Logout().Wait()
	return len(boxes), nil
}

// testSMTP authenticates with PLAIN (over TLS, or plain on loopback as
// the config allows), or with tokens when set, without sending anything.
func testSMTP(ctx context.Context, in StepInput, tokens mailauth.Tokens) error {
	addr := net.JoinHostPort(in.SMTPHost, strconv.Itoa(in.SMTPPort))
	conn, err := dial(ctx, in.SMTPHost, in.SMTPPort)
	if err != nil {
		return &StepError{Part: "SMTP connection to " + addr, Err: errors.New(rootCause(err))}
	}
	_ = conn.SetDeadline(time.Now().Add(connTimeout))
	tlsConf := &tls.Config{ServerName: in.SMTPHost}
	var c *smtp.Client
	switch in.SMTPSecurity {
	case "tls":
		c = smtp.NewClient(tls.Client(conn, tlsConf))
	case "starttls":
		c, err = smtp.NewClientStartTLS(conn, tlsConf)
		if err != nil {
			conn.Close()
			return &StepError{Part: "SMTP STARTTLS with " + addr, Err: err}
		}
	default:
		c = smtp.NewClient(conn)
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return &StepError{Part: "SMTP greeting from " + addr, Err: err}
	}
	ok, mechs := c.Extension("AUTH")
	if !ok {
		return &StepError{Part: "SMTP auth at " + addr, Err: errors.New("the server offers no AUTH (wrong port or security?)")}
	}
	if tokens != nil {
		err = mailauth.Authenticate(ctx, tokens, mailauth.Login{User: in.Username, Host: in.SMTPHost, Port: in.SMTPPort,
			Offered: strings.Fields(mechs), Auth: c.Auth, Refused: smtpRefused})
	} else {
		err = c.Auth(sasl.NewPlainClient("", in.Username, in.Password))
	}
	if err != nil {
		return &StepError{Part: "SMTP auth as " + in.Username + " at " + addr, Err: err}
	}
	_ = c.Quit()
	return nil
}

// imapRefused: the server said NO to the login (not a broken connection).
func imapRefused(err error) bool {
	var ie *imap.Error
	return errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo
}

// smtpRefused: the server refused the credentials with a 5xx.
func smtpRefused(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code >= 500 && se.Code < 600
}

// propfind asks the DAV server for the user's principal (Depth 0): 207
// means the URL is a DAV endpoint and the login works.
func propfind(ctx context.Context, url, user, pass string) error {
	return propfindAuth(ctx, url, func(req *http.Request) {
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
	})
}

// propfindAuth is propfind with auth setting the request's credentials.
func propfindAuth(ctx context.Context, url string, auth func(*http.Request)) error {
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return fmt.Errorf("%q is not an http(s) URL", url)
	}
	ctx, cancel := context.WithTimeout(ctx, connTimeout)
	defer cancel()
	body := `<?xml version="1.0"?><propfind xmlns="DAV:"><prop><current-user-principal/></prop></propfind>`
	req, err := http.NewRequestWithContext(ctx, "PROPFIND", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Depth", "0")
	req.Header.Set("Content-Type", "application/xml; charset=utf-8")
	auth(req)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot connect to %s: %s", url, rootCause(err))
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		if strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ") {
			return fmt.Errorf("%s refused the OAuth token (HTTP %d%s): check that the sign-in includes the calendar or contacts scope", url, res.StatusCode, bearerError(res.Header))
		}
		return fmt.Errorf("%s refused the user name or password (HTTP %d)", url, res.StatusCode)
	case res.StatusCode == http.StatusMultiStatus:
		return nil
	default:
		return fmt.Errorf("%s answered HTTP %d to PROPFIND, not 207: is it the DAV address?", url, res.StatusCode)
	}
}

// telegramGetMe checks a bot token and returns the bot's user name.
func telegramGetMe(ctx context.Context, p Prober, apiURL, token string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, connTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(apiURL, "/")+"/bot"+token+"/getMe", nil)
	if err != nil {
		return "", errors.New("the token has characters a URL cannot carry")
	}
	res, err := p.client().Do(req)
	if err != nil {
		// The error text holds the URL and with it the token.
		return "", fmt.Errorf("cannot reach %s: %s", apiURL, strings.ReplaceAll(rootCause(err), token, "…"))
	}
	defer res.Body.Close()
	var out struct {
		OK     bool   `json:"ok"`
		Desc   string `json:"description"`
		Result struct {
			Username string `json:"username"`
		} `json:"result"`
	}
	_ = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&out)
	if !out.OK {
		if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusNotFound {
			return "", fmt.Errorf("the Bot API refused the token (HTTP %d %s); copy it again from @BotFather", res.StatusCode, out.Desc)
		}
		return "", fmt.Errorf("the Bot API answered HTTP %d %s", res.StatusCode, out.Desc)
	}
	return out.Result.Username, nil
}

// bearerError is ", error=CODE" from a 401's Bearer challenge, or "".
func bearerError(h http.Header) string {
	for _, v := range h.Values("WWW-Authenticate") {
		if i := strings.Index(v, `error="`); i >= 0 {
			code, _, _ := strings.Cut(v[i+len(`error="`):], `"`)
			return ", " + code
		}
	}
	return ""
}
