package harvester

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func scoped(scopes []corev1.ResourceQuotaScope, exprs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: scopes}}
	if len(exprs) > 0 {
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: exprs}
	}
	return q
}

func expr(scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
	return corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: op, Values: values}
}

// TestQuotaMatchesPod: each scope and selector operator, against a pod as
// Kubernetes 1.34's pod evaluator (podMatchesScopeFunc) judges it.
func TestQuotaMatchesPod(t *testing.T) {
	deadline := int64(60)
	withResources := corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	zeroResources := corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}}}
	gpuOnly := corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}
	pod := func(mod func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{withResources}}}
		if mod != nil {
			mod(&p.Spec)
		}
		return p
	}
	plain := pod(nil)
	terminating := pod(func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = &deadline })
	bestEffort := pod(func(s *corev1.PodSpec) { s.Containers = []corev1.Container{zeroResources, gpuOnly} })
	initOnly := pod(func(s *corev1.PodSpec) {
		s.Containers, s.InitContainers = []corev1.Container{{}}, []corev1.Container{withResources}
	})
	podLevel := pod(func(s *corev1.PodSpec) {
		s.Containers = []corev1.Container{{}}
		s.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	})
	gold := pod(func(s *corev1.PodSpec) { s.PriorityClassName = "gold" })
	term := func(ns []string, sel *metav1.LabelSelector) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, Namespaces: ns, NamespaceSelector: sel}
	}
	sameNS := pod(func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nil, nil)}}}
	})
	named := pod(func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term([]string{"other"}, nil)}}}
	})
	selected := pod(func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 1, PodAffinityTerm: term(nil, &metav1.LabelSelector{})}}}}
	})
	preferredNamed := pod(func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 1, PodAffinityTerm: term([]string{"x"}, nil)}}}}
	})
	nodeOnly := pod(func(s *corev1.PodSpec) { s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}} })
	pc := corev1.ResourceQuotaScopePriorityClass
	cases := []struct {
		name  string
		quota *corev1.ResourceQuota
		pod   *corev1.Pod
		want  bool
	}{
		{"no scope", scoped(nil), plain, true},
		{"Terminating: no deadline", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}), plain, false},
		{"Terminating: deadline", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}), terminating, true},
		{"NotTerminating: no deadline", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}), plain, true},
		{"NotTerminating: deadline", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}), terminating, false},
		{"BestEffort: requests memory", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}), plain, false},
		{"BestEffort: zero cpu and a GPU only", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}), bestEffort, true},
		{"BestEffort: an init container's request", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}), initOnly, false},
		{"BestEffort: a pod-level limit", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}), podLevel, false},
		{"NotBestEffort: requests memory", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}), plain, true},
		{"NotBestEffort: best effort", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}), bestEffort, false},
		{"scopes are ANDed", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating}), plain, false},
		{"scope in the selector", scoped(nil, expr(corev1.ResourceQuotaScopeBestEffort, corev1.ScopeSelectorOpExists)), plain, false},
		{"PriorityClass scope: none", scoped([]corev1.ResourceQuotaScope{pc}), plain, false},
		{"PriorityClass scope: gold", scoped([]corev1.ResourceQuotaScope{pc}), gold, true},
		{"In: none", scoped(nil, expr(pc, corev1.ScopeSelectorOpIn, "gold")), plain, false},
		{"In: gold", scoped(nil, expr(pc, corev1.ScopeSelectorOpIn, "silver", "gold")), gold, true},
		{"In: other", scoped(nil, expr(pc, corev1.ScopeSelectorOpIn, "silver")), gold, false},
		{"NotIn: none", scoped(nil, expr(pc, corev1.ScopeSelectorOpNotIn, "gold")), plain, true},
		{"NotIn: gold", scoped(nil, expr(pc, corev1.ScopeSelectorOpNotIn, "gold")), gold, false},
		{"NotIn: other", scoped(nil, expr(pc, corev1.ScopeSelectorOpNotIn, "silver")), gold, true},
		{"Exists: none", scoped(nil, expr(pc, corev1.ScopeSelectorOpExists)), plain, false},
		{"Exists: gold", scoped(nil, expr(pc, corev1.ScopeSelectorOpExists)), gold, true},
		{"DoesNotExist: none", scoped(nil, expr(pc, corev1.ScopeSelectorOpDoesNotExist)), plain, true},
		{"DoesNotExist: gold", scoped(nil, expr(pc, corev1.ScopeSelectorOpDoesNotExist)), gold, false},
		{"selector expressions are ANDed", scoped(nil, expr(pc, corev1.ScopeSelectorOpIn, "gold"), expr(corev1.ResourceQuotaScopeTerminating, corev1.ScopeSelectorOpExists)), gold, false},
		{"scopes and selector are ANDed", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}, expr(pc, corev1.ScopeSelectorOpIn, "gold")), gold, true},
		{"CrossNamespacePodAffinity: none", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}), plain, false},
		{"CrossNamespacePodAffinity: node affinity only", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}), nodeOnly, false},
		{"CrossNamespacePodAffinity: own namespace", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}), sameNS, false},
		{"CrossNamespacePodAffinity: namespaces", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}), named, true},
		{"CrossNamespacePodAffinity: preferred namespaces", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}), preferredNamed, true},
		{"CrossNamespacePodAffinity: namespace selector", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}), selected, true},
		{"VolumeAttributesClass never selects a pod", scoped(nil, expr(corev1.ResourceQuotaScopeVolumeAttributesClass, corev1.ScopeSelectorOpDoesNotExist)), plain, false},
	}
	for _, c := range cases {
		if got := QuotaMatchesPod(c.quota, c.pod); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestQuotaMatchesClaim: only VolumeAttributesClass selects a claim, over
// the classes the claim names.
func TestQuotaMatchesClaim(t *testing.T) {
	vac := corev1.ResourceQuotaScopeVolumeAttributesClass
	fast := "fast"
	plain := &corev1.PersistentVolumeClaim{}
	withClass := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeAttributesClassName: &fast}}
	modifying := &corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{ModifyVolumeStatus: &corev1.ModifyVolumeStatus{TargetVolumeAttributesClassName: "fast"}}}
	cases := []struct {
		name  string
		quota *corev1.ResourceQuota
		pvc   *corev1.PersistentVolumeClaim
		want  bool
	}{
		{"no scope", scoped(nil), plain, true},
		{"a pod scope", scoped([]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}), plain, false},
		{"Exists: none", scoped(nil, expr(vac, corev1.ScopeSelectorOpExists)), plain, false},
		{"Exists: fast", scoped(nil, expr(vac, corev1.ScopeSelectorOpExists)), withClass, true},
		{"DoesNotExist: none", scoped(nil, expr(vac, corev1.ScopeSelectorOpDoesNotExist)), plain, true},
		{"DoesNotExist: fast", scoped(nil, expr(vac, corev1.ScopeSelectorOpDoesNotExist)), withClass, false},
		{"In: none", scoped(nil, expr(vac, corev1.ScopeSelectorOpIn, "fast")), plain, false},
		{"In: fast", scoped(nil, expr(vac, corev1.ScopeSelectorOpIn, "fast")), withClass, true},
		{"In: the target of a modification", scoped(nil, expr(vac, corev1.ScopeSelectorOpIn, "fast")), modifying, true},
		{"NotIn: none", scoped(nil, expr(vac, corev1.ScopeSelectorOpNotIn, "fast")), plain, true},
		{"NotIn: fast", scoped(nil, expr(vac, corev1.ScopeSelectorOpNotIn, "fast")), withClass, false},
	}
	for _, c := range cases {
		if got := QuotaMatchesClaim(c.quota, c.pvc); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPodQuotaUsage: what admission charges a pod (podComputeUsageHelper).
func TestPodQuotaUsage(t *testing.T) {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		"hugepages-2Mi": resource.MustParse("2Mi"), "nvidia.com/GRID_A100-1B": resource.MustParse("1")}
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi"), "nvidia.com/GRID_A100-1B": resource.MustParse("1")}
	want := map[corev1.ResourceName]string{
		"pods": "1", "count/pods": "1", "cpu": "200m", "requests.cpu": "200m", "limits.cpu": "2", "memory": "1Gi", "requests.memory": "1Gi",
		"limits.memory": "2Gi", "hugepages-2Mi": "2Mi", "requests.hugepages-2Mi": "2Mi", "requests.nvidia.com/GRID_A100-1B": "1",
	}
	got := PodQuotaUsage(requests, limits)
	if len(got) != len(want) {
		t.Errorf("usage %v, want %v", got, want)
	}
	for n, w := range want {
		if q, ok := got[n]; !ok || q.String() != w {
			t.Errorf("%s = %v, want %s", n, got[n], w)
		}
	}
}

// TestLauncherPod: the launcher carries the VMI's priority class and
// affinity, no deadline, and requests: quota
// admission sees it as NotTerminating and NotBestEffort.
func TestLauncherPod(t *testing.T) {
	spec := &kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{Resources: kubevirtv1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}}, Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: corev1.LabelHostname, Namespaces: []string{"other"}}}}}}
	spec.PriorityClassName = "gold"
	pod := LauncherPod(spec, "amd64", "")
	for _, c := range []struct {
		scope corev1.ResourceQuotaScope
		want  bool
	}{
		{corev1.ResourceQuotaScopeNotTerminating, true}, {corev1.ResourceQuotaScopeTerminating, false},
		{corev1.ResourceQuotaScopeNotBestEffort, true}, {corev1.ResourceQuotaScopeBestEffort, false},
		{corev1.ResourceQuotaScopeCrossNamespacePodAffinity, true},
	} {
		if got := QuotaMatchesPod(scoped([]corev1.ResourceQuotaScope{c.scope}), pod); got != c.want {
			t.Errorf("%s: %v, want %v", c.scope, got, c.want)
		}
	}
	if !QuotaMatchesPod(scoped(nil, expr(corev1.ResourceQuotaScopePriorityClass, corev1.ScopeSelectorOpIn, "gold")), pod) {
		t.Error("the VMI's priority class gold is not the launcher's")
	}
}
