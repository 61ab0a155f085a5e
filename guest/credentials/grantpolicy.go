package credentials

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// A --cloud-provider driver credential may get and patch the bindings of
// its machine namespaces' grants, by name (GrantEdit), so that the driver
// adds the guest ServiceAccount it makes. RBAC cannot say "only the
// subjects, only guests", so a second admission policy of the credential
// (installed and revoked with it) refuses the driver's every write of those
// bindings but an update that keeps roleRef, labels, ownerReferences and
// finalizers and names only guest ServiceAccounts (IsGuestServiceAccount) of
// the namespace the binding's name records. Its binding for machine
// namespace ns matches the grant bindings of ns by name in every namespace
// (and cluster-wide), and reads ns's ServiceAccounts as params.

// GrantPolicyName names the driver credential's grant policy.
func (d DriverIdentity) GrantPolicyName() string {
	return "harvester-bootstrap-driver-grant." + d.Namespace + "." + d.ServiceAccount
}

// GrantPolicyBindingName names the grant policy's binding for machine
// namespace ns.
func (d DriverIdentity) GrantPolicyBindingName(ns string) string {
	return d.GrantPolicyName() + "." + ns
}

// grantPolicyValidations run once per ServiceAccount of the binding's
// namespace of record (params).
func grantPolicyValidations() []admissionv1.Validation {
	same := func(path, empty string) string {
		return fmt.Sprintf("(has(object.%[1]s) ? object.%[1]s : %[2]s) == (has(oldObject.%[1]s) ? oldObject.%[1]s : %[2]s)", path, empty)
	}
	guest := fmt.Sprintf("has(params.metadata.labels) && %[1]s in params.metadata.labels && params.metadata.labels[%[1]s] == %[2]s && %[3]s in params.metadata.labels",
		cel(addons.LabelManagedBy), cel(addons.ManagedBy), cel(LabelCluster))
	update := "request.operation == 'UPDATE'"
	forbidden := ptrReason(metav1.StatusReasonForbidden)
	return []admissionv1.Validation{
		{
			Expression: update,
			Message:    "the driver credential may not make a binding of a namespace grant: an admin makes the grant (`harvester-bootstrap kubeconfig` or `driver-credential --cloud-provider`)",
			Reason:     forbidden,
		},
		{
			Expression: "!(" + update + ") || (object.roleRef == oldObject.roleRef && " + same("metadata.labels", "{}") + " && " +
				same("metadata.ownerReferences", "[]") + " && " + same("metadata.finalizers", "[]") + ")",
			Message: "the driver credential may change only the subjects of a namespace grant's binding: its roleRef, labels, ownerReferences and finalizers stay",
			Reason:  forbidden,
		},
		{
			Expression: fmt.Sprintf("object.metadata.name == %s + params.metadata.namespace && (!has(object.subjects) || object.subjects.all(s, s.kind == %s && has(s.namespace) && s.namespace == params.metadata.namespace))",
				cel(grantBindingPrefix), cel(rbacv1.ServiceAccountKind)),
			MessageExpression: "'the driver credential may name only ServiceAccounts of namespace ' + params.metadata.namespace + ' in its grant (no group, no user, no other namespace)'",
			Reason:            forbidden,
		},
		{
			Expression:        "!has(object.subjects) || object.subjects.all(s, s.name != params.metadata.name || (" + guest + "))",
			MessageExpression: "'ServiceAccount ' + params.metadata.namespace + '/' + params.metadata.name + ' is not a guest credential of harvester-bootstrap: the driver credential may not add it to the namespace grant'",
			Reason:            forbidden,
		},
	}
}

// BuildGrantPolicyValidations are the grant policy's checks, as doctor
// compares them.
func BuildGrantPolicyValidations() []admissionv1.Validation { return grantPolicyValidations() }

// BuildGrantPolicy builds the grant policy of driver credential d and its
// binding for each machine namespace, all labelled with labels.
func BuildGrantPolicy(d DriverIdentity, machineNamespaces []string, labels map[string]string) (*admissionv1.ValidatingAdmissionPolicy, []*admissionv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionv1.Fail
	deny := admissionv1.DenyAction
	ops := []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}
	tm := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: kind}
	}
	bindingsRule := func(names ...string) admissionv1.NamedRuleWithOperations {
		return admissionv1.NamedRuleWithOperations{ResourceNames: names, RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionv1.Rule{APIGroups: []string{rbacv1.GroupName}, APIVersions: []string{"*"}, Resources: []string{"rolebindings", "clusterrolebindings"}},
		}}
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   tm("ValidatingAdmissionPolicy"),
		ObjectMeta: metav1.ObjectMeta{Name: d.GrantPolicyName(), Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			ParamKind:        &admissionv1.ParamKind{APIVersion: "v1", Kind: "ServiceAccount"},
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{bindingsRule()}},
			MatchConditions:  []admissionv1.MatchCondition{{Name: "driver-credential", Expression: "request.userInfo.username == " + cel(d.Username())}},
			Validations:      grantPolicyValidations(),
		},
	}
	var bindings []*admissionv1.ValidatingAdmissionPolicyBinding
	for _, ns := range machineNamespaces {
		bindings = append(bindings, &admissionv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   tm("ValidatingAdmissionPolicyBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: d.GrantPolicyBindingName(ns), Labels: labels},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: d.GrantPolicyName(),
				// Every ServiceAccount of ns; none refuses, failing closed.
				ParamRef:          &admissionv1.ParamRef{Namespace: ns, Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: &deny},
				MatchResources:    &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{bindingsRule(GrantBindingName(ns))}},
				ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			},
		})
	}
	return policy, bindings
}
