package sim_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestStoppedGuestShutsDownBeforeItsPodGoes: stopping a VM has
// virt-controller delete the VMI and then its virt-launcher Pod. As on a
// real host, virt-launcher answers kubelet's SIGTERM by shutting the guest
// down, so virt-handler reports the VMI Succeeded and the Pod ends
// (Succeeded) before kubelet removes it. A Pod removed at once would let
// virt-controller fail the VMI ("pod does not exist") first.
func TestStoppedGuestShutsDownBeforeItsPodGoes(t *testing.T) {
	ctx := testContext(t)
	const name = "shutdown-on-stop"
	vm := limitsVM(name, "1", "1Gi")
	always := kubevirtv1.RunStrategyAlways
	vm.Spec.RunStrategy = &always
	createVM(t, ctx, vm)
	var vmi *kubevirtv1.VirtualMachineInstance
	if err := watchVMI(ctx, name, func(v *kubevirtv1.VirtualMachineInstance) bool {
		vmi = v
		return v.Status.Phase == kubevirtv1.Running
	}); err != nil {
		t.Fatalf("VMI %s not Running: %v", name, err)
	}
	pods, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: kubevirtv1.CreatedByLabel + "=" + string(vmi.UID)})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("launcher pods of VMI %s: %v %d, want one", vmi.UID, err, len(pods.Items))
	}
	vmiWatch, err := virt.KubevirtV1().VirtualMachineInstances("default").Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: vmi.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer vmiWatch.Stop()
	podWatch, err := kube.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{
		LabelSelector: kubevirtv1.CreatedByLabel + "=" + string(vmi.UID), ResourceVersion: pods.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer podWatch.Stop()

	halted := fmt.Sprintf(`{"spec":{"runStrategy":%q}}`, kubevirtv1.RunStrategyHalted)
	if _, err := virt.KubevirtV1().VirtualMachines("default").Patch(ctx, name, types.MergePatchType, []byte(halted), metav1.PatchOptions{}); err != nil {
		t.Fatalf("halt VM %s: %v", name, err)
	}
	var phases []kubevirtv1.VirtualMachineInstancePhase
	var lastPod *corev1.Pod
	vmiGone, podGone := false, false
	for !vmiGone || !podGone {
		select {
		case <-ctx.Done():
			t.Fatalf("VMI gone %v, pod gone %v; VMI phases seen %v: %v", vmiGone, podGone, phases, ctx.Err())
		case ev := <-vmiWatch.ResultChan():
			v, ok := ev.Object.(*kubevirtv1.VirtualMachineInstance)
			if !ok {
				t.Fatalf("VMI watch: %v", ev.Object)
			}
			if n := len(phases); n == 0 || phases[n-1] != v.Status.Phase {
				phases = append(phases, v.Status.Phase)
			}
			vmiGone = ev.Type == watch.Deleted
		case ev := <-podWatch.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				t.Fatalf("pod watch: %v", ev.Object)
			}
			lastPod, podGone = p, ev.Type == watch.Deleted
		}
	}
	for _, p := range phases {
		if p == kubevirtv1.Failed {
			t.Errorf("VMI phases %v: the stopped guest's VMI failed", phases)
		}
	}
	if phases[len(phases)-1] != kubevirtv1.Succeeded {
		t.Errorf("VMI phases %v, want Succeeded last", phases)
	}
	if lastPod.Status.Phase != corev1.PodSucceeded || lastPod.DeletionTimestamp == nil {
		t.Errorf("launcher pod %s removed in phase %s (deletion %v), want Succeeded after the delete", lastPod.Name, lastPod.Status.Phase, lastPod.DeletionTimestamp)
	}
}
