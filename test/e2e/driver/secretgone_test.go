package driver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// TestCreateFailsWhenSecretDeleted (issue 33, 5): `gc --delete` deleted the
// cloud-init Secret of a machine whose VM was still being created; the
// create sat idle until killed and left a volume. KubeVirt mounts that
// Secret into the VM's launcher pod, which cannot start without it, so the
// VM never runs: the create must fail as soon as the Secret is gone,
// saying so, and roll back (no VM, volume, Secret or address claim left).
// For a plain machine (Secret before VM) and one with a static address
// (VM, claim, then Secret).
//
// Sequential: fault stuck-scheduling rewrites the admission policy every
// launcher Pod's binding passes.
func TestCreateFailsWhenSecretDeleted(t *testing.T) {
	const waitTimeout = 90 * time.Second
	simFault(t, fault.StuckScheduling, namespace+"/e2e-secgone-*")
	t.Cleanup(func() { simFault(t, fault.StuckScheduling, "--remove", namespace+"/e2e-secgone-*") })
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"e2e-secgone-pool1-p0000", nil},
		{"e2e-secgone-pool1-s0000", []string{"--harvester-static-address-range=10.60.4.10-10.60.4.20/24", "--harvester-static-gateway=10.60.4.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRM(t, "e2e-secgone")
			ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
			defer cancel()
			deleted := make(chan time.Time, 1)
			go func() {
				at, err := deleteSecretWhenScheduling(ctx, tc.name)
				if err != nil {
					t.Errorf("delete the cloud-init Secret while create waits: %v", err)
				}
				deleted <- at
			}()
			flags := append(append([]string{}, imageAndNet...), fmt.Sprintf("--harvester-wait-timeout=%d", int(waitTimeout.Seconds())))
			out, err := r.create(tc.name, append(flags, tc.flags...)...)
			ended := time.Now()
			at := <-deleted
			mustFail(t, out, err, "cloud-init Secret "+namespace+"/"+tc.name+"-cloudinit was deleted")
			for _, want := range []string{"KubeVirt cannot start the VM without it", "removing what it created"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range []string{"timed out", "cleanup after the failed create also failed"} {
				if strings.Contains(out, bad) {
					t.Errorf("output has %q:\n%s", bad, out)
				}
			}
			if !at.IsZero() && ended.Sub(at) > 20*time.Second {
				t.Errorf("create ended %s after the Secret was deleted, want at once (wait timeout %s)", ended.Sub(at).Round(time.Second), waitTimeout)
			}
			r.assertNothingLeft()
			assertNothingOf(t, tc.name)
			_, _ = r.run("rm", "-y", tc.name)
		})
	}
}

// deleteSecretWhenScheduling deletes the machine's cloud-init Secret once
// its VMI is seen Scheduling, and returns when it did.
func deleteSecretWhenScheduling(ctx context.Context, name string) (time.Time, error) {
	w, err := virt.KubevirtV1().VirtualMachineInstances(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return time.Time{}, err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if vmi, ok := ev.Object.(*kubevirtv1.VirtualMachineInstance); ok && vmi.Status.Phase == kubevirtv1.Scheduling {
			return time.Now(), kube.CoreV1().Secrets(namespace).Delete(ctx, name+"-cloudinit", metav1.DeleteOptions{})
		}
	}
	return time.Time{}, ctx.Err()
}
