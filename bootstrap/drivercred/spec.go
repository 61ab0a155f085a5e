// Package drivercred is the node driver's own credential on Harvester: a
// ServiceAccount with exactly the rights the driver uses (the list in
// internal/driverrights), granted by a Role in each namespace machines go
// into and one ClusterRole for the few cluster-scoped rights, and a token
// Secret whose token does not expire. Pure builders in spec.go and
// objects.go, API calls in harvester.go.
package drivercred

import (
	"errors"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/driverrights"
	"github.com/harvester-kit/harvester-machine/internal/field"
)

// Input fields, as problems name them (the CLI renames them to its flags).
const (
	FieldServiceAccount    = "driver service account"
	FieldNamespace         = "driver namespace"
	FieldMachineNamespaces = "machine namespace"
)

// DefaultServiceAccount names the driver's ServiceAccount by default.
const DefaultServiceAccount = "docker-machine-driver-harvester"

// Spec names one driver credential.
type Spec struct {
	ServiceAccount    string   // default DefaultServiceAccount
	Namespace         string   // of the ServiceAccount and its token Secret
	MachineNamespaces []string // where machines go (default: Namespace)
	CloudProvider     bool     // the machines use --harvester-cloud-provider
	StaticAddresses   bool     // the machines use --harvester-static-address-range
}

// WithDefaults fills the defaults and sorts the machine namespaces
// (duplicates dropped).
func (s Spec) WithDefaults() Spec {
	if s.ServiceAccount == "" {
		s.ServiceAccount = DefaultServiceAccount
	}
	if len(s.MachineNamespaces) == 0 && s.Namespace != "" {
		s.MachineNamespaces = []string{s.Namespace}
	}
	s.MachineNamespaces = slices.Compact(slices.Sorted(slices.Values(s.MachineNamespaces)))
	return s
}

// Validate reports every problem at once.
func (s Spec) Validate() error {
	var errs []error
	label := func(f, v string) {
		if v == "" {
			errs = append(errs, field.Problem(f, "required"))
		} else if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
			errs = append(errs, field.Invalid(f, v, "must be a DNS-1123 label (lower-case letters, digits, '-', at most 63 characters)"))
		}
	}
	label(FieldServiceAccount, s.ServiceAccount)
	label(FieldNamespace, s.Namespace)
	for _, ns := range s.MachineNamespaces {
		label(FieldMachineNamespaces, ns)
	}
	return errors.Join(errs...)
}

// TokenSecretName is the ServiceAccount's token Secret.
func (s Spec) TokenSecretName() string { return s.ServiceAccount + "-token" }

// RBACName names the Roles, RoleBindings, ClusterRole and
// ClusterRoleBinding (unique per ServiceAccount namespace and name).
func (s Spec) RBACName() string {
	return "harvester-bootstrap:driver:" + s.Namespace + ":" + s.ServiceAccount
}

// LabelValue is the credentials.LabelDriverCredential value of the
// credential.
func (s Spec) LabelValue() string { return s.Identity().LabelValue() }

// Identity is the credential's ServiceAccount.
func (s Spec) Identity() credentials.DriverIdentity {
	return credentials.DriverIdentity{Namespace: s.Namespace, ServiceAccount: s.ServiceAccount}
}

// Labels are on every object of the credential.
func (s Spec) Labels() map[string]string {
	return map[string]string{addons.LabelManagedBy: addons.ManagedBy, credentials.LabelDriverCredential: s.LabelValue()}
}

// Selector selects every object of the credential.
func (s Spec) Selector() string {
	return addons.LabelManagedBy + "=" + addons.ManagedBy + "," + credentials.LabelDriverCredential + "=" + s.LabelValue()
}

// Owns reports whether labels mark an object as this credential's.
func (s Spec) Owns(labels map[string]string) bool {
	return labels[addons.LabelManagedBy] == addons.ManagedBy && labels[credentials.LabelDriverCredential] == s.LabelValue()
}

// OwnsBinding reports whether rb is one of the credential's RoleBindings:
// its labels, the name it derives, its Role and its ServiceAccount alone.
func (s Spec) OwnsBinding(rb rbacv1.RoleBinding) bool {
	return s.Owns(rb.Labels) && rb.Name == s.RBACName() &&
		rb.RoleRef.Kind == "Role" && rb.RoleRef.Name == s.RBACName() &&
		len(rb.Subjects) == 1 && rb.Subjects[0].Kind == rbacv1.ServiceAccountKind &&
		rb.Subjects[0].Name == s.ServiceAccount && rb.Subjects[0].Namespace == s.Namespace
}

// Permissions are the rights granted: every machine's, the checks' and
// rm's repairs', and the cloud provider's when the machines use it, with the right to add
// guest ServiceAccounts to the machine namespaces' grants.
func (s Spec) Permissions() []driverrights.Permission {
	needs := []driverrights.Need{driverrights.Always, driverrights.Checks, driverrights.Repairs}
	if s.CloudProvider {
		needs = append(needs, driverrights.CloudProvider)
	}
	if s.StaticAddresses {
		needs = append(needs, driverrights.StaticAddresses)
	}
	out := driverrights.Of(needs...)
	if s.CloudProvider {
		out = append(out, credentials.GrantEdit(s.MachineNamespaces)...)
	}
	return out
}
