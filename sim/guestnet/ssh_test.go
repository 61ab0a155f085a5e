package guestnet

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

// The SSH server on a loopback port: passwords only with ssh_pwauth, only
// the user's own; commands answered with their exit status.
func TestSSHServerPasswords(t *testing.T) {
	srv, err := newSSHServer(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	login := func(pwauth bool, user, password, cmd string) error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		e := &entry{conns: map[net.Conn]bool{}, listeners: map[netip.Addr]net.Listener{}, guest: Guest{
			Hostname: "m", OS: OSOf("", "ubuntu-22.04"),
			Access: userdata.Access{PasswordSSH: pwauth, Logins: map[string]*userdata.Login{"ops": {Name: "ops", Password: "s3cret"}}},
		}}
		go srv.serve(l, e)
		c, err := ssh.Dial("tcp", l.Addr().String(), &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.Password(password)},
			HostKeyCallback: ssh.InsecureIgnoreHostKey()}) //nolint:gosec // a test server's new key
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
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
