package driver

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
)

// kubeconfigFor is drivertest.Kubeconfig pointing at addr.
func kubeconfigFor(addr string) string {
	return strings.Replace(drivertest.Kubeconfig, "127.0.0.1:6443", addr, 1)
}

// silentServer accepts connections and never answers; it returns its
// address.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read or answered
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestPreCreateStopsAtFirstConnectionFailure: against a server that never
// answers (or refuses connections) the pre-create check gives one error
// saying what failed, after one call's timeout, not one per check.
func TestPreCreateStopsAtFirstConnectionFailure(t *testing.T) {
	cases := []struct {
		name string
		addr func(*testing.T) string
		want string
	}{
		{"accepts but never answers", silentServer, "no answer within 1s (--" + config.FlagAPITimeout + ")"},
		{"refuses connections", closedPort, "connection refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := c.addr(t)
			d := New()
			d.Config = plans.BaseConfig()
			d.MachineName = testMachine
			d.KubeconfigContent = kubeconfigFor(addr)
			d.APITimeoutSeconds = 1
			start := time.Now()
			err := d.PreCreateCheck()
			took := time.Since(start)
			if !errors.Is(err, harvesterapi.ErrUnreachable) {
				t.Fatalf("got %v, want harvesterapi.ErrUnreachable", err)
			}
			msg := err.Error()
			for _, want := range []string{"cannot reach the Harvester API server at https://" + addr, c.want, "read Harvester setting server-version"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q: %v", want, msg)
				}
			}
			if n := strings.Count(msg, "\n"); n > 0 {
				t.Errorf("%d lines, want one error: %v", n+1, msg)
			}
			if took > 10*time.Second {
				t.Errorf("took %s: the check went on after the first failure", took)
			}
		})
	}
}

// TestRemoveStopsAtFirstConnectionFailure: rm against a server that never
// answers (or refuses connections) fails after one call's timeout with the
// same "cannot reach" error as the pre-create check, never saying "not
// found".
func TestRemoveStopsAtFirstConnectionFailure(t *testing.T) {
	for _, addr := range []func(*testing.T) string{silentServer, closedPort} {
		a := addr(t)
		d := New()
		d.MachineName, d.VMNamespace = testMachine, testNS
		d.Ownership = machine.Ownership{MachineID: testMachineID, VMUID: "uid-1", ClusterUID: testCluster}
		d.KubeconfigContent = kubeconfigFor(a)
		d.APITimeoutSeconds = 1
		err := d.Remove()
		if !errors.Is(err, harvesterapi.ErrUnreachable) || saysGone(err) {
			t.Fatalf("%s: got %v, want ErrUnreachable", a, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "cannot reach the Harvester API server at https://"+a) || !strings.Contains(msg, "stopped at the first failed call: get VM "+testNS+"/"+testMachine) {
			t.Errorf("%s: %v", a, msg)
		}
		if strings.Contains(msg, "server-version") {
			t.Errorf("%s: a second call was made after the first failed: %v", a, msg)
		}
	}
}

// TestTLSStallHonoursAPITimeout: a server that accepts connections but
// never completes the TLS handshake fails the call at
// --harvester-api-timeout (here 12 s, beyond client-go's 10 s handshake
// timeout), saying so.
func TestTLSStallHonoursAPITimeout(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	d := New()
	d.Config = plans.BaseConfig()
	d.MachineName = testMachine
	d.KubeconfigContent = kubeconfigFor(addr)
	d.APITimeoutSeconds = 12
	start := time.Now()
	err := d.PreCreateCheck()
	if took := time.Since(start); took < 12*time.Second {
		t.Errorf("failed after %s, before --%s (12s)", took, config.FlagAPITimeout)
	}
	if !errors.Is(err, harvesterapi.ErrUnreachable) || !strings.Contains(err.Error(), "TLS: the server accepted connections but completed no TLS handshake within 12s (--"+config.FlagAPITimeout+")") {
		t.Errorf("got %v", err)
	}
}
