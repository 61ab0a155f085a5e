package driver_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/test/harness"
)

// withDocker makes the guest of machine name run a Docker engine (the
// simulator's docker-engine fault), so rancher-machine start and restart
// find one, until the test ends.
func withDocker(t *testing.T, name string) {
	t.Helper()
	simFault(t, fault.DockerEngine, namespace+"/"+name)
	t.Cleanup(func() { simFault(t, fault.DockerEngine, "--remove", namespace+"/"+name) })
}

// TestSSHIntoMachine: the key the driver generated lets rancher-machine
// into the machine it made; other keys and users are refused; the guest
// answers libmachine's commands and refuses others; without a Docker
// engine start says so; a stopped machine's address is gone.
func TestSSHIntoMachine(t *testing.T) {
	t.Parallel()
	harness.NeedGuests(t)
	r := newRM(t, "e2e-ssh")
	name := "e2e-ssh-pool1-k3y00"
	r.mustCreate(name, imageAndNet...)

	if out := r.mustRun("ssh", name, "cat /etc/os-release"); !strings.Contains(out, "ID=ubuntu") || !strings.Contains(out, `VERSION_ID="22.04"`) {
		t.Errorf("os-release of an ubuntu-22.04 machine:\n%s", out)
	}
	if out := r.mustRun("ssh", name, "hostname"); strings.TrimSpace(out) != name {
		t.Errorf("hostname %q, want %s", out, name)
	}
	if out := r.mustRun("ssh", name, "sudo -n true"); strings.TrimSpace(out) != "" {
		t.Errorf("sudo -n true printed %q", out)
	}
	out, err := r.run("ssh", name, "rm -rf /")
	mustFail(t, out, err, "the simulated guest has no such command")

	ip := r.stdout("ip", name)
	key := readSigner(t, filepath.Join(r.store, "machines", name, "id_rsa"))
	if _, err := sshRun(ip, "ubuntu", key, "exit 0"); err != nil {
		t.Errorf("the machine's own key as ubuntu: %v", err)
	}
	var exit *ssh.ExitError
	if out, err := sshRun(ip, "ubuntu", key, "rm -rf /"); !errors.As(err, &exit) || exit.ExitStatus() != 127 {
		t.Errorf("unknown command: %v (%s), want exit status 127", err, out)
	}
	if _, err := sshRun(ip, "root", key, "exit 0"); err == nil {
		t.Error("the machine's key was accepted for root")
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(other)
	if _, err := sshRun(ip, "ubuntu", otherSigner, "exit 0"); err == nil {
		t.Error("a key the machine does not know was accepted")
	}

	r.mustRun("stop", name)
	if _, err := sshRun(ip, "ubuntu", key, "exit 0"); !errors.Is(err, syscall.ENETUNREACH) {
		t.Errorf("SSH to a stopped machine's address: %v, want ENETUNREACH (the address is gone)", err)
	}
	out, err = r.run("start", name)
	mustFail(t, out, err, "Unable to verify the Docker daemon is listening")
	if s := status(t, r, name); s != "Running" {
		t.Errorf("after start without a Docker engine: status %q, want Running", s)
	}
	r.mustRun("rm", "-y", "--update-config", name)
}

func readSigner(t *testing.T, path string) ssh.Signer {
	t.Helper()
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sshRun logs in to ip:22 as user with key and runs command.
func sshRun(ip, user string, key ssh.Signer, command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(ip, "22"))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	c, chans, reqs, err := ssh.NewClientConn(conn, ip+":22", &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(key)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), //nolint:gosec // the simulated guest's key is new each run
	})
	if err != nil {
		return "", err
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	s, err := client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(command)
	return string(out), err
}
