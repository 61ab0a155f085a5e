package driverrights

import (
	"slices"
	"testing"

	authv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/harvester-kit/harvester-machine/internal/golden"
)

func TestPolicyRulesGolden(t *testing.T) {
	ns, cluster := PolicyRules(All())
	out := golden.Must(yaml.Marshal(map[string][]rbacv1.PolicyRule{"role": ns, "clusterRole": cluster}))
	golden.Assert(t, "policyrules.yaml", out)
}

// TestPolicyRulesGrantExactlyTheList: the rules granted from the list
// allow every permission of it and nothing beyond it.
func TestPolicyRulesGrantExactlyTheList(t *testing.T) {
	ns, cluster := PolicyRules(All())
	var rules []authv1.ResourceRule
	for _, r := range append(ns, cluster...) {
		rules = append(rules, authv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	for _, p := range All() {
		if !RulesAllow(rules, p) {
			t.Errorf("the rules do not grant %s", p)
		}
	}
	if x := Excess(rules, All()); len(x) > 0 {
		t.Errorf("the rules grant more than the list: %v", x)
	}
}

func TestExcess(t *testing.T) {
	cases := []struct {
		name  string
		rules []authv1.ResourceRule
		want  []string
	}{
		{"nothing", nil, nil},
		{"every user's", []authv1.ResourceRule{rule(list("create"), list("authentication.k8s.io"), list("selfsubjectreviews"), nil)}, nil},
		{"exact", []authv1.ResourceRule{rule(list("get", "delete"), list("kubevirt.io"), list("virtualmachines"), nil)}, nil},
		{"cluster admin", []authv1.ResourceRule{rule(list("*"), list("*"), list("*"), nil)}, list("* *.*")},
		{"verb wildcard", []authv1.ResourceRule{rule(list("*"), list(""), list("secrets"), nil)}, list("* secrets")},
		{"another resource", []authv1.ResourceRule{rule(list("get", "delete"), list(""), list("nodes", "secrets"), nil)}, list("delete nodes", "get nodes")},
		{"named need, unnamed grant", []authv1.ResourceRule{rule(list("bind"), list("rbac.authorization.k8s.io"), list("clusterroles"), nil)}, list("bind clusterroles.rbac.authorization.k8s.io")},
		{"named need, named grant", []authv1.ResourceRule{rule(list("bind"), list("rbac.authorization.k8s.io"), list("clusterroles"), list("harvesterhci.io:csi-driver"))}, nil},
		{"other name", []authv1.ResourceRule{rule(list("bind"), list("rbac.authorization.k8s.io"), list("clusterroles"), list("cluster-admin"))}, list("bind clusterroles.rbac.authorization.k8s.io cluster-admin")},
		{"subresource", []authv1.ResourceRule{rule(list("update"), list("kubevirt.io"), list("virtualmachines/status"), nil)}, list("update virtualmachines/status.kubevirt.io")},
		// virt-operator's kubevirt.io:default and instancetype.kubevirt.io:view,
		// bound to system:authenticated (KubeVirt v1.7.0,
		// pkg/virt-operator/resource/generate/rbac/cluster.go), as a rules
		// review answers them.
		{"KubeVirt's for every user", []authv1.ResourceRule{
			rule(list("get", "list"), list("kubevirt.io"), list("kubevirts"), nil),
			rule(list("get", "list"), list("subresources.kubevirt.io"), list("version", "guestfs"), nil),
			rule(list("get", "list", "watch"), list("instancetype.kubevirt.io"), list("virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences"), nil),
		}, nil},
		{"beyond KubeVirt's for every user", []authv1.ResourceRule{rule(list("watch"), list("kubevirt.io"), list("kubevirts"), nil)}, list("watch kubevirts.kubevirt.io")},
	}
	for _, c := range cases {
		if got := Excess(c.rules, All()); !slices.Equal(got, c.want) && (len(got) > 0 || len(c.want) > 0) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOf(t *testing.T) {
	if len(Of(Always))+len(Of(CloudProvider))+len(Of(StaticAddresses))+len(Of(Checks))+len(Of(Repairs)) != len(All()) {
		t.Error("every permission has exactly one need")
	}
	for _, p := range Of(CloudProvider) {
		if p.Need != CloudProvider {
			t.Errorf("%s: need %d", p, p.Need)
		}
	}
}

// TestNoRightOnClusterRBAC: the driver holds no right on any
// ClusterRoleBinding or ClusterRole (a patch of a ClusterRoleBinding's
// ownerReferences alone would let the garbage collector delete any
// binding); its one verb on ClusterRoles is bind, by name, in the machine
// namespaces, for the RoleBindings of the guests' credentials.
func TestNoRightOnClusterRBAC(t *testing.T) {
	for _, p := range All() {
		if p.Group != groupRBAC {
			continue
		}
		switch {
		case p.Resource == "clusterrolebindings" || p.Resource == "clusterroles" && (p.Verb != "bind" || p.Name == "" || p.ClusterScoped):
			t.Errorf("the driver may %s", p)
		case p.Resource == "roles":
			t.Errorf("the driver may %s (it makes no Roles)", p)
		}
	}
}

// TestGrantEditIsByName: the rights on the namespace grants are get and
// patch of the named bindings and bind of the two named roles: nothing
// unnamed, no create, update or delete, no other resource.
func TestGrantEditIsByName(t *testing.T) {
	perms := GrantEdit([]string{"grant:a", "grant:b"}, "reads", "guests")
	if len(perms) != 10 {
		t.Errorf("%d permissions, want 10 (get, patch of 2 names on 2 kinds; bind of 2 roles): %v", len(perms), perms)
	}
	for _, p := range perms {
		ok := p.Group == groupRBAC && p.Name != "" && p.Need == CloudProvider &&
			((p.Resource == "clusterrolebindings" || p.Resource == "rolebindings") && (p.Verb == "get" || p.Verb == "patch") ||
				p.Resource == "clusterroles" && p.Verb == "bind" && p.Name == "reads" ||
				p.Resource == "roles" && p.Verb == "bind" && p.Name == "guests")
		if !ok {
			t.Errorf("GrantEdit grants %s", p)
		}
	}
}
