package kubevip

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Schedulable says whether the DaemonSet controller places a pod of ds on
// node: Kubernetes v1.34's predicates (pkg/controller/daemon/daemon_controller.go)
// on the pod NewPod makes, with the tolerations
// util.AddOrUpdateDaemonPodTolerations adds
// (pkg/controller/daemon/util/daemonset_util.go). The required node
// affinity (nodeSelector included) and the taint check are
// component-helpers' own, which the controller calls. When not, why says
// which rule failed.
func Schedulable(ds *appsv1.DaemonSet, node *corev1.Node) (ok bool, why string) {
	pod := &corev1.Pod{Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = node.Name
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, daemonTolerations(pod.Spec.HostNetwork)...)
	if fits, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !fits { // parse errors ignored, as the controller does
		return false, "nodeSelector or required node affinity not met"
	}
	taint, untolerated := schedulingcorev1.FindMatchingUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	})
	if untolerated {
		return false, "taint " + taint.Key + ":" + string(taint.Effect) + " not tolerated"
	}
	return true, ""
}

// daemonTolerations are AddOrUpdateDaemonPodTolerations': not-ready and
// unreachable (NoExecute), disk, memory and PID pressure and
// unschedulable (NoSchedule), and network-unavailable (NoSchedule) for a
// pod on the host network.
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	out := []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if hostNetwork {
		out = append(out, exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return out
}
