package driver

import (
	"context"
	"fmt"
	"slices"

	authv1 "k8s.io/api/authorization/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
)

// permission is one verb on one resource the driver uses.
type permission struct {
	verb, group, resource string
	subresource           string // e.g. "status"; "" for the resource itself
	name                  string // one object only (for example bind on one ClusterRole)
	clusterScoped         bool
}

// String names the permission as in messages: "create secrets",
// "bind clusterroles.rbac.authorization.k8s.io harvesterhci.io:cloudprovider".
func (p permission) String() string {
	resource := p.resource
	if p.subresource != "" {
		resource += "/" + p.subresource
	}
	if p.group != "" {
		resource += "." + p.group
	}
	if p.name != "" {
		resource += " " + p.name
	}
	return p.verb + " " + resource
}

// rulesAllow reports whether any of the rules (a SelfSubjectRulesReview's
// answer) grants p, by RBAC's matching: "*" matches every verb, group and
// resource (subresources included); "*/sub" matches that subresource of
// every resource; "resource/sub" names one subresource; a rule with
// resourceNames grants only requests for one of those names, so never a
// request without a name (list, watch, create).
func rulesAllow(rules []authv1.ResourceRule, p permission) bool {
	for _, r := range rules {
		if matchesAll(r.Verbs, p.verb) && matchesAll(r.APIGroups, p.group) && resourceMatches(r.Resources, p) && nameMatches(r.ResourceNames, p.name) {
			return true
		}
	}
	return false
}

func matchesAll(values []string, want string) bool {
	return slices.Contains(values, "*") || slices.Contains(values, want)
}

func resourceMatches(resources []string, p permission) bool {
	want := p.resource
	if p.subresource != "" {
		want += "/" + p.subresource
	}
	for _, r := range resources {
		if r == "*" || r == want || (p.subresource != "" && r == "*/"+p.subresource) {
			return true
		}
	}
	return false
}

func nameMatches(names []string, want string) bool {
	return len(names) == 0 || (want != "" && slices.Contains(names, want))
}

// permissionVerdict is the answer for one permission: allowed, or unknown
// (the rules were incomplete, or a cluster-scoped permission that rules of
// a namespace cannot answer) and to be asked one by one.
type permissionVerdict int

const (
	denied permissionVerdict = iota
	allowed
	askAgain
)

// judge decides each permission from the rules of its namespace. Rules
// of a namespace mix its RoleBindings with the ClusterRoleBindings, so they
// cannot prove a cluster-scoped permission: those are asked again, as are
// permissions the rules do not grant when the review was incomplete.
func judge(review *authv1.SubjectRulesReviewStatus, perms []permission) []permissionVerdict {
	out := make([]permissionVerdict, len(perms))
	for i, p := range perms {
		switch {
		case p.clusterScoped:
			out[i] = askAgain
		case review != nil && rulesAllow(review.ResourceRules, p):
			out[i] = allowed
		case review == nil || review.Incomplete:
			out[i] = askAgain
		}
	}
	return out
}

// checkPermissions asks the API server once, with a
// SelfSubjectRulesReview of the VM namespace, what the credential may do,
// and evaluates every verb the driver uses from the answer. Only where the
// answer cannot decide (incomplete rules, cluster-scoped permissions, or
// no answer) is each permission asked with a SelfSubjectAccessReview.
func (d *Driver) checkPermissions(ctx context.Context, api *harvesterapi.API) []error {
	perms := requiredPermissions()
	if d.CloudProvider != "" {
		perms = append(perms, cloudProviderPermissions()...)
	}
	if d.StaticAddressRange != "" {
		perms = append(perms, staticAddressPermissions()...)
	}
	ns := d.VMNamespace
	review, err := api.RulesReview(ctx, ns)
	if err != nil {
		if harvesterapi.IsTerminal(err) {
			return []error{err}
		}
		review = nil // fall back to one review per permission
	}
	var problems []error
	for i, v := range judge(review, perms) {
		p := perms[i]
		where := "in namespace " + ns
		if p.clusterScoped {
			where = "cluster-wide"
		}
		if v == askAgain {
			attrs := authv1.ResourceAttributes{Verb: p.verb, Group: p.group, Resource: p.resource, Subresource: p.subresource, Name: p.name}
			if !p.clusterScoped {
				attrs.Namespace = ns
			}
			ok, err := api.Allowed(ctx, attrs, p.String())
			if err != nil {
				problems = append(problems, err)
				continue
			}
			v = map[bool]permissionVerdict{true: allowed, false: denied}[ok]
		}
		if v == denied {
			problems = append(problems, fmt.Errorf("the credential may not %s %s", p, where))
		}
	}
	return problems
}
