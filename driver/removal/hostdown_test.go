package removal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

const downHost = "harvester-node-2"

func stuckVMI() *kubevirtv1.VirtualMachineInstance {
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: testMachine, Namespace: "default", UID: "vmi-1",
		DeletionTimestamp: &metav1.Time{Time: time.Unix(1000, 0)}, Finalizers: []string{"kubevirt.io/foregroundDeleteVirtualMachine"}}}
	vmi.Status.NodeName = downHost
	vmi.Status.Phase = kubevirtv1.Running
	return vmi
}

// host is a Node with Ready status since at, and the given taints.
func host(status corev1.ConditionStatus, at time.Time, taints ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: downHost}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(at)}}
	for _, k := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k})
	}
	return n
}

// TestHostDownError: a VMI on a NotReady host is explained with the host,
// since when, and where Harvester's force-reset rule stands; a Ready host
// or none explains nothing.
func TestHostDownError(t *testing.T) {
	down := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now := down.Add(42 * time.Second)
	cases := []struct {
		name string
		node *corev1.Node
		want []string // nil: no explanation
	}{
		{"Ready host", host(corev1.ConditionTrue, down), nil},
		{"no host", nil, nil},
		{"Unknown, nothing yet", host(corev1.ConditionUnknown, down), []string{
			"VM default/" + testMachine + " is still terminating on host harvester-node-2, which is NotReady since 2026-11-26T12:00:00Z (42s ago)",
			"Ready Unknown: Kubelet stopped posting node status.",
			"vm-force-reset-policy", "kubevirt.io/drain", "node.kubernetes.io/out-of-service", `{"enable":true,"period":15,"vmMigrationTimeout":180}`}},
		{"drain taint", host(corev1.ConditionUnknown, down, "kubevirt.io/drain"), []string{"the host has the taint kubevirt.io/drain", "vmMigrationTimeout seconds later"}},
		{"out of service", host(corev1.ConditionUnknown, down, "kubevirt.io/drain", "node.kubernetes.io/out-of-service"), []string{"marked the host out of service"}},
	}
	for _, c := range cases {
		got := HostDownError(stuckVMI(), c.node, now)
		if c.want == nil {
			if got != nil {
				t.Errorf("%s: explained %q", c.name, got.Error())
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: no explanation", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, got.Error(), w)
			}
		}
	}
	running := stuckVMI()
	running.DeletionTimestamp = nil
	if got := HostDownError(running, host(corev1.ConditionUnknown, down), now); got == nil || !strings.Contains(got.Error(), "is still on host harvester-node-2") {
		t.Errorf("a VMI not yet being deleted: %v", got)
	}
}

// TestExplainTimeout: after a timeout the removal reads the VMI and its
// host (a list of one: the credential lists hosts) and names the down
// host, keeping the timeout as the cause; every other case, and a read
// that fails, leaves the timeout error as it was.
func TestExplainTimeout(t *testing.T) {
	timeout := fmt.Errorf("timed out after 10s waiting for VMI default/%s to be deleted: %w", testMachine, context.DeadlineExceeded)
	m := &machine.Machine{Config: config.Config{VMNamespace: "default"}, Name: testMachine}
	api := func(node *corev1.Node, vmi *kubevirtv1.VirtualMachineInstance, listFails bool) (*harvesterapi.API, *kubefake.Clientset) {
		var objs []runtime.Object
		if node != nil {
			objs = append(objs, node, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "harvester-node-0"}})
		}
		kube := kubefake.NewSimpleClientset(objs...)
		if listFails {
			kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New(`nodes is forbidden: User "driver" cannot list resource "nodes"`)
			})
		}
		virt := virtfake.NewSimpleClientset()
		if vmi != nil {
			virt = virtfake.NewSimpleClientset(vmi)
		}
		return harvesterapi.FromClients(restapifake.Clients{Kube: kube, Virt: virt}, nil, nil, harvesterapi.Options{CallTimeout: time.Second}), kube
	}
	since := time.Now().Add(-time.Minute)

	a, kube := api(host(corev1.ConditionUnknown, since), stuckVMI(), false)
	err := explainTimeout(context.Background(), a, m, timeout)
	var hd *HostDown
	if !errors.As(err, &hd) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "harvester-node-2, which is NotReady") || !strings.Contains(err.Error(), "the machine is kept") ||
		!strings.Contains(err.Error(), "timed out after 10s") {
		t.Errorf("down host: %v", err)
	}
	if n := len(kube.Actions()); n != 1 {
		t.Errorf("reading the host took %d requests, want 1: %v", n, kube.Actions())
	}
	if again := explainTimeout(context.Background(), a, m, err); again.Error() != err.Error() || !errors.Is(again, context.DeadlineExceeded) {
		t.Errorf("an explained error is explained again: %v", again)
	}
	// A parent already cancelled does not stop the reads (they have their own budget).
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := explainTimeout(cancelled, a, m, timeout); !errors.As(err, &hd) {
		t.Errorf("with the parent cancelled: %v", err)
	}

	for name, c := range map[string]struct {
		node     *corev1.Node
		vmi      *kubevirtv1.VirtualMachineInstance
		listFail bool
	}{
		"VMI gone":               {host(corev1.ConditionUnknown, since), nil, false},
		"host Ready":             {host(corev1.ConditionTrue, since), stuckVMI(), false},
		"host not found":         {nil, stuckVMI(), false},
		"hosts may not be read":  {host(corev1.ConditionUnknown, since), stuckVMI(), true},
		"VMI not placed on host": {host(corev1.ConditionUnknown, since), func() *kubevirtv1.VirtualMachineInstance { v := stuckVMI(); v.Status.NodeName = ""; return v }(), false},
	} {
		a, _ := api(c.node, c.vmi, c.listFail)
		if err := explainTimeout(context.Background(), a, m, timeout); err.Error() != timeout.Error() {
			t.Errorf("%s: %v, want the timeout error unchanged", name, err)
		}
	}
}
