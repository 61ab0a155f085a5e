package driverrights

import (
	"strings"
	"testing"

	authv1 "k8s.io/api/authorization/v1"
)

func rule(verbs, groups, resources, names []string) authv1.ResourceRule {
	return authv1.ResourceRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
}

func list(s ...string) []string { return s }

func TestRulesAllow(t *testing.T) {
	getVM := Permission{Verb: "get", Group: "kubevirt.io", Resource: "virtualmachines"}
	createSecret := Permission{Verb: "create", Resource: "secrets"}
	bindRole := Permission{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "harvesterhci.io:cloudprovider"}
	vmStatus := Permission{Verb: "update", Group: "kubevirt.io", Resource: "virtualmachines", Subresource: "status"}
	cases := []struct {
		name  string
		rules []authv1.ResourceRule
		p     Permission
		want  bool
	}{
		{"exact", []authv1.ResourceRule{rule(list("get"), list("kubevirt.io"), list("virtualmachines"), nil)}, getVM, true},
		{"other verb", []authv1.ResourceRule{rule(list("list"), list("kubevirt.io"), list("virtualmachines"), nil)}, getVM, false},
		{"other group", []authv1.ResourceRule{rule(list("get"), list(""), list("virtualmachines"), nil)}, getVM, false},
		{"core group is the empty string", []authv1.ResourceRule{rule(list("create"), list(""), list("secrets"), nil)}, createSecret, true},
		{"other resource", []authv1.ResourceRule{rule(list("get"), list("kubevirt.io"), list("virtualmachineinstances"), nil)}, getVM, false},
		{"no rules", nil, getVM, false},
		{"verb wildcard", []authv1.ResourceRule{rule(list("*"), list("kubevirt.io"), list("virtualmachines"), nil)}, getVM, true},
		{"group wildcard", []authv1.ResourceRule{rule(list("get"), list("*"), list("virtualmachines"), nil)}, getVM, true},
		{"resource wildcard", []authv1.ResourceRule{rule(list("get"), list("kubevirt.io"), list("*"), nil)}, getVM, true},
		{"cluster admin", []authv1.ResourceRule{rule(list("*"), list("*"), list("*"), nil)}, bindRole, true},
		{"spread over rules is not one grant", []authv1.ResourceRule{
			rule(list("get"), list("other.io"), list("virtualmachines"), nil),
			rule(list("list"), list("kubevirt.io"), list("virtualmachines"), nil),
		}, getVM, false},
		{"second rule grants", []authv1.ResourceRule{
			rule(list("list"), list("kubevirt.io"), list("virtualmachines"), nil),
			rule(list("get", "watch"), list("kubevirt.io"), list("virtualmachines"), nil),
		}, getVM, true},
		{"resourceNames grant the named object", []authv1.ResourceRule{rule(list("bind"), list("rbac.authorization.k8s.io"), list("clusterroles"), list("harvesterhci.io:cloudprovider"))}, bindRole, true},
		{"resourceNames of another object", []authv1.ResourceRule{rule(list("bind"), list("rbac.authorization.k8s.io"), list("clusterroles"), list("admin"))}, bindRole, false},
		{"resourceNames never grant a request without a name", []authv1.ResourceRule{rule(list("create"), list(""), list("secrets"), list("c1-cloudinit"))}, createSecret, false},
		{"a resource rule does not grant its subresource", []authv1.ResourceRule{rule(list("update"), list("kubevirt.io"), list("virtualmachines"), nil)}, vmStatus, false},
		{"resource/subresource", []authv1.ResourceRule{rule(list("update"), list("kubevirt.io"), list("virtualmachines/status"), nil)}, vmStatus, true},
		{"*/subresource", []authv1.ResourceRule{rule(list("update"), list("kubevirt.io"), list("*/status"), nil)}, vmStatus, true},
		{"*/other subresource", []authv1.ResourceRule{rule(list("update"), list("kubevirt.io"), list("*/scale"), nil)}, vmStatus, false},
		{"a subresource rule does not grant the resource", []authv1.ResourceRule{rule(list("get"), list("kubevirt.io"), list("virtualmachines/status"), nil)}, getVM, false},
		{"*/subresource does not grant the resource", []authv1.ResourceRule{rule(list("get"), list("kubevirt.io"), list("*/status"), nil)}, getVM, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RulesAllow(c.rules, c.p); got != c.want {
				t.Errorf("RulesAllow(%s) = %v, want %v", c.p, got, c.want)
			}
		})
	}
}

func TestClusterRBACRights(t *testing.T) {
	cases := []struct {
		name  string
		rules []authv1.ResourceRule
		want  int
	}{
		{"the driver's own", nil, 0},
		{"old --cloud-provider", []authv1.ResourceRule{
			{Verbs: []string{"get", "create", "patch"}, APIGroups: []string{groupRBAC}, Resources: []string{"clusterrolebindings"}},
			{Verbs: []string{"bind"}, APIGroups: []string{groupRBAC}, Resources: []string{"clusterroles"}, ResourceNames: []string{"harvesterhci.io:csi-driver"}},
		}, 3},
		{"bind by name", []authv1.ResourceRule{{Verbs: []string{"bind"}, APIGroups: []string{groupRBAC}, Resources: []string{"clusterroles"}, ResourceNames: []string{"x"}}}, 0},
		{"bind any", []authv1.ResourceRule{{Verbs: []string{"bind"}, APIGroups: []string{groupRBAC}, Resources: []string{"clusterroles"}}}, 1},
		{"admin", []authv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}, 2},
		{"get and patch of grant bindings by name", []authv1.ResourceRule{
			{Verbs: []string{"get", "patch"}, APIGroups: []string{groupRBAC}, Resources: []string{"clusterrolebindings"}, ResourceNames: []string{"grant:a", "grant:b"}},
		}, 0},
		{"patch of any binding", []authv1.ResourceRule{{Verbs: []string{"patch"}, APIGroups: []string{groupRBAC}, Resources: []string{"clusterrolebindings"}}}, 1},
		{"patch of a grant and another by name", []authv1.ResourceRule{
			{Verbs: []string{"patch"}, APIGroups: []string{groupRBAC}, Resources: []string{"clusterrolebindings"}, ResourceNames: []string{"grant:a", "cluster-admin"}},
		}, 1},
		{"delete of a grant binding", []authv1.ResourceRule{
			{Verbs: []string{"delete"}, APIGroups: []string{groupRBAC}, Resources: []string{"clusterrolebindings"}, ResourceNames: []string{"grant:a"}},
		}, 1},
	}
	grant := func(name string) bool { return strings.HasPrefix(name, "grant:") }
	for _, c := range cases {
		if got := ClusterRBACRights(c.rules, grant); len(got) != c.want {
			t.Errorf("%s: %v, want %d", c.name, got, c.want)
		}
	}
}
