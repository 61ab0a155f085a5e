package bootstrap_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvester-kit/harvester-machine/test/sim/fault"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestAPIServerFaultDuringKubeconfig: `harvester-bootstrap kubeconfig` run
// while kube-apiserver is down (stopped for a restart: connections refused
// until the new one serves) or frozen for 6 s (connections accepted,
// nothing answered) completes once it is back, with a working credential;
// `revoke` then leaves nothing.
func TestAPIServerFaultDuringKubeconfig(t *testing.T) {
	cases := []struct {
		name  string
		begin func(t *testing.T) <-chan error // returns once the API server is away
	}{
		{"restart", beginRestart},
		{"freeze", func(t *testing.T) <-chan error {
			done := make(chan error, 1)
			done <- sim.Fault(ctxT(t), fault.FreezeAPIServer, "6s") // returns once it is stopped
			return done
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cluster := fmt.Sprintf("e2e-apikc%d", i)
			out := tempFile(t, "cloud-config")
			faulted := c.begin(t)
			start := time.Now()
			r := runBin(t, "kubeconfig", "--cluster-name", cluster, "--namespace", "default", "-o", out)
			if err := <-faulted; err != nil {
				t.Fatal(err)
			}
			if r.code != 0 {
				t.Fatalf("kubeconfig during the kube-apiserver %s: exit %d after %s\n%s", c.name, r.code, time.Since(start), r.stderr)
			}
			t.Logf("kubeconfig took %s", time.Since(start).Round(time.Millisecond))
			_, cs := guestClient(t, out)
			if user, err := whoami(ctxT(t), cs); err != nil || user != "system:serviceaccount:default:"+cluster {
				t.Errorf("the credential made during the fault: whoami %q, %v", user, err)
			}
			mustRun(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", "default")
			if left := accessSnapshot(t, ctxT(t), cluster); len(left) != 0 {
				t.Errorf("left after revoke: %v", left)
			}
		})
	}
}

// beginRestart starts `fault restart-apiserver` and returns once the old
// kube-apiserver process is gone (and the new one not yet serving, most
// likely); the channel reports the fault command's end.
func beginRestart(t *testing.T) <-chan error {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sim.Dir, "apiserver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		done <- sim.Fault(ctx, fault.RestartAPIServer)
	}()
	// A process has no watch: poll until the old kube-apiserver has exited.
	err = wait.PollUntilContextTimeout(ctxT(t), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return syscall.Kill(pid, 0) != nil, nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver %d did not stop: %v", pid, err)
	}
	return done
}
