package doctor

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/daemonset"
	"github.com/harvester-kit/harvester-machine/internal/driverrights"
)

// kubeVIPSetup is what the kube-vip DaemonSet ds lacks to announce
// Service addresses on the guest g: problems (FAIL) and warnings (WARN),
// each saying what follows; seen says what is right.
type kubeVIPSetup struct {
	problems, warnings, seen []string
}

func checkKubeVIPSetup(g *clusterstate.Guest, ds *appsv1.DaemonSet) kubeVIPSetup {
	var r kubeVIPSetup
	spec := ds.Spec.Template.Spec
	if nodeNameFromPod(spec) {
		r.seen = append(r.seen, addons.KubeVIPEnvNodeName+" from "+addons.KubeVIPNodeNameField)
	} else {
		r.warnings = append(r.warnings, addons.KubeVIPEnvNodeName+" unset: kube-vip takes the hostname as its node name, and under "+
			addons.KubeVIPEnvSvcElection+" a node whose hostname differs from its node name never announces")
	}
	switch missing, err := kubeVIPRightsMissing(g, ds); {
	case err != "":
		r.warnings = append(r.warnings, "kube-vip's rights not checked: "+err)
	case len(missing) > 0:
		r.problems = append(r.problems, fmt.Sprintf("ServiceAccount %s/%s may not %s: kube-vip cannot watch Services or write their ingress",
			ds.Namespace, serviceAccount(spec), strings.Join(missing, ", ")))
	default:
		r.seen = append(r.seen, "RBAC of ServiceAccount "+serviceAccount(spec)+" complete")
	}
	r.problems = append(r.problems, kubeVIPPodErrors(g, ds)...)
	if g.Errors[clusterstate.KindNode] == "" {
		n, why := 0, ""
		for i := range g.Nodes {
			if reason := daemonset.WhyNotOn(spec, &g.Nodes[i]); reason == "" {
				n++
			} else if why == "" {
				why = g.Nodes[i].Name + ": " + reason
			}
		}
		if n == 0 && len(g.Nodes) > 0 {
			r.problems = append(r.problems, fmt.Sprintf("it can run on none of the %d nodes (%s): nothing announces", len(g.Nodes), why))
		} else {
			r.seen = append(r.seen, fmt.Sprintf("runs on %d of %d nodes", n, len(g.Nodes)))
		}
	}
	return r
}

// kubeVIPPodErrors are kube-vip's own errors as its daemon pods report
// them: a container waiting to restart (CrashLoopBackOff) and the message
// of its last termination (RBAC refused, an interface that does not exist).
func kubeVIPPodErrors(g *clusterstate.Guest, ds *appsv1.DaemonSet) []string {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || ds.Spec.Selector == nil {
		return nil
	}
	var out []string
	for _, p := range g.SystemPods {
		if p.Namespace != ds.Namespace || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			w := c.State.Waiting
			if w == nil || w.Reason != "CrashLoopBackOff" {
				continue
			}
			why := w.Message
			if t := c.LastTerminationState.Terminated; t != nil && t.Message != "" {
				why = t.Message
			}
			out = append(out, fmt.Sprintf("pod %s on %s: %s: %s", p.Name, p.Spec.NodeName, w.Reason, strings.TrimSpace(why)))
		}
	}
	return out
}

// nodeNameFromPod: the container sets vip_nodename from spec.nodeName.
func nodeNameFromPod(spec corev1.PodSpec) bool {
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if e.Name == addons.KubeVIPEnvNodeName && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
				e.ValueFrom.FieldRef.FieldPath == addons.KubeVIPNodeNameField {
				return true
			}
		}
	}
	return false
}

func serviceAccount(spec corev1.PodSpec) string {
	if spec.ServiceAccountName == "" {
		return "default"
	}
	return spec.ServiceAccountName
}

// kubeVIPRightsMissing lists what the chart's kube-vip ClusterRole grants
// that no ClusterRole bound to the DaemonSet's ServiceAccount does
// ("update services/status"), or why it could not tell.
func kubeVIPRightsMissing(g *clusterstate.Guest, ds *appsv1.DaemonSet) ([]string, string) {
	for _, k := range []string{clusterstate.KindClusterRole, clusterstate.KindClusterRoleBinding} {
		if e := g.Errors[k]; e != "" {
			return nil, e
		}
	}
	sa := serviceAccount(ds.Spec.Template.Spec)
	var granted []authv1.ResourceRule
	for _, b := range g.ClusterRoleBindings {
		if b.RoleRef.Kind != "ClusterRole" || !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == ds.Namespace
		}) {
			continue
		}
		for _, r := range g.ClusterRoles {
			if r.Name == b.RoleRef.Name {
				granted = append(granted, resourceRules(r.Rules)...)
			}
		}
	}
	var missing []string
	for _, p := range permissions(addons.KubeVIPRules()) {
		if !driverrights.RulesAllow(granted, p) {
			missing = append(missing, p.String())
		}
	}
	return missing, ""
}

func resourceRules(rules []rbacv1.PolicyRule) []authv1.ResourceRule {
	out := make([]authv1.ResourceRule, len(rules))
	for i, r := range rules {
		out[i] = authv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames}
	}
	return out
}

// permissions spells rules out, one per verb, group and resource.
func permissions(rules []rbacv1.PolicyRule) []driverrights.Permission {
	var out []driverrights.Permission
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range r.Verbs {
					out = append(out, driverrights.Permission{Verb: v, Group: g, Resource: resource, Subresource: sub, ClusterScoped: true})
				}
			}
		}
	}
	return out
}
