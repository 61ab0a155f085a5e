package sim

import (
	"fmt"
	"go/ast"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// ruleLines are rules as sorted one-line texts: the order of rules and of
// the items in them means nothing to RBAC.
func ruleLines(rules []rbacv1.PolicyRule) []string {
	sorted := func(s []string) string { c := slices.Clone(s); slices.Sort(c); return strings.Join(c, ",") }
	var out []string
	for _, r := range rules {
		line := fmt.Sprintf("apiGroups=[%s] resources=[%s] verbs=[%s]", sorted(r.APIGroups), sorted(r.Resources), sorted(r.Verbs))
		if len(r.ResourceNames) > 0 {
			line += fmt.Sprintf(" resourceNames=[%s]", sorted(r.ResourceNames))
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// rulesDiff is empty when both rule sets grant the same, else the rules
// only one side has.
func rulesDiff(harvesterRules, simRules []rbacv1.PolicyRule) string {
	want, got := ruleLines(harvesterRules), ruleLines(simRules)
	var b strings.Builder
	for _, l := range want {
		if !slices.Contains(got, l) {
			b.WriteString("\n  only in Harvester: " + l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			b.WriteString("\n  only in the simulator: " + l)
		}
	}
	return b.String()
}

func simRole(t *testing.T, name string) *rbacv1.ClusterRole {
	t.Helper()
	for _, r := range harvesterClusterRoles() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("the simulator has no ClusterRole %s", name)
	return nil
}

func TestRulesDiffShowsBothSides(t *testing.T) {
	a := []rbacv1.PolicyRule{rule("g", []string{"a", "b"}, []string{"get"}), rule("g", []string{"s"}, []string{"get"}, "x")}
	b := []rbacv1.PolicyRule{rule("g", []string{"s"}, []string{"get"}, "x"), rule("g", []string{"b", "a"}, []string{"get"})}
	if d := rulesDiff(a, b); d != "" {
		t.Errorf("same rules in another order differ: %s", d)
	}
	b[0].ResourceNames = nil
	lines := strings.Split(rulesDiff(a, b), "\n")
	want := []string{"", "  only in Harvester: apiGroups=[g] resources=[s] verbs=[get] resourceNames=[x]", "  only in the simulator: apiGroups=[g] resources=[s] verbs=[get]"}
	if !slices.Equal(lines, want) {
		t.Errorf("diff lines %q, want %q", lines, want)
	}
}

// TestGuestRolesMatchHarvesterChart: the cloud-provider and CSI-driver
// ClusterRoles grant exactly what Harvester's chart grants.
func TestGuestRolesMatchHarvesterChart(t *testing.T) {
	dir := harvesterModuleDir(t)
	chart := map[string]rbacv1.ClusterRole{}
	for _, doc := range chartDocuments(t, filepath.Join(dir, "deploy", "charts", "harvester", "templates", "rbac.yaml")) {
		var role rbacv1.ClusterRole
		decodeYAML(t, doc, &role)
		if role.Kind == "ClusterRole" {
			chart[role.Name] = role
		}
	}
	for _, name := range []string{hv.CloudProviderRole, hv.CSIDriverRole} {
		want, ok := chart[name]
		if !ok {
			t.Errorf("Harvester's chart (%s) has no ClusterRole %s", dir, name)
			continue
		}
		if d := rulesDiff(want.Rules, simRole(t, name).Rules); d != "" {
			t.Errorf("ClusterRole %s differs from Harvester's chart (%s):%s", name, dir, d)
		}
	}
}

// TestAuthenticatedRBACMatchesHarvester: harvester-authenticated, its
// binding and harvester-public's binding are those Harvester's data
// package applies, the settings being its WhiteListedSettings.
func TestAuthenticatedRBACMatchesHarvester(t *testing.T) {
	dir := harvesterModuleDir(t)
	src := harvesterSource{
		data:     parseGoPackage(t, filepath.Join(dir, "pkg", "data")),
		settings: parseGoPackage(t, filepath.Join(dir, "pkg", "settings")),
	}
	whitelist := src.stringList(t, src.settings, src.settings.varValue("WhiteListedSettings"))
	if !slices.Equal(whitelist, hv.AuthenticatedSettings) {
		t.Errorf("Harvester's WhiteListedSettings are %q, the simulator's %q", whitelist, hv.AuthenticatedSettings)
	}
	role := src.composite(t, "ClusterRole", hv.AuthenticatedRole)
	var rules []rbacv1.PolicyRule
	for _, e := range field(role, "Rules").(*ast.CompositeLit).Elts {
		r := e.(*ast.CompositeLit)
		rules = append(rules, rbacv1.PolicyRule{
			APIGroups: src.stringList(t, src.data, field(r, "APIGroups")), Resources: src.stringList(t, src.data, field(r, "Resources")),
			Verbs: src.stringList(t, src.data, field(r, "Verbs")), ResourceNames: src.stringList(t, src.data, field(r, "ResourceNames")),
		})
	}
	if d := rulesDiff(rules, simRole(t, hv.AuthenticatedRole).Rules); d != "" {
		t.Errorf("ClusterRole %s differs from Harvester's pkg/data/rbac.go:%s", hv.AuthenticatedRole, d)
	}
	crb, rb := authenticatedBindings()
	for _, c := range []struct {
		kind, name, namespace, roleRef, subject string
	}{
		{"ClusterRoleBinding", crb.Name, "", crb.RoleRef.Name, crb.Subjects[0].Name},
		{"RoleBinding", rb.Name, rb.Namespace, rb.RoleRef.Name, rb.Subjects[0].Name},
	} {
		lit := src.composite(t, c.kind, c.name)
		meta := field(lit, "ObjectMeta").(*ast.CompositeLit)
		got := []string{src.str(t, field(meta, "Namespace")), src.str(t, field(field(lit, "RoleRef").(*ast.CompositeLit), "Name")),
			src.str(t, field(field(lit, "Subjects").(*ast.CompositeLit).Elts[0].(*ast.CompositeLit), "Name"))}
		if want := []string{c.namespace, c.roleRef, c.subject}; !slices.Equal(got, want) {
			t.Errorf("%s %s: Harvester has namespace, role, subject %q, the simulator %q", c.kind, c.name, got, want)
		}
	}
}

// harvesterSource reads values out of Harvester's pkg/data, which refers
// to pkg/settings.
type harvesterSource struct {
	data, settings goSource
}

// composite is the composite literal of type rbacv1.<kind> in pkg/data
// whose ObjectMeta is named name.
func (h harvesterSource) composite(t *testing.T, kind, name string) *ast.CompositeLit {
	t.Helper()
	var found *ast.CompositeLit
	for _, f := range h.data.files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || found != nil {
				return found == nil
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != kind {
				return true
			}
			if meta, ok := field(lit, "ObjectMeta").(*ast.CompositeLit); ok && h.str(t, field(meta, "Name")) == name {
				found = lit
			}
			return true
		})
	}
	if found == nil {
		t.Fatalf("Harvester's pkg/data has no %s %s", kind, name)
	}
	return found
}

// field is the value of key in a keyed composite literal, nil if unset.
func field(lit ast.Node, key string) ast.Expr {
	cl, ok := lit.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	for _, e := range cl.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return kv.Value
			}
		}
	}
	return nil
}

// str is a string literal or a constant of pkg/data or pkg/settings.
func (h harvesterSource) str(t *testing.T, e ast.Expr) string {
	t.Helper()
	return h.strIn(t, h.data, e)
}

func (h harvesterSource) strIn(t *testing.T, pkg goSource, e ast.Expr) string {
	t.Helper()
	switch v := e.(type) {
	case nil:
		return ""
	case *ast.Ident:
		if s, ok := pkg.consts[v.Name]; ok {
			return s
		}
	case *ast.SelectorExpr:
		if x, ok := v.X.(*ast.Ident); ok && x.Name == "settings" {
			if s, ok := h.settings.consts[v.Sel.Name]; ok {
				return s
			}
		}
	default:
		if s, ok := stringLit(e); ok {
			return s
		}
	}
	t.Fatalf("cannot read a string from Harvester's source: %T %v", e, e)
	return ""
}

// stringList is a []string literal, or settings.<var> holding one.
func (h harvesterSource) stringList(t *testing.T, pkg goSource, e ast.Expr) []string {
	t.Helper()
	switch v := e.(type) {
	case nil:
		return nil
	case *ast.SelectorExpr:
		if x, ok := v.X.(*ast.Ident); ok && x.Name == "settings" {
			return h.stringList(t, h.settings, h.settings.varValue(v.Sel.Name))
		}
	case *ast.CompositeLit:
		var out []string
		for _, el := range v.Elts {
			out = append(out, h.strIn(t, pkg, el))
		}
		return out
	}
	t.Fatalf("cannot read a string list from Harvester's source: %T %v", e, e)
	return nil
}
