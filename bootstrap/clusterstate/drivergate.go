package clusterstate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/harvester-kit/harvester-machine/bootstrap/drivercred"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
)

// DriverGate is what decides what the driver credentials serving the VM
// namespace (their Role is there: they may read every Secret) can take:
// their admission policies, the tokens there that reach outside the
// namespace, and what gives a token or a guest role there that this tool
// did not make.
type DriverGate struct {
	Serving []string // the driver credentials' ServiceAccounts, ns/name
	// NoPolicy: a serving credential whose admission policy or binding is
	// missing, not this tool's, or does not cover the namespace.
	NoPolicy []string
	Reach    []credentials.Reach
	// NotMadeByTool: token Secrets and guest-role RoleBindings of the
	// namespace this tool did not make (drivercred.NotMadeByTool).
	NotMadeByTool []string
	Err           string // why it could not be looked at
}

// FetchDriverGate looks at the driver credentials serving ns.
func (c *Clients) FetchDriverGate(ctx context.Context, ns string) DriverGate {
	g, err := c.fetchDriverGate(ctx, ns)
	if err != nil {
		g.Err = err.Error()
	}
	return g
}

func (c *Clients) fetchDriverGate(ctx context.Context, ns string) (DriverGate, error) {
	var g DriverGate
	h, err := credentials.NewHarvester(c.Config, nil)
	if err != nil {
		return g, err
	}
	if g.Serving, err = h.DriverCredentialsServing(ctx, ns); err != nil || len(g.Serving) == 0 {
		return g, err
	}
	adm := c.Kube.AdmissionregistrationV1()
	for _, who := range g.Serving {
		saNS, sa, _ := strings.Cut(who, "/")
		s := drivercred.Spec{Namespace: saNS, ServiceAccount: sa}.WithDefaults()
		want := drivercred.Build(s).Policy
		name := s.Identity().PolicyName()
		p, err := adm.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return g, fmt.Errorf("get ValidatingAdmissionPolicy %s: %w", name, err)
		}
		b, berr := adm.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
		if berr != nil && !apierrors.IsNotFound(berr) {
			return g, fmt.Errorf("get ValidatingAdmissionPolicyBinding %s: %w", name, berr)
		}
		switch {
		case err != nil || !s.Owns(p.Labels) || !apiequality.Semantic.DeepEqual(p.Spec.Validations, want.Spec.Validations) ||
			!apiequality.Semantic.DeepEqual(p.Spec.MatchConditions, want.Spec.MatchConditions):
			g.NoPolicy = append(g.NoPolicy, who+" (ValidatingAdmissionPolicy "+name+" missing or not as driver-credential makes it)")
		case berr != nil || !s.Owns(b.Labels) || b.Spec.PolicyName != name || !bindingCovers(b.Spec.MatchResources, ns):
			g.NoPolicy = append(g.NoPolicy, who+" (ValidatingAdmissionPolicyBinding "+name+" missing or not covering "+ns+")")
		}
		missing, err := c.grantGateMissing(ctx, s, ns)
		if err != nil {
			return g, err
		}
		if missing != "" {
			g.NoPolicy = append(g.NoPolicy, who+" ("+missing+")")
		}
	}
	tokens, err := c.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()})
	if err != nil {
		return g, fmt.Errorf("list token Secrets in %s: %w", ns, err)
	}
	crbs, err := c.Kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return g, fmt.Errorf("list ClusterRoleBindings: %w", err)
	}
	rbs, err := c.Kube.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return g, fmt.Errorf("list RoleBindings: %w", err)
	}
	g.Reach = credentials.ReachingOutside(ns, tokens.Items, crbs.Items, rbs.Items)
	g.NotMadeByTool, err = (&drivercred.Harvester{Kube: c.Kube}).NotMadeByTool(ctx, []string{ns})
	return g, err
}

// grantGateMissing names what is missing of the grant policy of s for ns
// when s's ClusterRole lets it patch ns's grant bindings ("" when that is
// in place or the credential may not patch them).
func (c *Clients) grantGateMissing(ctx context.Context, s drivercred.Spec, ns string) (string, error) {
	cr, err := c.Kube.RbacV1().ClusterRoles().Get(ctx, s.RBACName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get ClusterRole %s: %w", s.RBACName(), err)
	}
	grant := credentials.GrantBindingName(ns)
	if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool {
		return (slices.Contains(r.Verbs, "patch") || slices.Contains(r.Verbs, "*")) && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, grant)) &&
			slices.ContainsFunc(r.Resources, func(res string) bool { return res == "*" || res == "clusterrolebindings" || res == "rolebindings" })
	}) {
		return "", nil
	}
	id := s.Identity()
	want := credentials.BuildGrantPolicyValidations()
	adm := c.Kube.AdmissionregistrationV1()
	p, err := adm.ValidatingAdmissionPolicies().Get(ctx, id.GrantPolicyName(), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get ValidatingAdmissionPolicy %s: %w", id.GrantPolicyName(), err)
	}
	if err != nil || !s.Owns(p.Labels) || !apiequality.Semantic.DeepEqual(p.Spec.Validations, want) {
		return "ValidatingAdmissionPolicy " + id.GrantPolicyName() + " missing or not as driver-credential makes it, while it may patch the grant of " + ns, nil
	}
	b, err := adm.ValidatingAdmissionPolicyBindings().Get(ctx, id.GrantPolicyBindingName(ns), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get ValidatingAdmissionPolicyBinding %s: %w", id.GrantPolicyBindingName(ns), err)
	}
	if err != nil || !s.Owns(b.Labels) || b.Spec.PolicyName != id.GrantPolicyName() || b.Spec.ParamRef == nil || b.Spec.ParamRef.Namespace != ns {
		return "ValidatingAdmissionPolicyBinding " + id.GrantPolicyBindingName(ns) + " missing or not for " + ns + ", while it may patch the grant of " + ns, nil
	}
	return "", nil
}

// bindingCovers reports whether a policy binding's namespace selector
// names ns (as drivercred builds it: kubernetes.io/metadata.name In ...).
func bindingCovers(m *admissionv1.MatchResources, ns string) bool {
	if m == nil || m.NamespaceSelector == nil {
		return false
	}
	for _, e := range m.NamespaceSelector.MatchExpressions {
		if e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpIn && slices.Contains(e.Values, ns) {
			return true
		}
	}
	return false
}
