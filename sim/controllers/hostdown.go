package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// A host that is down (`harvester-sim fault host-down`): its kubelet and
// virt-handler are gone with it. The kubelet renews no Lease, posts no
// status and confirms no pod deletion (heartbeat.go, launcher.go); the
// guests stop answering and their VMIs keep the status last reported.
// virt-controller runs elsewhere and goes on: a VMI's Ready condition
// follows its launcher pod's, and a VMI whose launcher pod is gone is
// Failed. KubeVirt's VMI finalizer (kubevirt.io/foregroundDeleteVirtualMachine)
// is released only once the VMI is final and its launcher pods are gone,
// so a VMI on a dead host cannot finish terminating before Kubernetes
// force-deletes its pod (the out-of-service taint: pod GC).

// syncHostFaults stops the kubelets of the hosts the fault ConfigMap
// lists as down and resumes the others.
func (s *sim) syncHostFaults() {
	nodes, _ := s.kubeInformers.Core().V1().Nodes().Lister().List(labels.Everything())
	f := s.faults()
	for _, n := range nodes {
		down := f.MatchName(fault.HostDown, n.Name) != ""
		if down != s.kubelets.HostDown(n.Name) {
			s.log.Info("fault host-down", "node", n.Name, "down", down)
			s.kubelets.SetHostDown(n.Name, down)
		}
	}
	s.enqueueNamespace(s.vmiQ, "", s.vmiKeys)
	s.enqueueNamespace(s.podQ, "", s.podKeys)
}

func (s *sim) podKeys(ns string) []string {
	return objectKeys(s.kubeInformers.Core().V1().Pods().Lister().Pods(ns).List(labels.Everything()))
}

// onDownHost reports whether the VMI runs on a host that is down.
func (s *sim) onDownHost(u *unstructured.Unstructured) bool {
	node, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
	return node != "" && s.kubelets.HostDown(node)
}

// addVMIFinalizer adds KubeVirt's VMI finalizer to a VMI that is not
// final, as virt-controller does before anything else.
func (s *sim) addVMIFinalizer(ctx context.Context, u *unstructured.Unstructured) error {
	if vmiFinal(u) {
		return nil
	}
	_, err := s.updateMeta(ctx, gvrVMI, u.GetNamespace(), u.GetName(), func(cur *unstructured.Unstructured) bool {
		if cur.GetUID() != u.GetUID() || cur.GetDeletionTimestamp() != nil || hasString(cur.GetFinalizers(), kubevirtv1.VirtualMachineInstanceFinalizer) {
			return false
		}
		cur.SetFinalizers(append(cur.GetFinalizers(), kubevirtv1.VirtualMachineInstanceFinalizer))
		return true
	})
	return err
}

func vmiFinal(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase == string(kubevirtv1.Succeeded) || phase == string(kubevirtv1.Failed)
}

// terminateVMI plays virt-controller (and, on a live host, virt-handler)
// for a VMI being deleted: its launcher pods are deleted; once they are
// gone (a live host's kubelet removes them at once; a dead host's never,
// until pod GC force-deletes them), the VMI is final (Succeeded after a
// shutdown by its live host's virt-handler, Failed when its pod vanished
// under a dead host) and loses its finalizer.
func (s *sim) terminateVMI(ctx context.Context, u *unstructured.Unstructured) error {
	if err := s.deleteLaunchers(ctx, u.GetNamespace(), u.GetUID()); err != nil {
		return err
	}
	if len(s.launcherPods(u.GetNamespace(), u.GetUID())) > 0 {
		return nil // a pod event brings the VMI back
	}
	phase := kubevirtv1.Succeeded
	if s.onDownHost(u) {
		phase = kubevirtv1.Failed
	}
	return s.releaseVMI(ctx, u, phase)
}

// releaseVMI makes a VMI whose launcher pods are gone final (phase, when
// it is not final yet) and removes KubeVirt's finalizer (one update: the
// VMI has no status subresource).
func (s *sim) releaseVMI(ctx context.Context, u *unstructured.Unstructured, phase kubevirtv1.VirtualMachineInstancePhase) error {
	_, err := s.updateMeta(ctx, gvrVMI, u.GetNamespace(), u.GetName(), func(cur *unstructured.Unstructured) bool {
		if cur.GetUID() != u.GetUID() {
			return false
		}
		changed := false
		if !vmiFinal(cur) {
			if err := unstructured.SetNestedField(cur.Object, string(phase), "status", "phase"); err == nil {
				changed = true
			}
		}
		if hasString(cur.GetFinalizers(), kubevirtv1.VirtualMachineInstanceFinalizer) {
			cur.SetFinalizers(without(cur.GetFinalizers(), kubevirtv1.VirtualMachineInstanceFinalizer))
			changed = true
		}
		return changed
	})
	if err != nil {
		return fmt.Errorf("release vmi %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// vmiOnDownHost is virt-controller's part for a VMI on a down host (its
// virt-handler does nothing): the guest is off the network, the VMI's
// Ready condition follows its launcher pod's (the node lifecycle
// controller marks the pods of an unreachable host not Ready), and a VMI
// whose launcher pod is gone (force-deleted once the host is out of
// service) is Failed and released; its VM restarts it by its run strategy.
func (s *sim) vmiOnDownHost(ctx context.Context, key string, u *unstructured.Unstructured) error {
	s.guestOffNetwork(key)
	// Its pods on that host: a migration's target pod elsewhere does not
	// keep the guest alive.
	node, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
	var pods []*corev1.Pod
	for _, p := range s.launcherPods(u.GetNamespace(), u.GetUID()) {
		if p.Spec.NodeName == node {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return s.releaseVMI(ctx, u, kubevirtv1.Failed)
	}
	var vmi kubevirtv1.VirtualMachineInstance
	if err := decodeStrict(u, &vmi); err != nil || vmiFinal(u) {
		return nil //nolint:nilerr // reported by the normal reconcile once the host is back
	}
	st := vmi.Status.DeepCopy()
	ready := kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse,
		Reason: kubevirtv1.PodTerminatingReason, Message: "virt-launcher pod is terminating"}
	if pod := currentPod(pods, node); pod.DeletionTimestamp == nil {
		c := podCondition(pod, corev1.PodReady)
		if c == nil {
			return nil
		}
		ready.Status, ready.Reason, ready.Message = c.Status, c.Reason, c.Message
	}
	now := metav1.Now()
	if !setVMICondition(st, ready, now) {
		return nil
	}
	_, err := s.writeStatus(ctx, gvrVMI, u, vmi.Status, st)
	return err
}

// readyFromPod is virt-controller's setActivePods and
// syncReadyConditionFromPod for a running VMI: its Ready condition is
// that of its current launcher pod (the most recent on its node).
func (s *sim) readyFromPod(c *vmiContext) {
	pods := s.launcherPods(c.u.GetNamespace(), c.u.GetUID())
	if len(pods) > 0 {
		c.st.ActivePods = activePods(pods)
	}
	pod := currentPod(pods, c.st.NodeName)
	if pod == nil {
		return
	}
	if pc := podCondition(pod, corev1.PodReady); pc != nil {
		setVMICondition(c.st, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceReady,
			Status: pc.Status, Reason: pc.Reason, Message: pc.Message}, c.now)
	}
}

// repostPodReady is a host's kubelet back after the host was down: the
// node lifecycle controller marked its running pods not Ready, and
// kubelet reports them Ready again.
func (s *sim) repostPodReady(ctx context.Context, pod *corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning {
		return nil
	}
	c := podCondition(pod, corev1.PodReady)
	if c == nil || c.Status == corev1.ConditionTrue {
		return nil
	}
	p := pod.DeepCopy()
	now := metav1.Now()
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(p, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	if _, err := s.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("kubelet: report pod %s/%s Ready again: %w", p.Namespace, p.Name, err)
	}
	return nil
}
