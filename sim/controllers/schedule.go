package controllers

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// placedVMI is a VMI that already occupies a host, as the scheduler sees it.
type placedVMI struct {
	Namespace string
	Name      string
	Labels    map[string]string
	Node      string
	// RequiredAntiAffinity of the placed VMI also keeps newcomers away.
	RequiredAntiAffinity []corev1.PodAffinityTerm
	// Devices are the device-plugin resources (vGPU profiles) it holds.
	Devices map[string]int64
}

// scheduleRequest is what the scheduler needs from the VMI being placed.
type scheduleRequest struct {
	Namespace    string
	Labels       map[string]string
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	// Devices are the device-plugin resources (vGPU profiles by deviceName)
	// the VMI's launcher pod requests: one per GPU.
	Devices map[string]int64
}

// scheduleResult is the decision: a host, or a message saying why none fits.
type scheduleResult struct {
	Node    string
	Message string
}

// Reasons a host is filtered out, worded like kube-scheduler.
const (
	reasonUnschedulable   = "node(s) were unschedulable"
	reasonNodeAffinity    = "node(s) didn't match Pod's node affinity/selector"
	reasonAntiAffinity    = "node(s) didn't match pod anti-affinity rules"
	reasonAffinity        = "node(s) didn't match pod affinity rules"
	reasonExistingAntiAff = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// schedule picks the host for a VMI: filters by spec.unschedulable,
// nodeSelector, required node affinity and required pod (anti-)affinity,
// then scores by preferred node affinity and preferred pod (anti-)affinity,
// breaking ties by the fewest VMIs on the host and then by name.
func schedule(req scheduleRequest, hosts []corev1.Node, placed []placedVMI) scheduleResult {
	if len(hosts) == 0 {
		return scheduleResult{Message: "0/0 nodes are available: no hosts exist"}
	}
	hostLabels := map[string]map[string]string{}
	for _, h := range hosts {
		hostLabels[h.Name] = h.Labels
	}
	failures := map[string]int{}
	type candidate struct {
		name  string
		score int64
		load  int
	}
	var feasible []candidate
	for _, h := range hosts {
		if reason := filterHost(req, h, hostLabels, placed); reason != "" {
			failures[reason]++
			continue
		}
		feasible = append(feasible, candidate{
			name:  h.Name,
			score: scoreHost(req, h, hostLabels, placed),
			load:  vmisOn(h.Name, placed),
		})
	}
	if len(feasible) == 0 {
		return scheduleResult{Message: unschedulableMessage(len(hosts), failures)}
	}
	sort.Slice(feasible, func(i, j int) bool {
		a, b := feasible[i], feasible[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.load != b.load {
			return a.load < b.load
		}
		return a.name < b.name
	})
	return scheduleResult{Node: feasible[0].name}
}

// insufficientDevice is a device-plugin resource the host lacks room for
// (its allocatable count less what placed VMIs hold), or "".
func insufficientDevice(req scheduleRequest, h corev1.Node, placed []placedVMI) string {
	names := make([]string, 0, len(req.Devices))
	for d := range req.Devices {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		alloc := h.Status.Allocatable[corev1.ResourceName(d)]
		free := alloc.Value()
		for _, p := range placed {
			if p.Node == h.Name {
				free -= p.Devices[d]
			}
		}
		if free < req.Devices[d] {
			return d
		}
	}
	return ""
}

// gpuDevices counts a VMI spec's GPUs by deviceName.
func gpuDevices(gpus []kubevirtv1.GPU) map[string]int64 {
	if len(gpus) == 0 {
		return nil
	}
	out := map[string]int64{}
	for _, g := range gpus {
		out[g.DeviceName]++
	}
	return out
}

func unschedulableMessage(total int, failures map[string]int) string {
	reasons := make([]string, 0, len(failures))
	for r, n := range failures {
		reasons = append(reasons, strconv.Itoa(n)+" "+r)
	}
	sort.Strings(reasons)
	return fmt.Sprintf("0/%d nodes are available: %s.", total, strings.Join(reasons, ", "))
}

func vmisOn(node string, placed []placedVMI) int {
	n := 0
	for _, p := range placed {
		if p.Node == node {
			n++
		}
	}
	return n
}

// filterHost returns why the host cannot take the VMI, or "".
func filterHost(req scheduleRequest, h corev1.Node, hostLabels map[string]map[string]string, placed []placedVMI) string {
	if h.Spec.Unschedulable {
		return reasonUnschedulable
	}
	if dev := insufficientDevice(req, h, placed); dev != "" {
		return "Insufficient " + dev
	}
	for k, v := range req.NodeSelector {
		if got, ok := h.Labels[k]; !ok || got != v {
			return reasonNodeAffinity
		}
	}
	aff := req.Affinity
	if aff != nil && aff.NodeAffinity != nil && aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if !nodeMatchesSelector(h, aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution) {
			return reasonNodeAffinity
		}
	}
	if aff != nil && aff.PodAntiAffinity != nil {
		for _, term := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if countInDomain(req.Namespace, term, h, hostLabels, placed) > 0 {
				return reasonAntiAffinity
			}
		}
	}
	if aff != nil && aff.PodAffinity != nil {
		for _, term := range aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if !requiredAffinitySatisfied(req, term, h, hostLabels, placed) {
				return reasonAffinity
			}
		}
	}
	// Symmetry: a placed VMI's required anti-affinity matching the newcomer.
	for _, p := range placed {
		for _, term := range p.RequiredAntiAffinity {
			if !termSelects(term, p.Namespace, req.Namespace, req.Labels) {
				continue
			}
			if sameDomain(term.TopologyKey, h.Labels, hostLabels[p.Node]) {
				return reasonExistingAntiAff
			}
		}
	}
	return ""
}

func requiredAffinitySatisfied(req scheduleRequest, term corev1.PodAffinityTerm, h corev1.Node,
	hostLabels map[string]map[string]string, placed []placedVMI) bool {
	if countInDomain(req.Namespace, term, h, hostLabels, placed) > 0 {
		return true
	}
	// Like kube-scheduler: the first VMI of a group that matches its own
	// term may go anywhere the topology key exists, if no VMI matches yet.
	for _, p := range placed {
		if termSelects(term, req.Namespace, p.Namespace, p.Labels) {
			return false
		}
	}
	_, hasKey := h.Labels[term.TopologyKey]
	return hasKey && termSelects(term, req.Namespace, req.Namespace, req.Labels)
}

// scoreHost sums preferred node affinity weights, preferred pod affinity
// weight*count and minus preferred anti-affinity weight*count.
func scoreHost(req scheduleRequest, h corev1.Node, hostLabels map[string]map[string]string, placed []placedVMI) int64 {
	aff := req.Affinity
	if aff == nil {
		return 0
	}
	var score int64
	if aff.NodeAffinity != nil {
		for _, pref := range aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if nodeMatchesTerm(h, pref.Preference) {
				score += int64(pref.Weight)
			}
		}
	}
	if aff.PodAffinity != nil {
		for _, w := range aff.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			score += int64(w.Weight) * int64(countInDomain(req.Namespace, w.PodAffinityTerm, h, hostLabels, placed))
		}
	}
	if aff.PodAntiAffinity != nil {
		for _, w := range aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			score -= int64(w.Weight) * int64(countInDomain(req.Namespace, w.PodAffinityTerm, h, hostLabels, placed))
		}
	}
	return score
}

// countInDomain counts placed VMIs selected by the term whose host shares
// the candidate host's value of the term's topology key.
func countInDomain(ownNamespace string, term corev1.PodAffinityTerm, h corev1.Node,
	hostLabels map[string]map[string]string, placed []placedVMI) int {
	n := 0
	for _, p := range placed {
		if termSelects(term, ownNamespace, p.Namespace, p.Labels) && sameDomain(term.TopologyKey, h.Labels, hostLabels[p.Node]) {
			n++
		}
	}
	return n
}

// sameDomain: both hosts carry the topology key with the same value.
func sameDomain(key string, a, b map[string]string) bool {
	va, okA := a[key]
	vb, okB := b[key]
	return okA && okB && va == vb
}

// termSelects reports whether a pod affinity term written in ownNamespace
// selects a VMI in namespace ns with the given labels. A nil namespace
// selector with no namespaces means ownNamespace; an empty selector means
// every namespace.
func termSelects(term corev1.PodAffinityTerm, ownNamespace, ns string, lbls map[string]string) bool {
	inNS := false
	switch {
	case term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels) == 0 &&
		len(term.NamespaceSelector.MatchExpressions) == 0:
		inNS = true
	case len(term.Namespaces) > 0:
		for _, n := range term.Namespaces {
			inNS = inNS || n == ns
		}
	default:
		inNS = ns == ownNamespace
	}
	if !inNS {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(lbls))
}

// nodeMatchesSelector: the terms are ORed.
func nodeMatchesSelector(h corev1.Node, sel *corev1.NodeSelector) bool {
	for _, term := range sel.NodeSelectorTerms {
		if nodeMatchesTerm(h, term) {
			return true
		}
	}
	return false
}

// nodeMatchesTerm: the requirements of one term are ANDed; an empty term
// matches nothing, as in Kubernetes.
func nodeMatchesTerm(h corev1.Node, term corev1.NodeSelectorTerm) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		v, ok := h.Labels[r.Key]
		if !requirementMatches(r, v, ok) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" {
			return false
		}
		if r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn {
			return false
		}
		if !requirementMatches(r, h.Name, true) {
			return false
		}
	}
	return true
}

func requirementMatches(r corev1.NodeSelectorRequirement, value string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}
