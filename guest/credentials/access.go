package credentials

import (
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Input fields, as problems name them (a CLI renames them to its flags).
const (
	FieldClusterName    = "cluster name"
	FieldNamespace      = "namespace"
	FieldServiceAccount = "service account"
	FieldServer         = "server"
	FieldFormat         = "format"
	FieldCSIClusterWide = "cluster-wide CSI binding"
)

// Access names the Harvester-side identity of one guest cluster.
type Access struct {
	ClusterName    string // guest cluster name
	Namespace      string // Harvester namespace of the guest VMs
	ServiceAccount string // defaults to ClusterName
	// CSIClusterWide binds harvesterhci.io:csi-driver with a
	// ClusterRoleBinding, as Harvester's own kubeconfig endpoint does: the
	// token may then patch every VM and touch every snapshot in every
	// namespace. By default it is bound by a RoleBinding in Namespace, and
	// the few reads outside it come from the namespace's grant (grant.go).
	CSIClusterWide bool
	// IssuedBy is the LabelIssuedBy value of the node driver's credential
	// making the objects ("" for an admin): the driver's admission policy
	// refuses its token Secret and RoleBindings without it.
	IssuedBy string
}

// WithDefaults fills ServiceAccount from ClusterName.
func (a Access) WithDefaults() Access {
	if a.ServiceAccount == "" {
		a.ServiceAccount = a.ClusterName
	}
	return a
}

// Validate reports every problem at once.
func (a Access) Validate() error {
	var errs []error
	check := func(f, v string) {
		if v == "" {
			errs = append(errs, field.Problem(f, "required"))
		} else if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
			errs = append(errs, field.Invalid(f, v, "must be a DNS-1123 label (lower-case letters, digits, '-', at most 63 chars)"))
		}
	}
	// The cluster name labels every object (LabelCluster) unchanged: the
	// guest-cluster rule of internal/harvester, then, as it names the
	// default service account, a DNS-1123 label.
	if _, err := harvester.GuestClusterValue(a.ClusterName); err != nil {
		errs = append(errs, field.Invalid(FieldClusterName, a.ClusterName, "must be a DNS-1123 label (lower-case letters, digits, '-', at most 63 chars); "+
			"it is not even a label value, which it must be to label the cluster's objects unchanged"))
	} else {
		check(FieldClusterName, a.ClusterName)
	}
	check(FieldNamespace, a.Namespace)
	if a.ServiceAccount != "" {
		if msgs := validation.IsDNS1123Subdomain(a.ServiceAccount); len(msgs) > 0 {
			errs = append(errs, field.Invalid(FieldServiceAccount, a.ServiceAccount, "must be a DNS-1123 subdomain (lower-case letters, digits, '-', '.', at most %d characters)", MaxServiceAccountName))
		} else if err := a.validateDerivedNames(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MaxServiceAccountName is the longest service account name whose derived
// names are valid: the token Secret <sa>-token must be a DNS-1123
// subdomain of at most 253 characters.
const MaxServiceAccountName = validation.DNS1123SubdomainMaxLength - len(tokenSecretSuffix)

// validateDerivedNames checks the names of every object EnsureAccess
// creates, so an invalid one fails before the first API call instead of
// after the objects before it exist.
func (a Access) validateDerivedNames() error {
	var errs []error
	for _, d := range []struct {
		kind, name string
		check      func(string) []string
	}{
		{"token Secret", a.TokenSecretName(), validation.IsDNS1123Subdomain},
		{"RoleBinding", a.RoleBindingName(), path.IsValidPathSegmentName},
		{"RoleBinding", a.CSIRoleBindingName(), path.IsValidPathSegmentName},
		{"ClusterRoleBinding", a.ClusterRoleBindingName(), path.IsValidPathSegmentName},
	} {
		if msgs := d.check(d.name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(FieldServiceAccount, a.ServiceAccount,
				"at most %d characters: it names the %s %q, which is invalid (%s)", MaxServiceAccountName, d.kind, d.name, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

const tokenSecretSuffix = "-token"

// TokenSecretName is the kubernetes.io/service-account-token Secret.
func (a Access) TokenSecretName() string { return a.ServiceAccount + tokenSecretSuffix }

// RoleBindingName binds the cloud-provider role in the VM namespace.
func (a Access) RoleBindingName() string { return a.ServiceAccount + cloudProviderBindingSuffix }

// CSIRoleBindingName binds the CSI driver's role in the VM namespace.
func (a Access) CSIRoleBindingName() string { return a.ServiceAccount + csiBindingSuffix }

const (
	cloudProviderBindingSuffix = "-cloudprovider"
	csiBindingSuffix           = "-csi-driver"
)

// ClusterRoleBindingName binds the CSI driver's role cluster-wide (only
// with CSIClusterWide, and in credentials made before the RoleBinding);
// unique per namespace and service account.
func (a Access) ClusterRoleBindingName() string {
	return "harvester-bootstrap:" + a.Namespace + ":" + a.ServiceAccount + ":csi-driver"
}

// AccessObjects are the objects `kubeconfig` ensures on Harvester, in
// creation order: CSIRoleBinding by default, ClusterRoleBinding instead
// with CSIClusterWide (the other is nil).
type AccessObjects struct {
	ServiceAccount     *corev1.ServiceAccount
	RoleBinding        *rbacv1.RoleBinding
	CSIRoleBinding     *rbacv1.RoleBinding
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	TokenSecret        *corev1.Secret
}

// List is the objects in creation order, without the nil one.
func (o AccessObjects) List() []runtime.Object {
	out := []runtime.Object{o.ServiceAccount, o.RoleBinding}
	if o.CSIRoleBinding != nil {
		out = append(out, o.CSIRoleBinding)
	}
	if o.ClusterRoleBinding != nil {
		out = append(out, o.ClusterRoleBinding)
	}
	return append(out, o.TokenSecret)
}

// BoundTo is the token Secret sec bound to the ServiceAccount of UID uid
// (annotation kubernetes.io/service-account.uid; sec unchanged when uid is
// ""). kube-controller-manager's token controller fills such a Secret only
// while the ServiceAccount of its name has that UID, and deletes it
// otherwise (pkg/controller/serviceaccount/tokens_controller.go, syncSecret:
// getServiceAccount with the UID, then deleteToken): a ServiceAccount made
// later under the name has another UID and never gets its token into it.
// A driver credential's admission policy refuses a token Secret without
// the UID of the guest ServiceAccount it names (driverpolicy.go).
func BoundTo(sec *corev1.Secret, uid types.UID) *corev1.Secret {
	if uid == "" {
		return sec
	}
	out := sec.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[corev1.ServiceAccountUIDKey] = string(uid)
	return out
}

// BuildAccess builds the ServiceAccount, its bindings and token Secret
// (bound to the ServiceAccount's UID once it is known: BoundTo).
func BuildAccess(a Access) AccessObjects {
	labels := ownLabels(a.ClusterName)
	if a.IssuedBy != "" {
		labels[LabelIssuedBy] = a.IssuedBy
	}
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: a.ServiceAccount, Namespace: a.Namespace}}
	secretMeta := meta(a.TokenSecretName(), a.Namespace)
	secretMeta.Annotations = map[string]string{corev1.ServiceAccountNameKey: a.ServiceAccount}
	roleBinding := func(name, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: meta(name, a.Namespace),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subject,
		}
	}
	o := AccessObjects{
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(a.ServiceAccount, a.Namespace),
		},
		RoleBinding: roleBinding(a.RoleBindingName(), harvester.CloudProviderRole),
		TokenSecret: &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: secretMeta,
			Type:       corev1.SecretTypeServiceAccountToken,
		},
	}
	if !a.CSIClusterWide {
		o.CSIRoleBinding = roleBinding(a.CSIRoleBindingName(), harvester.CSIDriverRole)
		return o
	}
	o.ClusterRoleBinding = &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: meta(a.ClusterRoleBindingName(), ""),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: harvester.CSIDriverRole},
		Subjects:   subject,
	}
	return o
}
