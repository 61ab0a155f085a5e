package harvester

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Which ResourceQuotas the API server's quota admission (Kubernetes 1.34,
// the evaluators of pkg/quota/v1/evaluator/core) applies to an object. A
// quota applies when every one of its scopes and scopeSelector expressions
// matches the object (no scope: every object); only pods and
// PersistentVolumeClaims ever match a scope, every other kind (Secrets,
// ConfigMaps, VMs, ...) is counted by unscoped quotas alone.

// quotaSelectors are a quota's scopes, each as an Exists expression, then
// its scopeSelector's expressions, as admission evaluates them.
func quotaSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	out := make([]corev1.ScopedResourceSelectorRequirement, 0, len(q.Spec.Scopes))
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// QuotaScoped says whether a quota has scopes: then it counts pods (and,
// with VolumeAttributesClass, claims) only.
func QuotaScoped(q *corev1.ResourceQuota) bool {
	return len(quotaSelectors(q)) > 0
}

// QuotaMatchesPod says whether every scope of q matches pod.
func QuotaMatchesPod(q *corev1.ResourceQuota, pod *corev1.Pod) bool {
	for _, s := range quotaSelectors(q) {
		if !podMatchesScope(s, pod) {
			return false
		}
	}
	return true
}

// QuotaMatchesClaim says whether every scope of q matches the claim: only
// VolumeAttributesClass selects claims.
func QuotaMatchesClaim(q *corev1.ResourceQuota, pvc *corev1.PersistentVolumeClaim) bool {
	for _, s := range quotaSelectors(q) {
		if s.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass || !claimMatchesScope(s, pvc) {
			return false
		}
	}
	return true
}

// podMatchesScope is one expression against a pod. The four QoS and
// deadline scopes and CrossNamespacePodAffinity take no values (validation
// allows only Exists for them); PriorityClass is a selector over the pod's
// priority class name (absent when it has none).
func podMatchesScope(s corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return podTerminating(pod)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !podTerminating(pod)
	case corev1.ResourceQuotaScopeBestEffort:
		return podBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !podBestEffort(pod)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podCrossNamespaceAffinity(pod.Spec.Affinity)
	case corev1.ResourceQuotaScopePriorityClass:
		if s.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != ""
		}
		return selectorMatches(s, pod.Spec.PriorityClassName)
	}
	return false
}

// claimMatchesScope is a VolumeAttributesClass expression against a claim's
// class (spec, status, or the one it is being modified to).
func claimMatchesScope(s corev1.ScopedResourceSelectorRequirement, pvc *corev1.PersistentVolumeClaim) bool {
	var names []string
	if n := pvc.Spec.VolumeAttributesClassName; n != nil && *n != "" {
		names = append(names, *n)
	}
	if n := pvc.Status.CurrentVolumeAttributesClassName; n != nil && *n != "" {
		names = append(names, *n)
	}
	if m := pvc.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		names = append(names, m.TargetVolumeAttributesClassName)
	}
	if s.Operator == corev1.ScopeSelectorOpExists {
		return len(names) > 0
	}
	if len(names) == 0 {
		return selectorMatches(s, "")
	}
	for _, n := range names {
		if selectorMatches(s, n) {
			return true
		}
	}
	return false
}

// selectorMatches is a label selector of the expression's operator over a
// set holding the scope name with value, or nothing when value is "". A
// malformed expression (which validation does not store) matches, as
// admission then refuses the object with an error.
func selectorMatches(s corev1.ScopedResourceSelectorRequirement, value string) bool {
	ops := map[corev1.ScopeSelectorOperator]selection.Operator{
		corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
		corev1.ScopeSelectorOpExists: selection.Exists, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	op, ok := ops[s.Operator]
	if !ok {
		return true
	}
	r, err := labels.NewRequirement(string(s.ScopeName), op, s.Values)
	if err != nil {
		return true
	}
	set := labels.Set{}
	if value != "" {
		set[string(s.ScopeName)] = value
	}
	return r.Matches(set)
}

// podTerminating: the pod has an activeDeadlineSeconds (>= 0).
func podTerminating(pod *corev1.Pod) bool {
	d := pod.Spec.ActiveDeadlineSeconds
	return d != nil && *d >= 0
}

// podBestEffort: the pod's QoS class is BestEffort, no container nor the
// pod itself requests or limits CPU or memory.
func podBestEffort(pod *corev1.Pod) bool {
	lists := []corev1.ResourceList{}
	if r := pod.Spec.Resources; r != nil {
		lists = append(lists, r.Requests, r.Limits)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		lists = append(lists, c.Resources.Requests, c.Resources.Limits)
	}
	for _, l := range lists {
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := l[n]; ok && q.Sign() > 0 {
				return false
			}
		}
	}
	return true
}

// podCrossNamespaceAffinity: some pod (anti-)affinity term, required or
// preferred, names namespaces or a namespace selector.
func podCrossNamespaceAffinity(a *corev1.Affinity) bool {
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if p := a.PodAffinity; p != nil {
		terms = append(terms, p.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range p.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if p := a.PodAntiAffinity; p != nil {
		terms = append(terms, p.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range p.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// PodTotals are a pod's total requests and limits as quota admission sums
// them (PodUsageFunc, pkg/quota/v1/evaluator/core/pods.go, calls
// component-helpers' PodRequests and PodLimits, as here): its containers
// and restartable init containers (sidecars) added up, an ordinary init
// container counted only where it asks more than that, plus the pod
// overhead.
func PodTotals(pod *corev1.Pod) (requests, limits corev1.ResourceList) {
	opts := resourcehelper.PodResourcesOptions{}
	return resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)
}

// PodQuotaUsage is what quota admission charges a pod with these total
// requests and limits: one pod; cpu, memory and ephemeral-storage requests
// both bare and as requests.<name>, their limits as limits.<name>;
// hugepages bare and as requests.; extended resources as requests. only.
// (count/pods is charged too, as an object count.)
func PodQuotaUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	one := func() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }
	out := corev1.ResourceList{corev1.ResourcePods: one(), "count/pods": one()}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := requests[n]; ok {
			out[n] = q
			out[corev1.DefaultResourceRequestsPrefix+n] = q
		}
		if q, ok := limits[n]; ok {
			out["limits."+n] = q
		}
	}
	for n, q := range requests {
		switch {
		case strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix):
			out[n] = q
			out[corev1.DefaultResourceRequestsPrefix+n] = q
		case strings.Contains(string(n), "/") && !strings.Contains(string(n), corev1.ResourceDefaultNamespacePrefix) &&
			!strings.HasPrefix(string(n), corev1.DefaultResourceRequestsPrefix):
			out[corev1.DefaultResourceRequestsPrefix+n] = q
		}
	}
	return out
}
