package sim_test

import (
	"context"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	simfix "github.com/harvester-kit/harvester-machine/sim"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	restoreGVR = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "volumeremoterestores"}
	nfsGVR     = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "networkfilesystems"}
	lhVolGVR   = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "volumes"}
)

type guestClients struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	virt kubevirt.Interface
}

// guestToken makes a ServiceAccount in a namespace of its own bound as
// `harvester-bootstrap kubeconfig` binds a guest cluster's (cloudprovider
// by RoleBinding in the VM namespace, csi-driver cluster-wide) and returns
// clients with its token; everything is deleted when the test ends.
func guestToken(t *testing.T, ctx context.Context, namespace string) guestClients {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "guest", Namespace: ns.Name}}
	if _, err := kube.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns.Name}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "guest-cloudprovider", Namespace: ns.Name}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: harvester.CloudProviderRole}}
	if _, err := kube.RbacV1().RoleBindings(ns.Name).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: namespace + "-csi"}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: harvester.CSIDriverRole}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), crb.Name, metav1.DeleteOptions{})
	})
	tok, err := kube.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa.Name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := tokenConfig(t, tok.Status.Token)
	g := guestClients{kube: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg), virt: kubevirt.NewForConfigOrDie(cfg)}
	// kube-apiserver authorizes from RBAC informers: wait until both new
	// bindings are in them, or the first request may be refused.
	for _, ra := range []authzv1.ResourceAttributes{
		{Namespace: ns.Name, Verb: "list", Group: "loadbalancer.harvesterhci.io", Resource: "loadbalancers"}, // the RoleBinding
		{Namespace: ns.Name, Verb: "get", Group: restoreGVR.Group, Resource: restoreGVR.Resource},            // the ClusterRoleBinding
	} {
		if err := simtest.WaitAuthorized(ctx, g.kube, ra, true); err != nil {
			t.Fatalf("the guest's bindings: %v", err)
		}
	}
	return g
}

// tokenConfig is a client configuration for the simulator with a bearer
// token and nothing of the admin's credentials.
func tokenConfig(t *testing.T, token string) *rest.Config {
	t.Helper()
	admin, err := simulator.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = token
	return cfg
}

// TestGuestRightsAreHarvesters: a guest's token meets what Harvester v1.8
// answers the CSI driver and cloud provider: the remote-restore check is a
// 404, server-version is readable (harvester-authenticated) but no other
// setting outside the CSI driver's two, the start-up lists succeed.
func TestGuestRightsAreHarvesters(t *testing.T) {
	const guestRBACNamespace = "e2e-guest-rbac"
	ctx := testContext(t)
	g := guestToken(t, ctx, guestRBACNamespace)
	if _, err := g.dyn.Resource(restoreGVR).Namespace(guestRBACNamespace).Get(ctx, "pvc-x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("GET volumeremoterestores/pvc-x: %v, want NotFound (as DeleteVolume expects)", err)
	}
	sv, err := g.dyn.Resource(settingGVR).Get(ctx, "server-version", metav1.GetOptions{})
	if err != nil {
		t.Errorf("GET settings/server-version: %v, want it allowed (harvester-authenticated)", err)
	} else if v, _, _ := unstructured.NestedString(sv.Object, "value"); v != simfix.ServerVersion {
		t.Errorf("server-version %q, want %q", v, simfix.ServerVersion)
	}
	for _, name := range []string{"http-proxy", "backup-target", harvester.SettingOvercommit} {
		if _, err := g.dyn.Resource(settingGVR).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("GET settings/%s: %v, want Forbidden", name, err)
		}
	}
	if _, err := g.dyn.Resource(settingGVR).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list settings: %v, want Forbidden", err)
	}
	if _, err := g.dyn.Resource(settingGVR).Get(ctx, "csi-driver-config", metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("GET settings/csi-driver-config: %v, want it allowed", err)
	}
	if _, err := g.dyn.Resource(nfsGVR).Namespace(simfix.SystemNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list networkfilesystems in %s: %v", simfix.SystemNamespace, err)
	}
	if _, err := g.dyn.Resource(lhVolGVR).Namespace(simfix.LonghornNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list longhorn volumes in %s: %v", simfix.LonghornNamespace, err)
	}
	if _, err := g.kube.CoreV1().ConfigMaps(harvester.PublicNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list configmaps in %s (view for every authenticated user): %v", harvester.PublicNamespace, err)
	}
	for _, ra := range []authzv1.ResourceAttributes{
		{Group: "snapshot.storage.k8s.io", Resource: "volumesnapshotclasses", Verb: "list"},
		{Namespace: guestRBACNamespace, Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots", Subresource: "status", Verb: "update"},
		{Namespace: guestRBACNamespace, Group: "harvesterhci.io", Resource: "volumeremotebackups", Verb: "create"},
	} {
		review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}
		res, err := g.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil || !res.Status.Allowed {
			t.Errorf("csi-driver right %+v: allowed=%v (%v), want allowed as in Harvester's role", ra, res != nil && res.Status.Allowed, err)
		}
	}
}

// TestVMIHotplugOnVMOwnedVMIRefused: virt-api under Harvester 1.8's gates
// refuses addvolume/removevolume on a VMI its VM controls; the VM's own
// subresource still takes the request.
func TestVMIHotplugOnVMOwnedVMIRefused(t *testing.T) {
	ctx := testContext(t)
	g := guestToken(t, ctx, "e2e-guest-hotplug")
	vm := limitsVM("hotplug-owned", "1", "1Gi")
	vm.Namespace = "e2e-guest-hotplug"
	always := kubevirtv1.RunStrategyAlways
	vm.Spec.RunStrategy = &always
	createVM(t, ctx, vm)
	if err := simtest.WaitObject(ctx, dyn, vmiGVR, vm.Namespace, vm.Name, func(u *unstructured.Unstructured) bool { return u != nil }); err != nil {
		t.Fatalf("the VM's VMI: %v", err)
	}
	opts := &kubevirtv1.AddVolumeOptions{Name: "pvc-hot", Disk: &kubevirtv1.Disk{DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: "scsi"}}},
		VolumeSource: &kubevirtv1.HotplugVolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-hot"}}}}
	want := "VMI " + vm.Namespace + "/" + vm.Name + " is owned by a VM"
	vmis := g.virt.KubevirtV1().VirtualMachineInstances(vm.Namespace)
	if err := vmis.AddVolume(ctx, vm.Name, opts); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("VMI addvolume: %v, want 400 %q", err, want)
	}
	if err := vmis.RemoveVolume(ctx, vm.Name, &kubevirtv1.RemoveVolumeOptions{Name: "pvc-hot"}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("VMI removevolume: %v, want 400 %q", err, want)
	}
	if err := g.virt.KubevirtV1().VirtualMachines(vm.Namespace).AddVolume(ctx, vm.Name, opts); err != nil {
		t.Errorf("VM addvolume: %v, want accepted", err)
	}
}
