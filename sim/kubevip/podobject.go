package kubevip

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BuildPod is the daemon pod the DaemonSet controller makes for a node
// (bound to it) for the process the simulator runs there.
func BuildPod(ds *appsv1.DaemonSet, node string) *corev1.Pod {
	tmpl := ds.Spec.Template
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	labels["pod-template-generation"] = fmt.Sprint(ds.Generation)
	spec := *tmpl.Spec.DeepCopy()
	spec.NodeName = node
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: PodName(ds, node), Namespace: ds.Namespace, Labels: labels, Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: spec,
	}
}

// PodStatus is what the kubelet reports for the kube-vip container in
// state st: running (Ready), waiting to be restarted (CrashLoopBackOff, the
// last termination's exit code and kube-vip's last error as its message,
// as terminationMessagePolicy FallbackToLogsOnError gives it) or not yet
// started.
func PodStatus(st State, container, image, nodeIP string) corev1.PodStatus {
	since := metav1.NewTime(st.Since)
	cs := corev1.ContainerStatus{Name: container, Image: image, RestartCount: int32(st.Restarts)}
	ready := corev1.ConditionFalse
	switch st.Phase {
	case "running":
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: since}
		cs.Ready, cs.Started, ready = true, ptr.To(true), corev1.ConditionTrue
	case "exited":
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off restarting failed container %s (%s)", container, st.Reason)}
	default:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: st.Reason, Message: st.LastError}
	}
	if st.Restarts > 0 || st.Phase == "exited" {
		reason := "Error"
		if st.Reason == "exit code 0" {
			reason = "Completed"
		}
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, Message: st.LastError,
			ExitCode: exitCode(st.Reason), FinishedAt: since}
	}
	phase := corev1.PodRunning
	if st.Phase == "waiting" && st.Restarts == 0 {
		phase = corev1.PodPending
	}
	return corev1.PodStatus{
		Phase: phase, HostIP: nodeIP, PodIP: nodeIP,
		HostIPs: []corev1.HostIP{{IP: nodeIP}}, PodIPs: []corev1.PodIP{{IP: nodeIP}},
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: since},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: since},
		},
		ContainerStatuses: []corev1.ContainerStatus{cs},
	}
}

func exitCode(reason string) int32 {
	var code int32
	if _, err := fmt.Sscanf(reason, "exit code %d", &code); err != nil {
		return 1
	}
	return code
}
