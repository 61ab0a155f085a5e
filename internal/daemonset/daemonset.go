// Package daemonset holds where the DaemonSet controller and the scheduler
// let a daemon pod run: doctor judges kube-vip's nodes with it and
// maintenance-check a launcher pod's hosts (the simulator places kube-vip
// by its own reading, sim/kubevip).
package daemonset

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Tolerations are the tolerations the DaemonSet controller adds to every
// pod it makes (network-unavailable for hostNetwork pods).
var Tolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// WhyNotOn says why a DaemonSet pod of spec cannot run on node (its
// nodeSelector, required node affinity, or a NoSchedule/NoExecute taint
// neither it nor the DaemonSet controller tolerates); "" when it can.
func WhyNotOn(spec corev1.PodSpec, node *corev1.Node) string {
	return WhyPodNotOn(spec, node, Tolerations)
}

// WhyPodNotOn says why the scheduler keeps a pod of spec off node: its
// nodeSelector, its required node affinity, or a NoSchedule/NoExecute taint
// that neither its tolerations nor added (the ones its controller or an
// admission plugin gives it) tolerate; "" when it may go there. A cordon
// is judged by its taint node.kubernetes.io/unschedulable only.
func WhyPodNotOn(spec corev1.PodSpec, node *corev1.Node, added []corev1.Toleration) string {
	if why := WhyNotSelected(spec, node); why != "" {
		return why
	}
	tolerations := append(slices.Clone(spec.Tolerations), added...)
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(&t) }) {
			return "taint " + t.Key + ":" + string(t.Effect) + " not tolerated"
		}
	}
	return ""
}

// WhyNotSelected says which of spec's nodeSelector or required node
// affinity node's labels fail; "" when both hold.
func WhyNotSelected(spec corev1.PodSpec, node *corev1.Node) string {
	for k, v := range spec.NodeSelector {
		if node.Labels[k] != v {
			return "nodeSelector " + k + "=" + v
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		// The scheduler's and the DaemonSet controller's own matching
		// (component-helpers nodeaffinity): Gt and Lt, matchFields, and
		// terms that do not parse skipped.
		if ok, _ := nodeaffinity.NewLazyErrorNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution).Match(node); !ok {
			return "no label its required node affinity asks for"
		}
	}
	return ""
}
