package simctl

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// setFault adds or removes one pattern of a VM fault and returns once the
// controllers act on it.
func setFault(t *testing.T, key, pattern string, add bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := fault.SetVM(ctx, env.kube, key, pattern, !add); err != nil {
		t.Fatalf("set fault %s %q: %v", key, pattern, err)
	}
}

func TestFaultStuckScheduling(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	pattern := ns + "/stuck-*"
	setFault(t, fault.StuckScheduling, pattern, true)
	t.Cleanup(func() { setFault(t, fault.StuckScheduling, pattern, false) })

	createVM(t, ns, "stuck-1", vmOpts{})
	createVM(t, ns, "free-1", vmOpts{})
	// kube-apiserver refuses the launcher Pod's binding: kube-scheduler's
	// condition (reason SchedulerError, the refusal as message), which
	// KubeVirt copies to the VMI.
	waitVMI(t, ns, "stuck-1", "held by the fault", func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCond(v, podScheduled)
		return v != nil && v.Status.Phase == kubevirtv1.Scheduling && c != nil && c.Status == corev1.ConditionFalse &&
			c.Reason == "SchedulerError" && strings.Contains(c.Message, "simulator fault stuck-scheduling")
	})
	waitVMI(t, ns, "free-1", "Running", running)

	setFault(t, fault.StuckScheduling, pattern, false)
	waitVMI(t, ns, "stuck-1", "Running once released", running)
}

func TestFaultNoIP(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	pattern := ns + "/noip"
	setFault(t, fault.NoIP, pattern, true)
	t.Cleanup(func() { setFault(t, fault.NoIP, pattern, false) })

	createVM(t, ns, "noip", vmOpts{userData: agentCloudConfig})
	createVM(t, ns, "withip", vmOpts{userData: agentCloudConfig})
	if msg := waitEvent(t, ns, "noip", "NoGuestAddress"); !strings.Contains(msg, "no-ip") {
		t.Errorf("NoGuestAddress event says %q, want the no-ip fault", msg)
	}
	waitVMI(t, ns, "withip", "an IP", hasIP)
	if vmi := waitVMI(t, ns, "noip", "Running", running); hasIP(vmi) {
		t.Fatalf("vmi under the no-ip fault has address %s", vmi.Status.Interfaces[0].IP)
	}
	setFault(t, fault.NoIP, pattern, false)
	waitVMI(t, ns, "noip", "an IP once released", hasIP)
}
