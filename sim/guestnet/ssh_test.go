package guestnet

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

// guestSession serves guest g on a loopback port with srv, logs in as
// user with auth and opens a session; all is closed when the test ends.
func guestSession(t *testing.T, srv *sshServer, g Guest, user string, auth ssh.AuthMethod) (*ssh.Session, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	g.Hostname, g.OS = "m", OSOf("", "ubuntu-22.04")
	go srv.serve(l, &entry{conns: map[net.Conn]bool{}, listeners: map[netip.Addr]net.Listener{}, guest: g})
	c, err := ssh.Dial("tcp", l.Addr().String(), &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{auth},
		HostKeyCallback: ssh.InsecureIgnoreHostKey()}) //nolint:gosec // a test server's new key
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c.NewSession()
}

func newTestServer(t *testing.T) *sshServer {
	t.Helper()
	srv, err := newSSHServer(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// The SSH server on a loopback port: passwords only with ssh_pwauth, only
// the user's own; commands answered with their exit status.
func TestSSHServerPasswords(t *testing.T) {
	srv := newTestServer(t)
	login := func(pwauth bool, user, password, cmd string) error {
		access := userdata.Access{PasswordSSH: pwauth, Logins: map[string]*userdata.Login{"ops": {Name: "ops", Password: "s3cret"}}}
		s, err := guestSession(t, srv, Guest{Access: access}, user, ssh.Password(password))
		if err != nil {
			return err
		}
		return s.Run(cmd)
	}
	if err := login(true, "ops", "s3cret", "exit 0"); err != nil {
		t.Errorf("right password: %v", err)
	}
	var exit *ssh.ExitError
	if err := login(true, "ops", "s3cret", "exit 7"); !errors.As(err, &exit) || exit.ExitStatus() != 7 {
		t.Errorf("exit 7: %v", err)
	}
	for _, tc := range []struct {
		pwauth         bool
		user, password string
	}{{true, "ops", "wrong"}, {true, "root", "s3cret"}, {false, "ops", "s3cret"}} {
		if err := login(tc.pwauth, tc.user, tc.password, "exit 0"); err == nil {
			t.Errorf("%+v: login accepted", tc)
		}
	}
}

// Root's keys as cloud-init writes them: with disable_root (its default)
// sshd runs the forced command of disable_root_opts in place of the one
// asked for, so the login prints where to log in and exits 142 after 10 s
// (cc_ssh.py, ssh_util.py DISABLE_USER_OPTS); with disable_root false the
// command asked for runs, as root. A shell request gets the forced command
// too.
func TestSSHServerRootKeys(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(priv)
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	srv := newTestServer(t)
	var slept []time.Duration
	srv.sleep = func(d time.Duration) { slept = append(slept, d) }
	login := func(cloudConfig, user string, shell bool) (string, error) {
		access, err := userdata.ReadAccess([][]byte{[]byte(cloudConfig)}, "ubuntu")
		if err != nil {
			t.Fatal(err)
		}
		s, err := guestSession(t, srv, Guest{Access: access}, user, ssh.PublicKeys(signer))
		if err != nil {
			return "", err
		}
		if !shell {
			out, err := s.Output("whoami")
			return string(out), err
		}
		var out strings.Builder
		s.Stdout = &out
		if err := s.Shell(); err != nil {
			return "", err
		}
		err = s.Wait()
		return out.String(), err
	}
	keys := "#cloud-config\nssh_authorized_keys: ['" + pub + "']\n"
	refused := "Please login as the user \"ubuntu\" rather than the user \"root\".\n\n"
	for _, tc := range []struct {
		name, doc, user string
		shell           bool
		out             string
		code            int
		slept           []time.Duration
	}{
		{"disable_root default: root refused by its forced command", keys, "root", false, refused, 142, []time.Duration{10 * time.Second}},
		{"a shell as root: the forced command", keys, "root", true, refused, 142, []time.Duration{10 * time.Second}},
		{"the default user runs the command", keys, "ubuntu", false, "ubuntu\n", 0, nil},
		{"disable_root false: root runs the command", keys + "disable_root: false\n", "root", false, "root\n", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slept = nil
			out, err := login(tc.doc, tc.user, tc.shell)
			code := 0
			var exit *ssh.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitStatus()
			} else if err != nil {
				t.Fatal(err)
			}
			if out != tc.out || code != tc.code || !reflect.DeepEqual(slept, tc.slept) {
				t.Errorf("whoami as %s: %q exit %d slept %v, want %q exit %d slept %v", tc.user, out, code, slept, tc.out, tc.code, tc.slept)
			}
		})
	}
}
