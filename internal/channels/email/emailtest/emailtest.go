// Package emailtest runs the mail servers the e-mail channel's tests (and
// the IMAP mirror's, imapsync) talk to: the real Dovecot (IMAP, IDLE, special-use folders) and OpenSMTPD
// (SMTP, delivering into Dovecot's Maildir) on loopback, each a child
// process of one test with its own temporary configuration. Without the
// binaries (or, for OpenSMTPD, without root) tests skip or fall back to an
// in-process go-smtp server, unless HESTIA_REQUIRE_SERVICES=1 (CI, where
// .ci/run installs dovecot-imapd and opensmtpd), which makes that a
// failure.
//
// SMTP is also a scriptable go-smtp submission server for the failure
// paths a real server only shows on a bad day: it checks AUTH PLAIN
// credentials and can answer a command with any reply code.
package emailtest

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// requireServices reports whether a missing server must fail the test.
func requireServices() bool { return os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" }

func findBinary(name string, paths ...string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return "", false
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitListening waits for a server's port, failing with its log when the
// process exits first.
func waitListening(t testing.TB, port int, exited <-chan struct{}, logPath string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("server exited before listening:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("server did not listen on %d:\n%s", port, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopOnCleanup ends cmd when the test ends, showing its log on failure.
func stopOnCleanup(t testing.TB, cmd *exec.Cmd, sig os.Signal, logPath string) <-chan struct{} {
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(sig)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", filepath.Base(cmd.Path), b)
		}
	})
	return exited
}

// Dovecot is a running Dovecot serving one user over plain IMAP on
// loopback, mail in a Maildir with Sent, Drafts and Trash folders.
type Dovecot struct {
	Port     int
	User     string
	Password string
	// Maildir is the user's Maildir (INBOX; folders are ".Name" in it).
	Maildir string
	// Log is Dovecot's log file, for a test's failure message.
	Log      string
	uid, gid int
	n        atomic.Int64
}

// DovecotOptions configure StartDovecotWith.
type DovecotOptions struct {
	// IntrospectURL, when set, adds Dovecot's oauth2 passdb (XOAUTH2 and
	// OAUTHBEARER) checking tokens at this RFC 7662 introspection
	// endpoint, as a provider's IMAP server does. The token's "username"
	// must be the login's.
	IntrospectURL string
}

// StartDovecot starts Dovecot for one test.
func StartDovecot(t testing.TB) *Dovecot {
	t.Helper()
	return StartDovecotWith(t, DovecotOptions{})
}

// StartDovecotWith starts Dovecot for one test, configured by opts.
func StartDovecotWith(t testing.TB, opts DovecotOptions) *Dovecot {
	t.Helper()
	bin, ok := findBinary("dovecot", "/usr/sbin/dovecot", "/usr/local/sbin/dovecot")
	if !ok {
		if requireServices() {
			t.Fatal("dovecot not installed (apt-get install dovecot-imapd)")
		}
		t.Skip("dovecot not installed")
	}
	// Dovecot's services must be able to enter the directory, which
	// t.TempDir's 0700 parents may forbid when they run as another user.
	dir, err := os.MkdirTemp("", "hestia-email-dovecot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	d := &Dovecot{Port: freePort(t), User: "alice", Password: "wonderland"}
	// Dovecot will not touch mail as root: as root the mail belongs to
	// nobody and Dovecot's own accounts run its services.
	d.uid, d.gid = os.Getuid(), os.Getgid()
	internalUser, loginUser := "", ""
	if d.uid == 0 {
		if u, err := user.Lookup("nobody"); err == nil {
			d.uid, _ = strconv.Atoi(u.Uid)
			d.gid, _ = strconv.Atoi(u.Gid)
		}
		internalUser, loginUser = "dovecot", "dovenull"
		if _, err := user.Lookup("dovenull"); err != nil {
			loginUser = "dovecot"
		}
	} else {
		me, _ := user.Current()
		internalUser, loginUser = me.Username, me.Username
	}
	home := filepath.Join(dir, "home", d.User)
	d.Maildir = filepath.Join(home, "Maildir")
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(d.Maildir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "home"), 0o755)
	d.chown(home)
	passwd := fmt.Sprintf("%s:{PLAIN}%s:%d:%d::%s::\n", d.User, d.Password, d.uid, d.gid, home)
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	mechs, oauthPassdb := "plain login", ""
	if opts.IntrospectURL != "" {
		mechs = "plain login xoauth2 oauthbearer"
		// The token is posted to the introspection endpoint on every
		// login (no auth cache).
		oconf := fmt.Sprintf("introspection_mode = post\nintrospection_url = %s\nforce_introspection = yes\nusername_attribute = username\nactive_attribute = active\nactive_value = true\n", opts.IntrospectURL)
		if err := os.WriteFile(filepath.Join(dir, "oauth2.conf"), []byte(oconf), 0o644); err != nil {
			t.Fatal(err)
		}
		oauthPassdb = fmt.Sprintf("passdb {\n  driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n  args = %s/oauth2.conf\n}\n", dir)
	}
	conf := fmt.Sprintf(`protocols = imap
listen = 127.0.0.1
base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = %[5]s
auth_failure_delay = 0
default_internal_user = %[2]s
default_internal_group = %[2]s
default_login_user = %[3]s
first_valid_uid = 1
mail_location = maildir:~/Maildir
%[6]spassdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[1]s/passwd
}
userdb {
  driver = passwd-file
  args = username_format=%%u %[1]s/passwd
}
namespace inbox {
  inbox = yes
  separator = /
  mailbox Sent {
    special_use = \Sent
    auto = create
  }
  mailbox Drafts {
    special_use = \Drafts
    auto = create
  }
  mailbox Trash {
    special_use = \Trash
    auto = create
  }
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[4]d
  }
  inet_listener imaps {
    port = 0
  }
}
# No growing delay after failed logins (tests fail some on purpose).
service anvil {
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
service stats {
  unix_listener stats-reader {
    mode = 0666
  }
  unix_listener stats-writer {
    mode = 0666
  }
}
`, dir, internalUser, loginUser, d.Port, mechs, oauthPassdb)
	confPath := filepath.Join(dir, "dovecot.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "run"), 0o755)
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	cmd := exec.Command(bin, "-F", "-c", confPath)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dovecot: %v", err)
	}
	logPath := filepath.Join(dir, "dovecot.log")
	d.Log = logPath
	exited := stopOnCleanup(t, cmd, os.Interrupt, logPath)
	waitListening(t, d.Port, exited, logPath)
	return d
}

func (d *Dovecot) chown(root string) {
	if os.Getuid() != 0 {
		return
	}
	filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, d.uid, d.gid)
		}
		return nil
	})
}

func (d *Dovecot) folder(name string) string {
	if name == "" || strings.EqualFold(name, "INBOX") {
		return d.Maildir
	}
	return filepath.Join(d.Maildir, "."+strings.ReplaceAll(name, "/", "."))
}

// Deliver drops raw (LF line ends are made CRLF) into a folder ("" is
// INBOX) the way a local delivery agent does: written in tmp/, renamed
// into new/. It stands in for an MTA that adds headers of its own, such
// as Authentication-Results.
func (d *Dovecot) Deliver(t testing.TB, folder, raw string) {
	t.Helper()
	if err := d.deliver(folder, raw); err != nil {
		t.Fatal(err)
	}
}

func (d *Dovecot) deliver(folder, raw string) error {
	box := d.folder(folder)
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(box, sub), 0o700); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("%d.emailtest%d.localhost", time.Now().UnixNano(), d.n.Add(1))
	tmp := filepath.Join(box, "tmp", name)
	raw = strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\n", "\r\n")
	if err := os.WriteFile(tmp, []byte(raw), 0o600); err != nil {
		return err
	}
	// Dovecot's user owns the file before it shows in new/: IDLE sees it
	// at once, and a file it cannot read yet breaks the session.
	d.chown(box)
	if err := os.Rename(tmp, filepath.Join(box, "new", name)); err != nil {
		return err
	}
	return nil
}

// LogTail is the end of Dovecot's log, for a failure message.
func (d *Dovecot) LogTail() string {
	b, _ := os.ReadFile(d.Log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stored is one message file in a folder.
type Stored struct {
	Raw string
	// Flags are the Maildir info flags ("S" seen, "R" answered, …).
	Flags string
}

// Messages returns the messages in a folder ("" is INBOX), oldest first
// by file name.
func (d *Dovecot) Messages(t testing.TB, folder string) []Stored {
	t.Helper()
	box := d.folder(folder)
	var names []string
	for _, sub := range []string{"new", "cur"} {
		entries, _ := os.ReadDir(filepath.Join(box, sub))
		for _, e := range entries {
			names = append(names, filepath.Join(sub, e.Name()))
		}
	}
	sort.Slice(names, func(i, j int) bool { return filepath.Base(names[i]) < filepath.Base(names[j]) })
	var out []Stored
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(box, n))
		if err != nil {
			continue // renamed by Dovecot meanwhile
		}
		s := Stored{Raw: string(b)}
		if _, info, ok := strings.Cut(filepath.Base(n), ":2,"); ok {
			s.Flags = info
		}
		out = append(out, s)
	}
	return out
}

// WaitMessage waits until a message containing text is in folder.
func (d *Dovecot) WaitMessage(t testing.TB, folder, text string) Stored {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, m := range d.Messages(t, folder) {
			if strings.Contains(m.Raw, text) {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message containing %q arrived in %q", text, folder)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartMTA starts an MTA on loopback that accepts mail for any
// @example.org recipient into the Dovecot user's INBOX: OpenSMTPD when it
// can run (it needs root), else the in-process SMTP server (failing
// instead under HESTIA_REQUIRE_SERVICES=1 as root). It returns the port
// and whether it is OpenSMTPD.
func StartMTA(t testing.TB, d *Dovecot) (int, bool) {
	t.Helper()
	if port, ok := startOpenSMTPD(t, d); ok {
		return port, true
	}
	s := StartSMTP(t, SMTPOptions{Deliver: func(raw []byte) error { return d.deliver("", string(raw)) }})
	return s.Port, false
}

func startOpenSMTPD(t testing.TB, d *Dovecot) (int, bool) {
	t.Helper()
	bin, ok := findBinary("smtpd", "/usr/sbin/smtpd", "/usr/local/sbin/smtpd")
	if !ok || os.Getuid() != 0 {
		if os.Getuid() == 0 && requireServices() {
			t.Fatal("opensmtpd not installed (apt-get install opensmtpd)")
		}
		t.Log("OpenSMTPD unavailable (needs the binary and root): using the in-process SMTP server")
		return 0, false
	}
	port := freePort(t)
	dir := t.TempDir()
	conf := fmt.Sprintf(`table vusers { "@example.org" = "nobody" }
listen on 127.0.0.1 port %d
action "deliver" maildir "%s" virtual <vusers>
match from any for domain "example.org" action "deliver"
`, port, d.Maildir)
	confPath := filepath.Join(dir, "smtpd.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "smtpd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	// OpenSMTPD keeps its control socket (/run/smtpd.sock) and queue
	// (/var/spool/smtpd) at fixed paths, so a second instance exits with
	// "control socket already listening". In a private mount namespace
	// with its own /run and spool, instances of parallel tests (and of
	// other packages' tests) never meet; where namespaces are not allowed,
	// instances take turns under a lock file instead, retrying while
	// another test's instance (one not taking the lock) holds the socket.
	isolated := canUnshare()
	if !isolated {
		lockSMTPD(t)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var cmd *exec.Cmd
		if isolated {
			script := `mount -t tmpfs -o mode=755 tmpfs /run && { [ ! -d /var/spool/smtpd ] || mount -t tmpfs -o mode=711 tmpfs /var/spool/smtpd; } && exec "$0" "$@"`
			cmd = exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, bin, "-d", "-f", confPath)
		} else {
			cmd = exec.Command(bin, "-d", "-f", confPath)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting smtpd: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if up := waitUp(port, exited); up {
			t.Cleanup(func() {
				cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
					cmd.Process.Kill()
					<-exited
				}
				if t.Failed() {
					b, _ := os.ReadFile(logPath)
					t.Logf("smtpd log:\n%s", b)
				}
			})
			t.Logf("using OpenSMTPD as the MTA (own mount namespace: %v)", isolated)
			return port, true
		}
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
		b, _ := os.ReadFile(logPath)
		if !strings.Contains(string(b), "already listening") || time.Now().After(deadline) {
			t.Fatalf("smtpd did not start:\n%s", b)
		}
		logf.Truncate(0)
		logf.Seek(0, io.SeekStart)
		time.Sleep(200 * time.Millisecond)
	}
}

// waitUp waits up to 15s for the port, false when the process exits first.
func waitUp(port int, exited <-chan struct{}) bool {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return true
		}
		select {
		case <-exited:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// canUnshare reports whether a private mount namespace with its own /run
// can be made (root with CAP_SYS_ADMIN, not in every container).
func canUnshare() bool {
	if _, err := exec.LookPath("unshare"); err != nil {
		return false
	}
	return exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /run").Run() == nil
}

// lockSMTPD holds an exclusive lock shared by every test process on the
// machine until the test ends.
func lockSMTPD(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "hestia-opensmtpd.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("locking OpenSMTPD: %v", err)
	}
	t.Cleanup(func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() })
}

// SMTPOptions configure the in-process SMTP server.
type SMTPOptions struct {
	// Username and Password, when set, are required (AUTH PLAIN) before
	// MAIL FROM, as a submission server does.
	Username, Password string
	// Deliver, when set, receives each accepted message; an error is a
	// temporary failure (451) to the client.
	Deliver func(raw []byte) error
}

// SMTP is a scriptable in-process submission server.
type SMTP struct {
	Port int
	opts SMTPOptions

	mu sync.Mutex
	// fail maps a step ("AUTH", "MAIL", "RCPT", "DATA") to the replies
	// the next commands of that step get.
	fail map[string][]*smtp.SMTPError
	// Received are the accepted messages, in order.
	received []Received
	// Logins counts successful AUTH exchanges.
	logins int
}

// Received is one accepted message with its envelope.
type Received struct {
	From string
	To   []string
	Raw  []byte
}

// StartSMTP starts the server for one test.
func StartSMTP(t testing.TB, opts SMTPOptions) *SMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTP{Port: ln.Addr().(*net.TCPAddr).Port, opts: opts, fail: map[string][]*smtp.SMTPError{}}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true // loopback only
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.MaxMessageBytes = 10 << 20
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// FailNext makes the next command of step get reply code, enhanced code
// and message (e.g. "RCPT", 550, [3]int{5,1,1}, "no such user").
func (s *SMTP) FailNext(step string, code int, enhanced [3]int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[step] = append(s.fail[step], &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCode(enhanced), Message: msg})
}

// Received returns the accepted messages.
func (s *SMTP) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Logins returns how many AUTH exchanges succeeded.
func (s *SMTP) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

func (s *SMTP) next(step string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.fail[step]; len(q) > 0 {
		s.fail[step] = q[1:]
		return q[0]
	}
	return nil
}

// NewSession implements smtp.Backend.
func (s *SMTP) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }

type session struct {
	s        *SMTP
	authed   bool
	from     string
	to       []string
	haveMail bool
}

// AuthMechanisms implements smtp.AuthSession.
func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

// Auth implements smtp.AuthSession.
func (ss *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if err := ss.s.next("AUTH"); err != nil {
			return err
		}
		if (identity != "" && identity != username) || username != ss.s.opts.Username || password != ss.s.opts.Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
		}
		ss.authed = true
		ss.s.mu.Lock()
		ss.s.logins++
		ss.s.mu.Unlock()
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.Username != "" && !ss.authed {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	}
	if err := ss.s.next("MAIL"); err != nil {
		return err
	}
	if !strings.Contains(from, "@") {
		return &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 1, 7}, Message: "Sender address invalid"}
	}
	ss.from, ss.haveMail = from, true
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if !ss.haveMail {
		return &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "MAIL first"}
	}
	if err := ss.s.next("RCPT"); err != nil {
		return err
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	if len(ss.to) == 0 {
		return &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "RCPT first"}
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := ss.s.next("DATA"); err != nil {
		return err
	}
	// What a real server checks of the message itself (RFC 5322 §2.1.1,
	// §3.6): line length, and the two required fields.
	for _, line := range strings.Split(string(b), "\r\n") {
		if len(line) > 998 {
			return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Line too long"}
		}
	}
	head, _, _ := strings.Cut(string(b), "\r\n\r\n")
	lower := "\r\n" + strings.ToLower(head)
	if !strings.Contains(lower, "\r\nfrom:") || !strings.Contains(lower, "\r\ndate:") {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Message lacks From or Date"}
	}
	if ss.s.opts.Deliver != nil {
		if err := ss.s.opts.Deliver(b); err != nil {
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Local delivery failed"}
		}
	}
	ss.s.mu.Lock()
	ss.s.received = append(ss.s.received, Received{From: ss.from, To: append([]string(nil), ss.to...), Raw: b})
	ss.s.mu.Unlock()
	return nil
}

func (ss *session) Reset() {
	ss.from, ss.to, ss.haveMail = "", nil, false
}

func (ss *session) Logout() error { return nil }

// Submit sends raw from → to through an SMTP server on loopback, as a
// person's mail client (or another MTA) would.
func Submit(t testing.TB, port int, from string, to []string, raw string) {
	t.Helper()
	raw = strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\n", "\r\n")
	// Plain SMTP: smtp.SendMail insists on STARTTLS, which loopback
	// servers here do not offer.
	c, err := smtp.Dial(fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("submitting a message: %v", err)
	}
	defer c.Close()
	if err := c.SendMail(from, to, strings.NewReader(raw)); err != nil {
		t.Fatalf("submitting a message: %v", err)
	}
	c.Quit()
}
