package guestnet

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// sshServer answers SSH on the guests' addresses as their sshd would:
// public keys and (with ssh_pwauth) passwords of the users the guest's
// cloud-init made, exec requests answered by session.run.
type sshServer struct {
	hostKey ssh.Signer
	log     *slog.Logger
	sleep   func(time.Duration) // the guest's sleep; nil: time.Sleep
}

func newSSHServer(log *slog.Logger) (*sshServer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("guest SSH host key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("guest SSH host key: %w", err)
	}
	return &sshServer{hostKey: signer, log: log}, nil
}

// serve accepts connections on l until it is closed.
func (s *sshServer) serve(l net.Listener, e *entry) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		e.conns[c] = true
		e.mu.Unlock()
		go func() {
			defer func() {
				e.mu.Lock()
				delete(e.conns, c)
				e.mu.Unlock()
				c.Close()
			}()
			s.handle(c, e.current())
		}()
	}
}

// config accepts the logins of guest g.
func (s *sshServer) config(g Guest) *ssh.ServerConfig {
	cfg := &ssh.ServerConfig{
		ServerVersion: "SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.6",
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if l := g.Access.Logins[meta.User()]; l != nil {
				if perms, err := authorizedKey(l.Keys, key); err == nil {
					return perms, nil
				}
			}
			return nil, fmt.Errorf("public key of %s not accepted", meta.User())
		},
	}
	if g.Access.PasswordSSH {
		cfg.PasswordCallback = func(meta ssh.ConnMetadata, password []byte) (*ssh.Permissions, error) {
			l := g.Access.Logins[meta.User()]
			if l != nil && l.Password != "" && subtle.ConstantTimeCompare([]byte(l.Password), password) == 1 {
				return nil, nil
			}
			return nil, fmt.Errorf("password of %s not accepted", meta.User())
		}
	}
	cfg.AddHostKey(s.hostKey)
	return cfg
}

func (s *sshServer) handle(c net.Conn, g Guest) {
	conn, chans, reqs, err := ssh.NewServerConn(c, s.config(g))
	if err != nil {
		s.log.Debug("guest SSH login refused", "guest", g.Hostname, "remote", c.RemoteAddr(), "err", err)
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	sess := session{guest: &g, user: conn.User(), sleep: s.sleep}
	if conn.Permissions != nil {
		sess.forced = conn.Permissions.CriticalOptions[forceCommand]
	}
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "the simulated guest opens sessions only")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		go sess.serveChannel(ch, requests)
	}
}

// serveChannel answers one session: its exec (or shell) request, or for a
// key with a forced command that command in its place, as sshd runs it.
func (s session) serveChannel(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	for req := range requests {
		switch req.Type {
		case "exec":
			line, err := execCommand(req.Payload)
			if err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			if s.forced != "" {
				line = s.forced
			}
			s.finish(ch, s.run(line))
			return
		case "shell":
			_ = req.Reply(true, nil)
			if s.forced != "" {
				s.finish(ch, s.run(s.forced))
				return
			}
			s.finish(ch, result{stderr: "the simulated guest has no interactive shell: give a command (harvester-sim)\n", code: 127})
			return
		default: // env, pty-req, ...
			_ = req.Reply(req.Type == "env" || req.Type == "pty-req", nil)
		}
	}
}

func (s session) finish(ch ssh.Channel, r result) {
	_, _ = ch.Write([]byte(r.stdout))
	_, _ = ch.Stderr().Write([]byte(r.stderr))
	status := make([]byte, 4)
	binary.BigEndian.PutUint32(status, uint32(r.code))
	_, _ = ch.SendRequest("exit-status", false, status)
}

// execCommand decodes an exec request's payload (an SSH string).
func execCommand(payload []byte) (string, error) {
	if len(payload) < 4 {
		return "", errors.New("short exec request")
	}
	n := binary.BigEndian.Uint32(payload)
	if int(n) != len(payload)-4 {
		return "", errors.New("bad exec request")
	}
	return strings.TrimSpace(string(payload[4:])), nil
}
