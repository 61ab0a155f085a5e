package credentials

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// The node driver's own credential (bootstrap/drivercred) may read every
// Secret of its machine namespaces and, with --cloud-provider, make guest
// credentials there. RBAC cannot say "only the guest credentials'", so an
// admission policy, installed with the credential, refuses every write by
// the driver's ServiceAccount that would give it (or anyone) a token or a
// binding beyond the guest credentials this package makes. The rules on
// names and labels it checks are the ones BuildAccess follows: one place.

// LabelIssuedBy marks the guest credential objects the node driver made
// with its own credential; the value is DriverIdentity.LabelValue. The
// policy refuses a token Secret or RoleBinding by the driver without it, so
// `driver-credential revoke` finds every token the driver made.
const LabelIssuedBy = "harvester-bootstrap.harvesterhci.io/issued-by-driver"

// DriverIdentity is the ServiceAccount of a driver credential.
type DriverIdentity struct{ Namespace, ServiceAccount string }

// LabelValue is the identity as a label value (drivercred's credential
// label and LabelIssuedBy carry it).
func (d DriverIdentity) LabelValue() string {
	return harvester.LabelValue(d.Namespace + "." + d.ServiceAccount)
}

// Username is the identity's user name in requests.
func (d DriverIdentity) Username() string {
	return serviceaccount.MakeUsername(d.Namespace, d.ServiceAccount)
}

// PolicyName names the driver credential's admission policy and its
// binding (a DNS subdomain: both parts are DNS labels).
func (d DriverIdentity) PolicyName() string {
	return "harvester-bootstrap-driver." + d.Namespace + "." + d.ServiceAccount
}

// DriverIdentityOfToken is the ServiceAccount a bearer token names in its
// (unverified) claims; false when it is no ServiceAccount token. The API
// server decides who the token is; this only lets the driver label what it
// makes as the policy demands.
func DriverIdentityOfToken(token string) (DriverIdentity, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return DriverIdentity{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return DriverIdentity{}, false
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(b, &claims) != nil {
		return DriverIdentity{}, false
	}
	ns, name, err := serviceaccount.SplitUsername(claims.Sub)
	if err != nil {
		return DriverIdentity{}, false
	}
	return DriverIdentity{Namespace: ns, ServiceAccount: name}, true
}

// refusedOtherUID ends the policy's refusal of a token Secret whose
// ServiceAccount has another UID (EnsureAccess asks again while the
// policy's parameters hold an earlier account of the name).
const refusedOtherUID = "the driver credential may not make a token for another UID"

// cel quotes s as a CEL string literal.
func cel(s string) string { b, _ := json.Marshal(s); return string(b) }

// DriverPolicyRules are the policy's checks: each names what it refuses.
// Every check runs once per ServiceAccount of the request's namespace
// (params): "params is not the target, or is a guest credential's"
// refuses a target that exists and is not this tool's guest
// ServiceAccount. A check cannot see that no param is the target (each
// sees one), so a token Secret must carry its target's UID: one for a
// name nobody has carries a UID nobody has, and Kubernetes' token
// controller fills it for no ServiceAccount and deletes it (BoundTo).
func driverPolicyValidations(d DriverIdentity) []admissionv1.Validation {
	labels := func(obj string) string {
		return fmt.Sprintf("has(%[1]s.metadata.labels) && %[2]s in %[1]s.metadata.labels && %[1]s.metadata.labels[%[2]s] == %[3]s && %[4]s in %[1]s.metadata.labels",
			obj, cel(addons.LabelManagedBy), cel(addons.ManagedBy), cel(LabelCluster))
	}
	issued := fmt.Sprintf("%[1]s in object.metadata.labels && object.metadata.labels[%[1]s] == %[2]s", cel(LabelIssuedBy), cel(d.LabelValue()))
	guestParam := labels("params")
	tokenSecret := fmt.Sprintf("request.resource.group == '' && request.resource.resource == 'secrets' && has(object.type) && object.type == %s", cel(string(corev1.SecretTypeServiceAccountToken)))
	annotation := func(key string) string {
		return fmt.Sprintf("(has(object.metadata.annotations) && %[1]s in object.metadata.annotations ? object.metadata.annotations[%[1]s] : '')", cel(key))
	}
	target, uid := annotation(corev1.ServiceAccountNameKey), annotation(corev1.ServiceAccountUIDKey)
	// An empty subresource is absent from the request, not "".
	subResource := "(has(request.subResource) ? request.subResource : '')"
	binding := "request.resource.group == 'rbac.authorization.k8s.io' && request.resource.resource == 'rolebindings'"
	oneSA := "has(object.subjects) && size(object.subjects) == 1 && object.subjects[0].kind == 'ServiceAccount'"
	guestLabels := fmt.Sprintf("the harvester-bootstrap labels %s=%s and %s", addons.LabelManagedBy, addons.ManagedBy, LabelCluster)
	return []admissionv1.Validation{
		{
			Expression: fmt.Sprintf("!(%s) || (%s && %s && object.metadata.name == %s + %s && %s != '')", tokenSecret, labels("object"), issued, target, cel(tokenSecretSuffix), uid),
			Message: fmt.Sprintf("the driver credential may make a service-account token Secret only for a guest credential of harvester-bootstrap: named <service account>%s, "+
				"with %s and %s=%s, and annotation %s the UID of that guest ServiceAccount",
				tokenSecretSuffix, guestLabels, LabelIssuedBy, d.LabelValue(), corev1.ServiceAccountUIDKey),
			Reason: ptrReason(metav1.StatusReasonForbidden),
		},
		{
			// The target by name or by UID: a ServiceAccount of this tool,
			// both its name and its UID. One that does not exist has no
			// params, but a token Secret carrying its UID is never filled.
			Expression: fmt.Sprintf("!(%[1]s) || (params.metadata.name != %[2]s && params.metadata.uid != %[3]s) || (params.metadata.name == %[2]s && params.metadata.uid == %[3]s && %[4]s)",
				tokenSecret, target, uid, guestParam),
			MessageExpression: fmt.Sprintf("params.metadata.name != %[1]s ? 'UID ' + %[2]s + ' is ServiceAccount ' + params.metadata.name + \"'s, not \" + %[1]s + \"'s: the driver credential may not make a token for it\" : "+
				"params.metadata.uid != %[2]s ? 'ServiceAccount ' + params.metadata.name + ' has UID ' + params.metadata.uid + ', not ' + %[2]s + ': %[4]s' : "+
				"'ServiceAccount ' + params.metadata.name + ' is not a guest credential of harvester-bootstrap (it lacks %[3]s): the driver credential may not make a token for it'", target, uid, guestLabels, refusedOtherUID),
			Reason: ptrReason(metav1.StatusReasonForbidden),
		},
		{
			Expression:        "request.resource.resource != 'serviceaccounts' || " + subResource + " != 'token' || params.metadata.name != request.name || (" + guestParam + ")",
			MessageExpression: "'ServiceAccount ' + params.metadata.name + ' is not a guest credential of harvester-bootstrap: the driver credential may not request a token for it'",
			Reason:            ptrReason(metav1.StatusReasonForbidden),
		},
		{
			Expression: "request.resource.resource != 'serviceaccounts' || " + subResource + " != '' || ((" + labels("object") + ") && (request.operation != 'UPDATE' || (" + labels("oldObject") + ")))",
			Message:    "the driver credential may make or change only the ServiceAccounts of harvester-bootstrap's guest credentials (" + guestLabels + ")",
			Reason:     ptrReason(metav1.StatusReasonForbidden),
		},
		{
			Expression: fmt.Sprintf("!(%[1]s) || (%[2]s && has(object.subjects[0].namespace) && object.subjects[0].namespace == object.metadata.namespace && object.roleRef.kind == 'ClusterRole' && "+
				"((object.roleRef.name == %[3]s && object.metadata.name == object.subjects[0].name + %[4]s) || (object.roleRef.name == %[5]s && object.metadata.name == object.subjects[0].name + %[6]s)) && %[7]s && %[8]s)",
				binding, oneSA, cel(harvester.CloudProviderRole), cel(cloudProviderBindingSuffix), cel(harvester.CSIDriverRole), cel(csiBindingSuffix), labels("object"), issued),
			Message: fmt.Sprintf("the driver credential may make only the RoleBindings of harvester-bootstrap's guest credentials: %s or %s bound to one ServiceAccount of the same namespace, named <service account>%s or <service account>%s, with %s and %s=%s",
				harvester.CloudProviderRole, harvester.CSIDriverRole, cloudProviderBindingSuffix, csiBindingSuffix, guestLabels, LabelIssuedBy, d.LabelValue()),
			Reason: ptrReason(metav1.StatusReasonForbidden),
		},
		{
			Expression:        fmt.Sprintf("!(%s) || !(%s) || params.metadata.name != object.subjects[0].name || (%s)", binding, oneSA, guestParam),
			MessageExpression: "'ServiceAccount ' + params.metadata.name + ' is not a guest credential of harvester-bootstrap: the driver credential may not bind a role to it'",
			Reason:            ptrReason(metav1.StatusReasonForbidden),
		},
		{
			// A KubeVirt VM may mount a ServiceAccount's token as a disk.
			Expression: "request.resource.resource != 'virtualmachines' || !has(object.spec) || !has(object.spec.template) || !has(object.spec.template.spec) || !has(object.spec.template.spec.volumes) || " +
				"object.spec.template.spec.volumes.all(v, !has(v.serviceAccount))",
			Message: "the driver credential may not give a VM a serviceAccount volume (it would carry that ServiceAccount's token)",
			Reason:  ptrReason(metav1.StatusReasonForbidden),
		},
	}
}

func ptrReason(r metav1.StatusReason) *metav1.StatusReason { return &r }

// BuildDriverPolicy builds the admission policy of driver credential d and
// its binding to the machine namespaces, both labelled with labels.
func BuildDriverPolicy(d DriverIdentity, machineNamespaces []string, labels map[string]string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionv1.Fail
	deny := admissionv1.DenyAction
	rule := func(group string, resources ...string) admissionv1.NamedRuleWithOperations {
		return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
			Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources},
		}}
	}
	tm := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: kind}
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   tm("ValidatingAdmissionPolicy"),
		ObjectMeta: metav1.ObjectMeta{Name: d.PolicyName(), Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			ParamKind:     &admissionv1.ParamKind{APIVersion: "v1", Kind: "ServiceAccount"},
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{
				rule("", "secrets", "serviceaccounts", "serviceaccounts/token"),
				rule(rbacv1.GroupName, "rolebindings"),
				rule("kubevirt.io", "virtualmachines"),
			}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "driver-credential", Expression: "request.userInfo.username == " + cel(d.Username())}},
			Validations:     driverPolicyValidations(d),
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   tm("ValidatingAdmissionPolicyBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: d.PolicyName(), Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: d.PolicyName(),
			// Every ServiceAccount of the request's namespace; none (not
			// even "default") refuses, failing closed.
			ParamRef: &admissionv1.ParamRef{Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: &deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: machineNamespaces,
			}}}},
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding
}

// IsGuestRole reports whether a RoleBinding's role is one a guest
// credential binds.
func IsGuestRole(ref rbacv1.RoleRef) bool {
	return ref.Kind == "ClusterRole" && (ref.Name == harvester.CloudProviderRole || ref.Name == harvester.CSIDriverRole)
}

// IsGuestBinding reports whether rb is a RoleBinding of a guest credential
// as BuildAccess makes it: this tool's labels, one ServiceAccount of its
// own namespace, the name derived from it and the role.
func IsGuestBinding(rb rbacv1.RoleBinding) bool {
	cluster, ok := rb.Labels[LabelCluster]
	if !ok || !IsOwned(rb.Labels, cluster) || !IsGuestRole(rb.RoleRef) {
		return false
	}
	a := Access{ClusterName: cluster, Namespace: rb.Namespace}
	if len(rb.Subjects) == 1 {
		a.ServiceAccount = rb.Subjects[0].Name
	}
	want := a.RoleBindingName()
	if rb.RoleRef.Name == harvester.CSIDriverRole {
		want = a.CSIRoleBindingName()
	}
	return bindsOnly(rb.Subjects, a) && rb.Name == want
}

// IsGuestTokenSecret reports whether sec is the token Secret of a guest
// credential as BuildAccess makes it.
func IsGuestTokenSecret(sec corev1.Secret) bool {
	cluster, ok := sec.Labels[LabelCluster]
	sa := sec.Annotations[corev1.ServiceAccountNameKey]
	return ok && IsOwned(sec.Labels, cluster) && sec.Type == corev1.SecretTypeServiceAccountToken &&
		sa != "" && sec.Name == (Access{ServiceAccount: sa}).TokenSecretName()
}
