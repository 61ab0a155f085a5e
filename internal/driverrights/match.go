package driverrights

import (
	"slices"
	"sort"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// RulesAllow reports whether any of the rules (a SelfSubjectRulesReview's
// answer) grants p, by RBAC's matching: "*" matches every verb, group and
// resource (subresources included); "*/sub" matches that subresource of
// every resource; "resource/sub" names one subresource; a rule with
// resourceNames grants only requests for one of those names, so never a
// request without a name (list, watch, create).
func RulesAllow(rules []authv1.ResourceRule, p Permission) bool {
	for _, r := range rules {
		if matchesAll(r.Verbs, p.Verb) && matchesAll(r.APIGroups, p.Group) && resourceMatches(r.Resources, p) && nameMatches(r.ResourceNames, p.Name) {
			return true
		}
	}
	return false
}

func matchesAll(values []string, want string) bool {
	return slices.Contains(values, "*") || slices.Contains(values, want)
}

func resourceMatches(resources []string, p Permission) bool {
	want := p.Resource
	if p.Subresource != "" {
		want += "/" + p.Subresource
	}
	for _, r := range resources {
		if r == "*" || r == want || (p.Subresource != "" && r == "*/"+p.Subresource) {
			return true
		}
	}
	return false
}

func nameMatches(names []string, want string) bool {
	return len(names) == 0 || (want != "" && slices.Contains(names, want))
}

// everyUser are the rights Kubernetes grants every authenticated user
// (ClusterRole system:basic-user): asking who one is and what one may do.
var everyUser = []Permission{
	{Verb: "create", Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	{Verb: "create", Group: groupAuthz, Resource: "selfsubjectaccessreviews"},
	{Verb: "create", Group: groupAuthz, Resource: "selfsubjectrulesreviews"},
}

// Inherited are the rights every authenticated user holds on Harvester:
// Kubernetes' (everyUser), Harvester's harvester-authenticated role and
// KubeVirt's two roles for every user. No credential can be made without
// them, so they are never its excess.
func Inherited() []Permission {
	out := slices.Clone(everyUser)
	out = append(out, FromRules(harvester.AuthenticatedRules())...)
	return append(out, FromRules(harvester.KubeVirtAuthenticatedRules())...)
}

// FromRules lists the permissions RBAC rules grant, one per verb,
// resource and name.
func FromRules(rules []rbacv1.PolicyRule) []Permission {
	var out []Permission
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, n := range namesOf(r.ResourceNames) {
						out = append(out, Permission{Verb: v, Group: g, Resource: resource, Subresource: sub, Name: n})
					}
				}
			}
		}
	}
	return out
}

// Excess lists what rules (a SelfSubjectRulesReview's answer) grant beyond
// needed and what every authenticated user may do (Inherited), one entry per
// verb and resource ("delete nodes", "* *.*"), sorted. Empty: the
// credential is no broader than needed.
func Excess(rules []authv1.ResourceRule, needed []Permission) []string {
	needed = append(slices.Clone(needed), Inherited()...)
	seen := map[string]bool{}
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range namesOf(r.ResourceNames) {
						if !covered(needed, v, g, res, n) {
							seen[describe(v, g, res, n)] = true
						}
					}
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func namesOf(names []string) []string {
	if len(names) == 0 {
		return []string{""}
	}
	return names
}

// covered: a rule item (verb, group, resource[/sub], name) grants nothing
// beyond one needed permission. A wildcard is never covered.
func covered(needed []Permission, verb, group, resource, name string) bool {
	if verb == "*" || group == "*" || strings.Contains(resource, "*") {
		return false
	}
	for _, p := range needed {
		want := p.Resource
		if p.Subresource != "" {
			want += "/" + p.Subresource
		}
		if p.Verb == verb && p.Group == group && want == resource && (p.Name == "" || p.Name == name) {
			return true
		}
	}
	return false
}

func describe(verb, group, resource, name string) string {
	p := Permission{Verb: verb, Group: group, Resource: resource, Name: name}
	return p.String()
}

// ClusterRBACRights lists what rules allow on ClusterRoleBindings (any
// verb but GrantEdit's get and patch of bindings that grantBinding accepts
// by name) and ClusterRoles (any verb but bind by name): rights the driver
// never holds. With them a credential can delete any ClusterRoleBinding
// (a patch of its ownerReferences alone passes RBAC's escalation check;
// the garbage collector does the rest) or grant a role to everyone.
func ClusterRBACRights(rules []authv1.ResourceRule, grantBinding func(name string) bool) []string {
	seen := map[string]bool{}
	for _, r := range rules {
		if !matchesAll(r.APIGroups, groupRBAC) {
			continue
		}
		for _, v := range r.Verbs {
			for _, res := range []string{"clusterrolebindings", "clusterroles"} {
				if !slices.Contains(r.Resources, "*") && !slices.Contains(r.Resources, res) {
					continue
				}
				if res == "clusterroles" && v == "bind" && len(r.ResourceNames) > 0 {
					continue
				}
				if res == "clusterrolebindings" && (v == "get" || v == "patch") && len(r.ResourceNames) > 0 && !slices.Contains(r.Resources, "*") &&
					!slices.ContainsFunc(r.ResourceNames, func(n string) bool { return !grantBinding(n) }) {
					continue
				}
				seen[describe(v, groupRBAC, res, "")] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
