package bootstrap_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// TestAPIServerFaultDuringKubeconfig: `harvester-bootstrap kubeconfig` run
// while kube-apiserver is away (stopped for a restart: connections refused
// until the new one serves; or frozen for 6 s: connections accepted,
// nothing answered) completes once it is back, with a working credential;
// `revoke` then leaves nothing.
func TestAPIServerFaultDuringKubeconfig(t *testing.T) {
	for i, args := range [][]string{{fault.RestartAPIServer}, {fault.FreezeAPIServer, "6s"}} {
		t.Run(args[0], func(t *testing.T) {
			cluster := fmt.Sprintf("e2e-apikc%d", i)
			out := tempFile(t, "cloud-config")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			faulted, err := sim.APIServerAway(ctx, args...)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := runBin(t, "kubeconfig", "--cluster-name", cluster, "--namespace", "default", "-o", out)
			if err := <-faulted; err != nil {
				t.Fatal(err)
			}
			if r.code != 0 {
				t.Fatalf("kubeconfig during %s: exit %d after %s\n%s", args[0], r.code, time.Since(start), r.stderr)
			}
			t.Logf("kubeconfig took %s", time.Since(start).Round(time.Millisecond))
			_, cs := guestClient(t, out)
			// A kube-apiserver that has just restarted may answer 401 for a
			// while (its authenticators' caches still filling): the
			// credential must work within seconds, not at once.
			var user string
			deadline := time.Now().Add(20 * time.Second)
			for attempt := 1; ; attempt++ {
				user, err = whoami(ctxT(t), cs)
				if err == nil || time.Now().After(deadline) {
					if attempt > 1 {
						t.Logf("the credential worked after %d attempts", attempt)
					}
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if err != nil || user != "system:serviceaccount:default:"+cluster {
				t.Errorf("the credential made during the fault: whoami %q, %v", user, err)
			}
			mustRun(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", "default")
			if left := accessSnapshot(t, ctxT(t), cluster); len(left) != 0 {
				t.Errorf("left after revoke: %v", left)
			}
		})
	}
}
