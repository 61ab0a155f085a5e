// Stand-in for the kubelet, Kubernetes v1.34.4: the Pods on every host
// run, end and go. It follows
// https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/kubelet/kubelet.go.

package controllers

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The simulated kubelets: every Pod bound to a host that is up runs (no
// container does), a Pod being deleted goes at once (a virt-launcher Pod
// once its guest has shut down, or its grace period is over), a Pod whose
// Secret volume is missing waits, as kubelet's mount would. A host that is
// down does nothing (heartbeat.go).

// mountRetry is how soon a Pod held for a missing Secret is looked at
// again (kubelet retries a failed volume mount with a backoff that starts
// at half a second).
const mountRetry = 2 * time.Second

// reconcilePod plays the kubelet of the Pod's host.
func (s *sim) reconcilePod(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := strings.Cut(key, "/")
	pod, err := s.kubeInformers.Core().V1().Pods().Lister().Pods(ns).Get(name)
	if err != nil {
		return 0, nil //nolint:nilerr // gone: nothing to run or confirm
	}
	if pod.Spec.NodeName == "" || s.hosts.Host(pod.Spec.NodeName).Down() {
		return 0, nil
	}
	if pod.DeletionTimestamp != nil {
		if wait := s.guestShutdownWait(pod); wait > 0 {
			return wait, nil
		}
		zero := int64(0)
		err = s.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
			Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("kubelet: remove terminating pod %s: %w", key, err)
		}
		return 0, nil
	}
	switch pod.Status.Phase {
	case corev1.PodPending, "":
		return s.startPod(ctx, pod)
	case corev1.PodRunning:
		return 0, s.syncPodReady(ctx, pod)
	}
	return 0, nil
}

// guestShutdownWait is how long kubelet still gives a terminating
// virt-launcher Pod whose guest runs: virt-launcher answers the SIGTERM by
// shutting the guest down, and its container exits only when virt-handler
// has seen the guest off (shutdownVMI ends the Pod), or when the grace
// period runs out. 0: the Pod may go now (any other Pod, a launcher that
// ended, a migration's target, a guest already final).
func (s *sim) guestShutdownWait(pod *corev1.Pod) time.Duration {
	if pod.Labels[kubevirtv1.AppLabel] != "virt-launcher" || podEnded(pod) {
		return 0
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "VirtualMachineInstance" {
		return 0
	}
	u := getCached(s.vmis, pod.Namespace, ref.Name)
	if u == nil || u.GetUID() != ref.UID {
		return 0
	}
	var st kubevirtv1.VirtualMachineInstanceStatus
	looseStatus(u, &st)
	if st.Phase != kubevirtv1.Scheduled && st.Phase != kubevirtv1.Running || st.NodeName != pod.Spec.NodeName {
		return 0
	}
	if ms := st.MigrationState; ms != nil && ms.TargetPod == pod.Name && !ms.Completed {
		return 0
	}
	return time.Until(pod.DeletionTimestamp.Time)
}

// startPod runs a bound Pod, ScheduleDelay after it was created, once its
// Secret volumes exist.
func (s *sim) startPod(ctx context.Context, pod *corev1.Pod) (time.Duration, error) {
	if wait := time.Until(pod.CreationTimestamp.Add(s.tuned().ScheduleDelay)); wait > 0 {
		return wait, nil
	}
	if why := s.missingSecret(pod); why != "" {
		if s.state.once("pod/"+pod.Namespace+"/"+pod.Name, "mount", why) {
			s.log.Info("kubelet: pod cannot start", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName, "why", why)
		}
		return mountRetry, nil
	}
	podIP := podIP(pod.UID)
	if pod.Labels[kubevirtv1.AppLabel] == "virt-handler" {
		podIP = s.handlerREST.address(pod.Spec.NodeName) // where its REST server listens
	}
	p := runningPod(pod, s.hostIP(pod.Spec.NodeName), podIP, metav1.Now())
	if _, err := s.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return 200 * time.Millisecond, nil
		}
		return 0, fmt.Errorf("kubelet: start pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return 0, nil
}

// runningPod is the Pod as kubelet reports it once its containers run:
// phase Running, an address, init containers done (a restartable one, a
// native sidecar such as KubeVirt's guest-console-log, running and
// ready), every container running and ready, and Ready when its
// readiness gates are True too.
func runningPod(pod *corev1.Pod, hostIP, podIP string, now metav1.Time) *corev1.Pod {
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.HostIP = hostIP
	if hostIP != "" {
		p.Status.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	p.Status.PodIP = podIP
	p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	p.Status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			st.Started = ptrTo(true)
			st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, st)
	}
	p.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			ImageID: imageID(c.Image), Ready: true, Started: ptrTo(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady} {
		setPodCondition(p, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	setPodCondition(p, readyCondition(p, now))
	return p
}

// readyCondition is kubelet's Ready for a running Pod: its containers are
// ready (a host back from down reports them ready again) and every
// readiness gate's condition is True (KubeVirt's launcher has
// kubevirt.io/virtual-machine-unpaused, set by virt-controller).
func readyCondition(p *corev1.Pod, now metav1.Time) corev1.PodCondition {
	var missing []string
	for _, g := range p.Spec.ReadinessGates {
		if c := podCondition(p, g.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
			missing = append(missing, string(g.ConditionType))
		}
	}
	if len(missing) > 0 {
		return corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady",
			Message: "corresponding condition of pod readiness gate \"" + strings.Join(missing, "\", \"") + "\" does not exist.", LastTransitionTime: now}
	}
	return corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}
}

// syncPodReady reports a running Pod's Ready and ContainersReady again
// when they differ from what kubelet computes: a host back from down
// (the node lifecycle controller marked them not Ready), or a readiness
// gate that changed.
func (s *sim) syncPodReady(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now()
	want := readyCondition(pod, now)
	cr := podCondition(pod, corev1.ContainersReady)
	if c := podCondition(pod, corev1.PodReady); c != nil && c.Status == want.Status && c.Reason == want.Reason &&
		cr != nil && cr.Status == corev1.ConditionTrue {
		return nil
	}
	p := pod.DeepCopy()
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = true
	}
	setPodCondition(p, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
	setPodCondition(p, want)
	_, err := s.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubelet: report pod %s/%s Ready: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// endPod plays kubelet for a Pod whose containers exited: phase Succeeded
// or Failed (a terminating one too: kubelet reports the exit, then
// removes it). A Pod not bound or already ended is left as it is.
func (s *sim) endPod(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase) error {
	if pod.Spec.NodeName == "" || podEnded(pod) {
		return nil
	}
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = phase
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(p, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now})
	}
	exit, reason := int32(0), "Completed"
	if phase == corev1.PodFailed {
		exit, reason = 1, "Error"
	}
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		cs.Ready, cs.Started = false, ptrTo(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason, FinishedAt: now}}
	}
	for i := range p.Status.InitContainerStatuses {
		cs := &p.Status.InitContainerStatuses[i]
		if cs.State.Running != nil {
			cs.Ready, cs.Started = false, ptrTo(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: now}}
		}
	}
	if _, err := s.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("kubelet: end pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// missingSecret is kubelet's mount error for the Pod's first Secret
// volume (not optional) that does not exist, "" when all do.
func (s *sim) missingSecret(pod *corev1.Pod) string {
	secrets := s.kubeInformers.Core().V1().Secrets().Lister().Secrets(pod.Namespace)
	for _, v := range pod.Spec.Volumes {
		sv := v.Secret
		if sv == nil || (sv.Optional != nil && *sv.Optional) {
			continue
		}
		if _, err := secrets.Get(sv.SecretName); err != nil {
			return fmt.Sprintf("MountVolume.SetUp failed for volume %q : secret %q not found", v.Name, sv.SecretName)
		}
	}
	return ""
}

// hostIP is the host's InternalIP address ("" when it has none).
func (s *sim) hostIP(node string) string {
	n, err := s.nodes.Get(node)
	if err != nil {
		return ""
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// podIP is a Pod's address in Harvester's cluster CIDR 10.52.0.0/16,
// from a hash of its UID.
func podIP(uid types.UID) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	n := h.Sum32()%(256*254) + 256
	return fmt.Sprintf("10.52.%d.%d", n/256, n%256)
}

// launcherPods are the VMI's virt-launcher Pods (label kubevirt.io/created-by).
func (s *sim) launcherPods(ns string, uid types.UID) []*corev1.Pod {
	pods, _ := s.kubeInformers.Core().V1().Pods().Lister().Pods(ns).List(labels.SelectorFromSet(labels.Set{
		kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: string(uid)}))
	return pods
}

// podCondition returns the pod's condition of that type, or nil.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// setPodCondition replaces (or adds) a condition, keeping the old one
// when only its time would change.
func setPodCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			old := p.Status.Conditions[i]
			if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
				return
			}
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func ptrTo[T any](v T) *T { return &v }
