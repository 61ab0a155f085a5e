package bootstrap_test

import (
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/harvester-kit/harvester-machine/guest/apicalls"
	simfix "github.com/harvester-kit/harvester-machine/sim"
)

// TestGuestCredentialCoversThePinnedReleases: the credential `kubeconfig`
// creates allows every Harvester call of the pinned cloud provider and CSI
// driver (guest/apicalls) where the release makes it, and nothing beyond:
// no VM creation or deletion, no Secrets, nothing in another VM namespace. The
// reviews are SelfSubjectAccessReviews sent with the guest token itself.
func TestGuestCredentialCoversThePinnedReleases(t *testing.T) {
	ctx := ctxT(t)
	const vmNS, otherNS, cluster = "e2e-calls-vms", "default", "e2e-calls"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vmNS}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	file := tempFile(t, "cloud-config")
	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", vmNS, "-o", file)
	cfg, cs := guestClient(t, file)

	// The token authenticates: a real read of what the CSI driver reads first.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	settings := schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
	sv, err := dyn.Resource(settings).Get(ctx, "server-version", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("guest token: GET settings/server-version: %v", err)
	}
	if v, _, _ := unstructured.NestedString(sv.Object, "value"); v != simfix.ServerVersion {
		t.Errorf("server-version %q, want %q", v, simfix.ServerVersion)
	}
	vms := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	if _, err := dyn.Resource(vms).Namespace(vmNS).Get(ctx, "no-such-vm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("guest token: GET a missing VM: want NotFound (allowed), got %v", err)
	}

	// Every call is allowed where the release makes it. Each namespaced
	// call of the VM namespace is refused in any other VM namespace: the
	// credential is confined to its own (Harvester's endpoint binds the CSI
	// role cluster-wide; this project does not).
	for _, c := range apicalls.Calls {
		ra := authzv1.ResourceAttributes{Verb: c.Verb, Group: c.Group, Resource: c.Resource, Subresource: c.Subresource, Name: c.Name}
		switch {
		case c.Namespace != "":
			ra.Namespace = c.Namespace
		case !c.ClusterScoped:
			ra.Namespace = vmNS
		}
		if !allowed(t, ctx, cs, ra) {
			t.Errorf("%s %s: denied %+v (%s)", c.Component, releaseOf(c), ra, c.Why)
		}
		if !c.InVMNamespace() {
			continue
		}
		ra.Namespace = otherNS
		if allowed(t, ctx, cs, ra) {
			t.Errorf("%s %s in namespace %s: allowed; the credential must not reach beyond %s", c.Component, releaseOf(c), otherNS, vmNS)
		}
	}

	for _, ra := range []authzv1.ResourceAttributes{
		{Namespace: vmNS, Group: "kubevirt.io", Resource: "virtualmachines", Verb: "create"},
		{Namespace: vmNS, Group: "kubevirt.io", Resource: "virtualmachines", Verb: "delete"},
		{Namespace: vmNS, Group: "kubevirt.io", Resource: "virtualmachines", Verb: "update"},
		{Namespace: vmNS, Group: "kubevirt.io", Resource: "virtualmachineinstances", Verb: "delete"},
		{Namespace: vmNS, Group: "subresources.kubevirt.io", Resource: "virtualmachines", Subresource: "stop", Verb: "update"},
		{Namespace: vmNS, Resource: "secrets", Verb: "get"},
		{Namespace: vmNS, Resource: "secrets", Verb: "list"},
		{Namespace: vmNS, Resource: "secrets", Verb: "watch"},
		{Namespace: vmNS, Resource: "secrets", Verb: "get", Name: cluster + "-token"},
		{Namespace: vmNS, Resource: "serviceaccounts", Subresource: "token", Verb: "create"},
		{Namespace: vmNS, Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verb: "create"},
		{Namespace: otherNS, Resource: "secrets", Verb: "get"},
		{Namespace: otherNS, Group: "kubevirt.io", Resource: "virtualmachines", Verb: "delete"},
		{Namespace: otherNS, Resource: "persistentvolumeclaims", Verb: "list"},
		{Namespace: otherNS, Group: "kubevirt.io", Resource: "virtualmachines", Verb: "patch"},
		{Namespace: otherNS, Resource: "persistentvolumeclaims", Verb: "create"},
		{Namespace: otherNS, Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots", Verb: "get"},
		{Namespace: apicalls.HarvesterNamespace, Group: "kubevirt.io", Resource: "virtualmachines", Verb: "patch"},
		{Namespace: apicalls.LonghornNamespace, Group: "longhorn.io", Resource: "volumes", Verb: "update"},
		{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "create"},
		{Namespace: simfix.SystemNamespace, Group: "loadbalancer.harvesterhci.io", Resource: "loadbalancers", Verb: "list"},
		{Group: "harvesterhci.io", Resource: "settings", Verb: "update", Name: "server-version"},
		{Group: "loadbalancer.harvesterhci.io", Resource: "ippools", Verb: "list"},
		{Resource: "nodes", Verb: "list"},
	} {
		if allowed(t, ctx, cs, ra) {
			t.Errorf("allowed but should be denied: %+v", ra)
		}
	}
	if _, err := cs.CoreV1().Secrets(vmNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("guest token: list secrets in the VM namespace: want Forbidden, got %v", err)
	}
}

func releaseOf(c apicalls.Call) string {
	if c.Component == apicalls.CCM {
		return apicalls.CloudProviderRelease
	}
	return apicalls.CSIDriverRelease
}
