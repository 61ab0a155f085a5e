// Package driverrights is the one list of the Harvester API rights the
// node driver uses. The driver's pre-create check evaluates the credential
// against it, `harvester-bootstrap driver-credential` grants exactly it,
// and `harvester-bootstrap doctor` reports a driver credential that lacks
// or exceeds it: the three cannot drift apart.
package driverrights

import (
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Need says when the driver uses a permission.
type Need int

const (
	// Always: every machine (create, stop, start, remove, state).
	Always Need = iota
	// CloudProvider: only with --harvester-cloud-provider (the driver makes
	// or reuses the guest cluster's credential).
	CloudProvider
	// StaticAddresses: only with --harvester-static-address-range (the
	// address claims, ConfigMaps, are read, listed, watched and created;
	// the garbage collector removes them).
	StaticAddresses
	// Checks: reads of checks and diagnostics; when forbidden the driver
	// skips the check with a warning (or, for a watch, reads instead), so
	// they are granted, never required.
	Checks
	// Repairs: rm's repair of what Harvester leaves stuck (the finalizer
	// of the machine's orphaned VM instance). Granted, never required by
	// the pre-create check: without it only that rm fails, naming the
	// command an admin runs, so a credential made before it was added
	// still creates machines; `doctor` warns that it lacks it.
	Repairs
)

// Permission is one verb on one resource the driver uses.
type Permission struct {
	Verb, Group, Resource string
	Subresource           string // e.g. "status"; "" for the resource itself
	Name                  string // one object only (for example bind on one ClusterRole)
	ClusterScoped         bool   // granted by a ClusterRole; otherwise by a Role in each machine namespace
	Need                  Need
}

// String names the permission as in messages: "create secrets",
// "bind clusterroles.rbac.authorization.k8s.io harvesterhci.io:cloudprovider".
func (p Permission) String() string {
	resource := p.Resource
	if p.Subresource != "" {
		resource += "/" + p.Subresource
	}
	if p.Group != "" {
		resource += "." + p.Group
	}
	if p.Name != "" {
		resource += " " + p.Name
	}
	return p.Verb + " " + resource
}

// API groups of the list.
const (
	groupKubeVirt  = "kubevirt.io"
	groupHarvester = "harvesterhci.io"
	groupCNI       = "k8s.cni.cncf.io"
	groupRBAC      = "rbac.authorization.k8s.io"
	groupAuthz     = "authorization.k8s.io"
	groupStorage   = "storage.k8s.io"
)

// ServerVersionSetting is the Harvester Setting the driver reads to
// identify the cluster.
const ServerVersionSetting = "server-version"

// All is every permission the driver uses, in a fixed order.
func All() []Permission {
	var out []Permission
	add := func(need Need, p Permission, verbs ...string) {
		for _, v := range verbs {
			p.Verb, p.Need = v, need
			out = append(out, p)
		}
	}
	add(Always, Permission{Group: groupKubeVirt, Resource: "virtualmachines"}, "get", "list", "watch", "create", "update", "patch", "delete")
	add(Always, Permission{Group: groupKubeVirt, Resource: "virtualmachineinstances"}, "get", "list", "watch", "delete")
	add(Always, Permission{Resource: "secrets"}, "get", "list", "watch", "create", "patch", "delete")
	add(Always, Permission{Resource: "persistentvolumeclaims"}, "get", "list", "watch", "delete")
	add(Always, Permission{Group: groupHarvester, Resource: "virtualmachineimages"}, "get")
	add(Always, Permission{Group: groupHarvester, Resource: "keypairs"}, "get")
	add(Always, Permission{Group: groupCNI, Resource: "network-attachment-definitions"}, "get")

	// The guest cluster's credential, made as `harvester-bootstrap
	// kubeconfig` makes it (server-side apply: get, create, patch), and the
	// right to bind the two Harvester ClusterRoles by RoleBindings in the VM
	// namespace only. No right on any ClusterRole, and on ClusterRoleBindings
	// only GrantEdit's, by name: a patch of a ClusterRoleBinding's
	// ownerReferences alone passes RBAC's escalation check and lets the
	// garbage collector delete it. The guests' reads outside their namespace
	// are the namespace grant an admin makes (guest/credentials); the
	// driver only adds its guest ServiceAccount to it (GrantEdit).
	add(CloudProvider, Permission{Resource: "serviceaccounts"}, "get", "create", "patch")
	add(CloudProvider, Permission{Resource: "secrets"}, "patch")
	add(CloudProvider, Permission{Group: groupRBAC, Resource: "rolebindings"}, "get", "create", "patch")
	add(CloudProvider, Permission{Group: groupRBAC, Resource: "clusterroles", Name: harvester.CloudProviderRole}, "bind")
	add(CloudProvider, Permission{Group: groupRBAC, Resource: "clusterroles", Name: harvester.CSIDriverRole}, "bind")

	add(StaticAddresses, Permission{Resource: "configmaps"}, "get", "list", "watch", "create")

	// patch on VM instances: rm releases Harvester's finalizer
	// harvester.FinalizerBackfillMAC, and only it, from the machine's own
	// VM instance left running by `kubectl delete vm --cascade=orphan`,
	// once deleted: its handler needs the VM, which is gone, and would hold
	// the instance for ever. RBAC cannot narrow a patch to finalizers; the
	// driver may delete these instances anyway, and KubeVirt's admission
	// refuses a change of a VM instance's spec, or of its reserved
	// kubevirt.io/ labels, by anyone but KubeVirt's own components.
	add(Repairs, Permission{Group: groupKubeVirt, Resource: "virtualmachineinstances"}, "patch")

	// Checks: the cluster's identity and version, the namespace (a request
	// for namespace X is a request in X, so a Role grants it), storage
	// classes, the events explaining a VM that does not start, the
	// namespace's resource quotas, Harvester's memory-overhead and overcommit
	// settings, the hosts' vGPU capacity and architecture, and the rights review itself.
	add(Checks, Permission{Group: groupHarvester, Resource: "settings", Name: ServerVersionSetting, ClusterScoped: true}, "get")
	add(Checks, Permission{Resource: "namespaces"}, "get")
	add(Checks, Permission{Resource: "events"}, "list")
	add(Checks, Permission{Resource: "resourcequotas"}, "list")
	add(Checks, Permission{Group: groupHarvester, Resource: "settings", Name: harvester.SettingMemoryOverheadRatio, ClusterScoped: true}, "get")
	add(Checks, Permission{Group: groupHarvester, Resource: "settings", Name: harvester.SettingOvercommit, ClusterScoped: true}, "get")
	add(Checks, Permission{Resource: "nodes", ClusterScoped: true}, "list")
	add(Checks, Permission{Group: groupStorage, Resource: "storageclasses", ClusterScoped: true}, "get")
	add(Checks, Permission{Group: groupAuthz, Resource: "selfsubjectrulesreviews", ClusterScoped: true}, "create")
	add(Checks, Permission{Group: groupAuthz, Resource: "selfsubjectaccessreviews", ClusterScoped: true}, "create")
	// watch on the images, networks and key pair a machine is built from:
	// the pre-create check reads each with a watch that goes on, so Create
	// sees a change since without reading it again. Without the right the
	// driver gets them at the check and again at Create.
	add(Checks, Permission{Group: groupHarvester, Resource: "virtualmachineimages"}, "watch")
	add(Checks, Permission{Group: groupHarvester, Resource: "keypairs"}, "watch")
	add(Checks, Permission{Group: groupCNI, Resource: "network-attachment-definitions"}, "watch")
	return out
}

// GrantEdit are the rights, with CloudProvider, to name a new guest
// ServiceAccount in the namespace grant of each machine namespace: get and
// patch on the grant's bindings by name (bindings: the names of its
// ClusterRoleBinding, which its RoleBindings in the shared namespaces
// share), and bind on its ClusterRole and Role by name, without which
// RBAC's escalation check refuses a change of their subjects. All are
// granted by the ClusterRole (the RoleBindings live outside the machine
// namespaces). No create, update or delete, no other name; the driver's
// grant admission policy (guest/credentials) lets a patch change only the
// subjects, to guest ServiceAccounts of the namespace the name records.
// The names come from guest/credentials, which this package cannot import.
func GrantEdit(bindings []string, clusterRole, role string) []Permission {
	var out []Permission
	for _, resource := range []string{"clusterrolebindings", "rolebindings"} {
		for _, name := range bindings {
			for _, verb := range []string{"get", "patch"} {
				out = append(out, Permission{Verb: verb, Group: groupRBAC, Resource: resource, Name: name, ClusterScoped: true, Need: CloudProvider})
			}
		}
	}
	return append(out,
		Permission{Verb: "bind", Group: groupRBAC, Resource: "clusterroles", Name: clusterRole, ClusterScoped: true, Need: CloudProvider},
		Permission{Verb: "bind", Group: groupRBAC, Resource: "roles", Name: role, ClusterScoped: true, Need: CloudProvider})
}

// Of is the permissions of the given needs, in All's order.
func Of(needs ...Need) []Permission {
	var out []Permission
	for _, p := range All() {
		for _, n := range needs {
			if p.Need == n {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
