package maintenance

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// quotaRefusal says why kube-apiserver's quota admission refuses the
// target pod of p's live migration, "" when every quota of the VMI's
// namespace admits it. KubeVirt renders the target pod as the VMI's
// launcher pod (sidecars and all), so it is charged what the running
// launcher pod is charged, or, unseen, what the product's model of
// KubeVirt's rendering requests. Each quota whose scopes match the pod
// must hold its used plus that charge within its hard limits (Kubernetes'
// resourcequota admission, checkQuotas); the Rancher-managed default
// quota with the room Harvester makes for the migration
// (harvester.MigrationHard). A refused target pod is not retried into a
// fit: the migration stays Pending.
func (w *world) quotaRefusal(p *placed) string {
	if w.h.Quotas == nil {
		return ""
	}
	var quotas []corev1.ResourceQuota
	for _, q := range w.h.Quotas {
		if q.Namespace == p.vmi.Namespace {
			quotas = append(quotas, q)
		}
	}
	pod := p.launcher
	if pod == nil {
		pod = harvester.LauncherPod(&p.vmi.Spec, w.arch(p.node), w.h.OverheadRatio)
		pod.Namespace = p.vmi.Namespace
	}
	charge := harvester.PodQuotaUsage(harvester.PodTotals(pod))
	var refusals []string
	for i := range quotas {
		q := &quotas[i]
		if !harvester.QuotaMatchesPod(q, pod) {
			continue
		}
		hard := harvester.MigrationHard(q, quotas, w.h.ProjectQuotas[q.Namespace], p.vmi, w.arch(p.node), w.h.OverheadRatio)
		if msg := exceeded(q.Name, hard, q.Status.Used, charge); msg != "" {
			refusals = append(refusals, msg)
		}
	}
	return strings.Join(refusals, "; ")
}

// arch is the host's architecture.
func (w *world) arch(node string) string {
	if n := w.nodes[node]; n != nil {
		return n.Status.NodeInfo.Architecture
	}
	return ""
}

// exceeded is kube-apiserver's refusal of charge by quota name with these
// hard limits and usage, in its words ("exceeded quota: NAME, requested:
// ..., used: ..., limited: ..."), naming only the exceeded resources; ""
// when it fits. Only the resources the quota limits are checked.
func exceeded(name string, hard, used, charge corev1.ResourceList) string {
	var over []corev1.ResourceName
	for n, limit := range hard {
		c, ok := charge[n]
		if !ok {
			continue
		}
		total := used[n].DeepCopy()
		total.Add(c)
		if total.Cmp(limit) > 0 {
			over = append(over, n)
		}
	}
	if len(over) == 0 {
		return ""
	}
	sort.Slice(over, func(i, j int) bool { return over[i] < over[j] })
	list := func(l corev1.ResourceList) string {
		parts := make([]string, len(over))
		for i, n := range over {
			q := l[n]
			parts[i] = fmt.Sprintf("%s=%s", n, q.String())
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s", name, list(charge), list(used), list(hard))
}
