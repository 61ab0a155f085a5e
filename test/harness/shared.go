package harness

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/tunables"
)

// state is what a package on a shared simulator must leave as it found
// it, for the packages after it: the VMs, each host's state, the faults
// and the admission policies.
type state struct {
	vms      []string          // namespace/name
	hosts    map[string]string // host -> Ready, cordon, taints, maintenance
	faults   map[string]string // the fault ConfigMap's patterns
	policies []string          // ValidatingAdmissionPolicies
}

// snapshot reads the state.
func snapshot(ctx context.Context, env *Env) (state, error) {
	st := state{hosts: map[string]string{}, faults: map[string]string{}}
	vms, err := env.Virt.KubevirtV1().VirtualMachines(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, fmt.Errorf("read the shared simulator's state: %w", err)
	}
	for _, vm := range vms.Items {
		st.vms = append(st.vms, vm.Namespace+"/"+vm.Name)
	}
	slices.Sort(st.vms)
	nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, fmt.Errorf("read the shared simulator's state: %w", err)
	}
	for _, n := range nodes.Items {
		st.hosts[n.Name] = hostState(&n)
	}
	cm, err := env.Kube.CoreV1().ConfigMaps(fault.Namespace).Get(ctx, fault.ConfigMap, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return st, fmt.Errorf("read the shared simulator's state: %w", err)
	}
	if cm != nil {
		for k, v := range cm.Data {
			if strings.TrimSpace(v) != "" {
				st.faults[k] = v
			}
		}
	}
	policies, err := env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil {
		return st, fmt.Errorf("read the shared simulator's state: %w", err)
	}
	for _, p := range policies.Items {
		st.policies = append(st.policies, p.Name)
	}
	slices.Sort(st.policies)
	return st, nil
}

// hostState sums up what a package may change of a host: Ready, the
// cordon, the taints and Harvester's maintenance status.
func hostState(n *corev1.Node) string {
	ready := "Ready=?"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = "Ready=" + string(c.Status)
		}
	}
	var taints []string
	for _, t := range n.Spec.Taints {
		taints = append(taints, t.Key+":"+string(t.Effect))
	}
	slices.Sort(taints)
	return fmt.Sprintf("%s unschedulable=%t taints=%v maintain-status=%q", ready, n.Spec.Unschedulable, taints,
		n.Annotations[harvester.AnnMaintainStatus])
}

// diff says how after differs from before, "" when it does not.
func (before state) diff(after state) string {
	var out []string
	if left := without(after.vms, before.vms); len(left) > 0 {
		out = append(out, "VMs left: "+strings.Join(left, ", "))
	}
	for _, h := range slices.Sorted(maps.Keys(before.hosts)) {
		if after.hosts[h] != before.hosts[h] {
			out = append(out, fmt.Sprintf("host %s: %s, was %s", h, after.hosts[h], before.hosts[h]))
		}
	}
	if !maps.Equal(after.faults, before.faults) {
		out = append(out, fmt.Sprintf("faults %v, were %v", after.faults, before.faults))
	}
	if left := without(after.policies, before.policies); len(left) > 0 {
		out = append(out, "admission policies left: "+strings.Join(left, ", "))
	}
	return strings.Join(out, "; ")
}

// without is a's elements not in b.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// tune sets the package's tunables on the shared simulator.
func tune(ctx context.Context, env *Env, values map[string]string) error {
	if len(values) == 0 {
		return nil
	}
	if err := tunables.Set(ctx, env.Kube, values); err != nil {
		return fmt.Errorf("tune the shared simulator for the package: %w", err)
	}
	return nil
}

// leftWait bounds how long a package's last deletions and a host's last
// changes may take to settle before what is left counts.
const leftWait = 2 * time.Minute

// leftBehind gives the package's tunables their start values back, then
// waits until the shared simulator is as the package found it, and says
// what is not.
func leftBehind(env *Env, before state, tuned map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), leftWait+time.Minute)
	defer cancel()
	if len(tuned) > 0 {
		if err := tunables.Reset(ctx, env.Kube, tuned); err != nil {
			return fmt.Errorf("give the tunables their start values: %w", err)
		}
	}
	var last string
	err := kwait.PollUntilContextTimeout(ctx, time.Second, leftWait, true, func(ctx context.Context) (bool, error) {
		after, err := snapshot(ctx, env)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = before.diff(after)
		return last == "", nil
	})
	if err != nil {
		return fmt.Errorf("after %s: %s", leftWait, last)
	}
	return nil
}
