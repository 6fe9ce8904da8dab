package imapsync

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// dovecot is a real Dovecot IMAP server run as a child process for one test.
type dovecot struct {
	Port     int
	User     string
	Password string
	Maildir  string // the user's Maildir (INBOX)
	uid, gid int
}

// startDovecot writes a minimal dovecot.conf in a temp dir (passwd-file
// auth, Maildir storage, loopback listener on a free port) and runs
// `dovecot -F -c conf`. Without the binary the test is skipped, unless
// HESTIA_REQUIRE_SERVICES=1 (CI), where it fails.
func startDovecot(t *testing.T) *dovecot {
	t.Helper()
	return startDovecotWith(t, "")
}

// startDovecotWith is startDovecot; a non-empty introspectURL adds
// dovecot's oauth2 passdb (XOAUTH2 and OAUTHBEARER) checking tokens at
// that RFC 7662 introspection endpoint, as a provider's IMAP server does.
func startDovecotWith(t *testing.T, introspectURL string) *dovecot {
	t.Helper()
	bin, err := exec.LookPath("dovecot")
	if err != nil {
		for _, p := range []string{"/usr/sbin/dovecot", "/usr/local/sbin/dovecot"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		if os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" {
			t.Fatal("dovecot not installed (apt-get install dovecot-imapd)")
		}
		t.Skip("dovecot not installed")
	}
	dir, err := os.MkdirTemp("", "hestia-dovecot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	d := &dovecot{Port: port, User: "alice", Password: "wonderland"}
	// Dovecot refuses mail access as root; when we are root, the mail
	// files belong to nobody and Dovecot's own users run the services.
	internal, login := "", ""
	d.uid, d.gid = os.Getuid(), os.Getgid()
	if d.uid == 0 {
		if u, err := user.Lookup("nobody"); err == nil {
			d.uid, _ = strconv.Atoi(u.Uid)
			d.gid, _ = strconv.Atoi(u.Gid)
		}
		internal, login = "dovecot", "dovenull"
		if _, err := user.Lookup("dovenull"); err != nil {
			login = "dovecot"
		}
	} else {
		me, _ := user.Current()
		internal, login = me.Username, me.Username
	}
	home := filepath.Join(dir, "home", d.User)
	os.MkdirAll(filepath.Dir(home), 0o755)
	d.Maildir = filepath.Join(home, "Maildir")
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(d.Maildir, sub), 0o700)
	}
	chownAll(t, home, d.uid, d.gid)
	passwd := fmt.Sprintf("%s:{PLAIN}%s:%d:%d::%s::\n", d.User, d.Password, d.uid, d.gid, home)
	os.WriteFile(filepath.Join(dir, "passwd"), []byte(passwd), 0o644)
	mechs, oauthPassdb := "plain login", ""
	if introspectURL != "" {
		mechs = "plain login xoauth2 oauthbearer"
		// The token is posted to the introspection endpoint on every
		// login (no auth cache), and its "username" must be the login's.
		oconf := fmt.Sprintf("introspection_mode = post\nintrospection_url = %s\nforce_introspection = yes\nusername_attribute = username\nactive_attribute = active\nactive_value = true\n", introspectURL)
		os.WriteFile(filepath.Join(dir, "oauth2.conf"), []byte(oconf), 0o644)
		oauthPassdb = fmt.Sprintf("passdb {\n  driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n  args = %s/oauth2.conf\n}\n", dir)
	}
	conf := fmt.Sprintf(`
protocols = imap
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
# No growing delay after failed logins (the tests fail some on purpose).
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
`, dir, internal, login, port, mechs, oauthPassdb)
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
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			t.Fatalf("dovecot exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			t.Fatalf("dovecot did not listen: %s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			t.Logf("dovecot log:\n%s", log)
		}
	})
	return d
}

func chownAll(t *testing.T, root string, uid, gid int) {
	if os.Getuid() != 0 {
		return
	}
	filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, uid, gid)
		}
		return nil
	})
}

// deliver drops a message into a Maildir folder ("" is INBOX, else ".Name")
// the way an MDA does: write in tmp/, rename into new/.
func (d *dovecot) deliver(t *testing.T, folder, name, raw string) {
	t.Helper()
	box := d.Maildir
	if folder != "" {
		box = filepath.Join(d.Maildir, "."+folder)
	}
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(box, sub), 0o700)
	}
	tmp := filepath.Join(box, "tmp", name)
	if err := os.WriteFile(tmp, []byte(strings.ReplaceAll(raw, "\n", "\r\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(box, "new", name)); err != nil {
		t.Fatal(err)
	}
	chownAll(t, box, d.uid, d.gid)
}

func (d *dovecot) account() Account {
	return Account{Name: "dove", Host: "127.0.0.1", Port: d.Port, Security: "none", Username: d.User, Password: d.Password}
}

func (d *dovecot) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Port)) }
