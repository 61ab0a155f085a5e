package simctl

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/sim/controllers"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

func getPVC(t *testing.T, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := env.kube.CoreV1().PersistentVolumeClaims(ns).Get(testContext(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pvc %s/%s: %v", ns, name, err)
	}
	return pvc
}

func pvcGone(t *testing.T, ns, name string) {
	t.Helper()
	gvr := corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	if err := simtest.WaitObject(testContext(t), env.dyn, gvr, ns, name, simtest.Gone); err != nil {
		t.Fatalf("pvc %s/%s not deleted: %v", ns, name, err)
	}
}

func owners(t *testing.T, pvc *corev1.PersistentVolumeClaim) []string {
	t.Helper()
	ann := pvc.Annotations[controllers.AnnOwnedBy]
	if ann == "" {
		return nil
	}
	var entries []struct {
		Schema string   `json:"schema"`
		Refs   []string `json:"refs"`
	}
	if err := json.Unmarshal([]byte(ann), &entries); err != nil {
		t.Fatalf("pvc %s owned-by annotation %q: %v", pvc.Name, ann, err)
	}
	var refs []string
	for _, e := range entries {
		if e.Schema == "kubevirt.io.virtualmachine" {
			refs = append(refs, e.Refs...)
		}
	}
	return refs
}

func TestDisksCreatedBoundAndRemovedByAnnotation(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	cluster := map[string]string{"guestcluster.harvesterhci.io/name": "c1"}
	createVM(t, ns, "vm", vmOpts{
		labels: cluster,
		claims: []corev1.PersistentVolumeClaim{
			claimTemplate("vm-disk-0", fixtureImage, cluster),
			claimTemplate("vm-data", "", cluster),
		},
		annotations: map[string]string{harvester.AnnotationRemovedPVCs: "vm-disk-0"},
	})
	waitVMI(t, ns, "vm", "Running", running)
	for _, name := range []string{"vm-disk-0", "vm-data"} {
		pvc := getPVC(t, ns, name)
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
			t.Fatalf("pvc %s: phase %s volume %q, want Bound", name, pvc.Status.Phase, pvc.Spec.VolumeName)
		}
		if got := owners(t, pvc); len(got) != 1 || got[0] != ns+"/vm" {
			t.Errorf("pvc %s owned by %v, want [%s/vm]", name, got, ns)
		}
		pv, err := env.kube.CoreV1().PersistentVolumes().Get(testContext(t), pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pv of %s: %v", name, err)
		}
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID || pv.Status.Phase != corev1.VolumeBound {
			t.Errorf("pv %s claimRef %+v phase %s", pv.Name, pv.Spec.ClaimRef, pv.Status.Phase)
		}
		if got, want := pvc.Status.Capacity[corev1.ResourceStorage], pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(want) != 0 {
			t.Errorf("pvc %s capacity %s, want %s", name, got.String(), want.String())
		}
	}
	if sc := getPVC(t, ns, "vm-disk-0").Spec.StorageClassName; sc == nil || *sc != "longhorn-ubuntu-22.04" {
		t.Errorf("image disk storage class = %v, want longhorn-ubuntu-22.04", sc)
	}
	pvName := getPVC(t, ns, "vm-disk-0").Spec.VolumeName

	deleteObject(t, gvrVM, ns, "vm")
	waitVM(t, ns, "vm", "deleted", func(v *kubevirtv1.VirtualMachine) bool { return v == nil })
	pvcGone(t, ns, "vm-disk-0")
	if err := simtest.WaitObject(testContext(t), env.dyn, corev1.SchemeGroupVersion.WithResource("persistentvolumes"), "", pvName, simtest.Gone); err != nil {
		t.Errorf("pv %s of the removed disk not deleted: %v", pvName, err)
	}
	kept := getPVC(t, ns, "vm-data")
	if kept.DeletionTimestamp != nil {
		t.Fatal("pvc vm-data not listed for removal is being deleted")
	}
	if got := owners(t, kept); len(got) != 0 {
		t.Errorf("kept pvc still owned by %v", got)
	}
}

func TestRemoveAllClaimsOfGuestCluster(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	c1 := map[string]string{"guestcluster.harvesterhci.io/name": "c1"}
	c2 := map[string]string{"guestcluster.harvesterhci.io/name": "c2"}
	createVM(t, ns, "a", vmOpts{labels: c1, claims: []corev1.PersistentVolumeClaim{claimTemplate("a-disk", fixtureImage, c1)}})
	createVM(t, ns, "b", vmOpts{labels: c2, claims: []corev1.PersistentVolumeClaim{claimTemplate("b-disk", fixtureImage, c2)}})
	// A hot-plugged CSI volume of the guest cluster, not in any template.
	_, err := env.kube.CoreV1().PersistentVolumeClaims(ns).Create(testContext(t), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-csi-volume", Labels: c1},
		Spec:       claimTemplate("x", "", nil).Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitVMI(t, ns, "a", "Running", running)
	waitVMI(t, ns, "b", "Running", running)

	patchVM(t, ns, "a", map[string]any{"metadata": map[string]any{"annotations": map[string]any{harvester.AnnotationRemoveAllPVCs: "true"}}})
	deleteObject(t, gvrVM, ns, "a")
	waitVM(t, ns, "a", "deleted", func(v *kubevirtv1.VirtualMachine) bool { return v == nil })
	pvcGone(t, ns, "a-disk")
	pvcGone(t, ns, "c1-csi-volume")
	if pvc := getPVC(t, ns, "b-disk"); pvc.DeletionTimestamp != nil {
		t.Error("pvc of another guest cluster is being deleted")
	}

	// Without removal annotations nothing is deleted.
	deleteObject(t, gvrVM, ns, "b")
	waitVM(t, ns, "b", "deleted", func(v *kubevirtv1.VirtualMachine) bool { return v == nil })
	if pvc := getPVC(t, ns, "b-disk"); pvc.DeletionTimestamp != nil {
		t.Error("pvc b-disk deleted although the VM named no claims to remove")
	}
}

func TestMissingDirectClaimBlocksStart(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createVM(t, ns, "vm", vmOpts{directClaims: []string{"existing-later"}})
	waitVM(t, ns, "vm", "ErrorPvcNotFound", printable(kubevirtv1.VirtualMachineStatusPvcNotFound))
	_, err := env.kube.CoreV1().PersistentVolumeClaims(ns).Create(testContext(t), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "existing-later"}, Spec: claimTemplate("x", "", nil).Spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitVMI(t, ns, "vm", "Running once the claim exists", running)
	// Harvester marks the owner on its own reconcile of the VM, which may
	// come after the VMI runs.
	waitOwners(t, ns, "existing-later", ns+"/vm")
}

// waitOwners waits until the PVC's owned-by annotation names exactly the
// given VMs, and fails naming the owners last seen.
func waitOwners(t *testing.T, ns, name string, want ...string) {
	t.Helper()
	var last []string
	gvr := corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	err := simtest.WaitObject(testContext(t), env.dyn, gvr, ns, name, func(u *unstructured.Unstructured) bool {
		if u == nil {
			return false
		}
		var pvc corev1.PersistentVolumeClaim
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pvc) != nil {
			return false
		}
		last = owners(t, &pvc)
		return slices.Equal(last, want)
	})
	if err != nil {
		t.Errorf("pvc %s/%s owned by %v, want %v: %v", ns, name, last, want, err)
	}
}

// TestClaimsBindAsOnHarvester: kube-controller-manager's
// persistentvolume-binder hands a claim of a Longhorn StorageClass to
// driver.longhorn.io (the simulator provisions it) and binds it; a claim
// naming a StorageClass that does not exist stays Pending with the event
// Kubernetes itself gives.
func TestClaimsBindAsOnHarvester(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	ctx := testContext(t)
	claims := env.kube.CoreV1().PersistentVolumeClaims(ns)
	for _, name := range []string{"good", "no-class"} {
		class := map[string]string{"good": "harvester-longhorn", "no-class": "no-such-class"}[name]
		pvc := claimTemplate(name, "", nil)
		pvc.Namespace, pvc.Spec.StorageClassName = ns, &class
		if _, err := claims.Create(ctx, &pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if msg := waitEvent(t, ns, "no-class", "ProvisioningFailed"); msg != `storageclass.storage.k8s.io "no-such-class" not found` {
		t.Errorf("ProvisioningFailed message %q", msg)
	}
	if msg := waitEvent(t, ns, "good", "ExternalProvisioning"); !strings.Contains(msg, "Waiting for a volume to be created either by the external provisioner 'driver.longhorn.io'") {
		t.Errorf("ExternalProvisioning message %q", msg)
	}
	good := waitFor(t, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), ns, "good", "Bound",
		func(p *corev1.PersistentVolumeClaim) bool { return p != nil && p.Status.Phase == corev1.ClaimBound })
	if good.Annotations["pv.kubernetes.io/bind-completed"] != "yes" || good.Spec.VolumeName != "pvc-"+string(good.UID) {
		t.Errorf("bound claim: annotations %v, volume %q", good.Annotations, good.Spec.VolumeName)
	}
	events, err := env.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Reason == "ProvisioningFailed" && ev.Source.Component != "persistentvolume-controller" {
			t.Errorf("ProvisioningFailed from %q, want kube-controller-manager's persistentvolume-controller", ev.Source.Component)
		}
	}
	if p := getPVC(t, ns, "no-class"); p.Status.Phase != corev1.ClaimPending || p.Spec.VolumeName != "" {
		t.Errorf("claim of a missing StorageClass: phase %s volume %q, want Pending without a volume", p.Status.Phase, p.Spec.VolumeName)
	}
}
