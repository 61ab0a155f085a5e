package precheck

import (
	"context"
	"fmt"

	authv1 "k8s.io/api/authorization/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/driverrights"
)

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
func judge(review *authv1.SubjectRulesReviewStatus, perms []driverrights.Permission) []permissionVerdict {
	out := make([]permissionVerdict, len(perms))
	for i, p := range perms {
		switch {
		case p.ClusterScoped:
			out[i] = askAgain
		case review != nil && driverrights.RulesAllow(review.ResourceRules, p):
			out[i] = allowed
		case review == nil || review.Incomplete:
			out[i] = askAgain
		}
	}
	return out
}

// Permissions asks the API server once, with a
// SelfSubjectRulesReview of the VM namespace, what the credential may do,
// and evaluates every verb the driver uses from the answer. Only where the
// answer cannot decide (incomplete rules, cluster-scoped permissions, or
// no answer) is each permission asked with a SelfSubjectAccessReview.
func Permissions(ctx context.Context, api *harvesterapi.API, m *machine.Machine) []error {
	needs := []driverrights.Need{driverrights.Always}
	if m.Config.CloudProvider != "" {
		needs = append(needs, driverrights.CloudProvider)
	}
	if m.Config.StaticAddressRange != "" {
		needs = append(needs, driverrights.StaticAddresses)
	}
	perms := driverrights.Of(needs...)
	ns := m.Config.VMNamespace
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
		if p.ClusterScoped {
			where = "cluster-wide"
		}
		if v == askAgain {
			attrs := authv1.ResourceAttributes{Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Name: p.Name}
			if !p.ClusterScoped {
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
