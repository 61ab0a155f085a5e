package doctor

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Check names of the cloud-provider credential checks.
const (
	CheckCredential = "credential"
	CheckToken      = "credential-token"
)

func (h *harvesterView) issueCmd() string {
	return "`harvester-bootstrap kubeconfig --cluster-name " + h.Cluster + " --namespace " + h.Namespace + "`"
}

type harvesterView struct{ *clusterstate.Harvester }

// Credential: the ServiceAccount(s) `kubeconfig` created for the cluster,
// each with its RoleBinding, ClusterRoleBinding and filled token Secret.
func Credential(s *clusterstate.Snapshot) Row {
	h := harvesterView{&s.Harvester}
	if row, bad := unlisted(h.Errors, CheckCredential, clusterstate.KindServiceAccount, clusterstate.KindRoleBinding,
		clusterstate.KindClusterRoleBinding, clusterstate.KindSecret); bad {
		return row
	}
	if len(h.ServiceAccounts) == 0 {
		return warn(CheckCredential, "no ServiceAccount labelled "+credentials.Selector(h.Cluster)+" in "+h.Namespace,
			"the guest's cloud provider needs a credential: "+h.issueCmd()+" (or the driver's --harvester-cloud-provider)")
	}
	var accounts, problems []string
	for _, sa := range h.ServiceAccounts {
		a := credentials.Access{ClusterName: h.Cluster, Namespace: h.Namespace, ServiceAccount: sa.Name}
		accounts = append(accounts, sa.Name)
		if !hasRoleBinding(h.RoleBindings, a.RoleBindingName()) {
			problems = append(problems, "RoleBinding "+a.RoleBindingName()+" missing")
		}
		if !hasRoleBinding(h.RoleBindings, a.CSIRoleBindingName()) && !clusterWide(h, a) {
			problems = append(problems, "RoleBinding "+a.CSIRoleBindingName()+" ("+harvester.CSIDriverRole+") missing")
		}
		i := slices.IndexFunc(h.TokenSecrets, func(t clusterstate.TokenSecret) bool { return t.Name == a.TokenSecretName() })
		switch {
		case i < 0:
			problems = append(problems, "Secret "+a.TokenSecretName()+" missing")
		case !h.TokenSecrets[i].Filled:
			problems = append(problems, "Secret "+a.TokenSecretName()+" has no token")
		}
	}
	seen := fmt.Sprintf("ServiceAccount %s with RoleBindings (%s, %s), token Secret",
		names(accounts), harvester.CloudProviderRole, harvester.CSIDriverRole)
	if len(problems) > 0 {
		return fail(CheckCredential, names(problems),
			"re-create it: "+h.issueCmd()+" (an empty token Secret means kube-controller-manager's token controller is not running)")
	}
	return ok(CheckCredential, seen)
}

// Token: each filled token Secret's token authenticates.
func Token(s *clusterstate.Snapshot) Row {
	h := harvesterView{&s.Harvester}
	var good, bad []string
	for _, t := range h.TokenSecrets {
		if t.Auth == nil {
			continue
		}
		if t.Auth.Err != "" {
			bad = append(bad, t.Name)
		} else {
			good = append(good, t.Name+" as "+t.Auth.User)
		}
	}
	switch {
	case len(bad) > 0:
		return fail(CheckToken, "token of "+names(bad)+" does not authenticate",
			"rotate it: `harvester-bootstrap kubeconfig rotate --cluster-name "+h.Cluster+" --namespace "+h.Namespace+"` and update the guests' cloud-config")
	case len(good) == 0:
		return warn(CheckToken, "no filled token Secret to try", "see the "+CheckCredential+" row")
	}
	return ok(CheckToken, "authenticates: "+names(good))
}

func hasRoleBinding(rbs []rbacv1.RoleBinding, name string) bool {
	return slices.ContainsFunc(rbs, func(o rbacv1.RoleBinding) bool { return o.Name == name })
}

// clusterWide reports whether a's CSI role is bound cluster-wide.
func clusterWide(h harvesterView, a credentials.Access) bool {
	return slices.ContainsFunc(h.ClusterRoleBindings, func(o rbacv1.ClusterRoleBinding) bool { return o.Name == a.ClusterRoleBindingName() })
}
