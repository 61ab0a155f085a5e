package driverrights

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
)

// PolicyRules turns permissions into RBAC rules: those of a machine
// namespace (for a Role there) and the cluster-scoped ones (for a
// ClusterRole). Permissions on one group, resource and name share one
// rule; the order follows perms.
func PolicyRules(perms []Permission) (namespaced, cluster []rbacv1.PolicyRule) {
	type key struct {
		group, resource, name string
		cluster               bool
	}
	index := map[key]int{}
	var keys []key
	var rules []rbacv1.PolicyRule
	for _, p := range perms {
		resource := p.Resource
		if p.Subresource != "" {
			resource += "/" + p.Subresource
		}
		k := key{p.Group, resource, p.Name, p.ClusterScoped}
		i, ok := index[k]
		if !ok {
			i = len(rules)
			index[k] = i
			keys = append(keys, k)
			r := rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{resource}}
			if p.Name != "" {
				r.ResourceNames = []string{p.Name}
			}
			rules = append(rules, r)
		}
		if !slices.Contains(rules[i].Verbs, p.Verb) {
			rules[i].Verbs = append(rules[i].Verbs, p.Verb)
		}
	}
	for i, r := range rules {
		if keys[i].cluster {
			cluster = append(cluster, r)
		} else {
			namespaced = append(namespaced, r)
		}
	}
	return namespaced, cluster
}
