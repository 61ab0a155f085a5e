package guest

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/doctor"
)

// TestDoctorStorage: the csi-storageclass row fails for a host StorageClass
// Harvester lacks and passes for its default; the volumes row fails while
// a hot-plugged volume's host PVC names a missing StorageClass (the cause
// named beside KubeVirt's volume status) and passes once the volume is replaced by
// one that binds and attaches.
func TestDoctorStorage(t *testing.T) {
	const cluster = "docst"
	_, machines := createPool(t, cluster, 1)
	node := machines[0]

	r := runDoctor(t, testContext(t), cluster, "--host-storage-class=no-such-class")
	if row := r.row(t, doctor.CheckCSIStorageClass); row.Status != doctor.Fail || !strings.Contains(row.Seen, "not on Harvester: no-such-class (--host-storage-class)") {
		t.Errorf("csi-storageclass with a missing class: %+v", row)
	}
	r = runDoctor(t, testContext(t), cluster)
	if row := r.row(t, doctor.CheckCSIStorageClass); row.Status != doctor.OK || !strings.Contains(row.Seen, "harvester-longhorn (Harvester's default") {
		t.Errorf("csi-storageclass by default: %+v", row)
	}
	if row := r.row(t, doctor.CheckVolumes); row.Status != doctor.OK || row.Seen != "no hot-plugged volume" {
		t.Errorf("volumes before any hot-plug: %+v", row)
	}

	// Inject: a host PVC of a StorageClass Harvester lacks, hot-plugged.
	addVolume(t, node, createHostPVC(t, "pvc-docst-bad", "missing-class"))
	r = waitRow(t, cluster, doctor.CheckVolumes, doctor.Fail)
	row := r.row(t, doctor.CheckVolumes)
	// KubeVirt v1.7's virt-controller (updateVolumeStatus in
	// pkg/virt-controller/watch/vmi/storage.go) reports the volume Pending
	// (PVCNotReady) until it has made the attachment Pod, which it makes for
	// a claim that is not bound too (VolumeReadyToAttachToNode asks only
	// whether a DataVolume populated it), then AttachedToNode; the Pod then
	// waits unscheduled for the claim. Either is what the row shows.
	pending := node + ": volume pvc-docst-bad Pending (PVCNotReady: PVC is in phase ClaimPending)"
	attached := node + ": volume pvc-docst-bad AttachedToNode (SuccessfulCreate: Created hotplug attachment pod hp-volume-"
	if !strings.Contains(row.Seen, pending) && !strings.Contains(row.Seen, attached) {
		t.Errorf("volumes row %q lacks %q or %q", row.Seen, pending, attached)
	}
	if want := `host PVC pvc-docst-bad is Pending: StorageClass "missing-class" not found on Harvester`; !strings.Contains(row.Seen, want) {
		t.Errorf("volumes row %q lacks %q", row.Seen, want)
	}
	if !strings.Contains(row.Fix, "create that StorageClass on Harvester") {
		t.Errorf("volumes fix: %q", row.Fix)
	}

	// Fix: detach it, delete it, attach a volume of Harvester's class.
	ctx := testContext(t)
	if err := env.virt.KubevirtV1().VirtualMachines(vmNamespace).RemoveVolume(ctx, node, &kubevirtv1.RemoveVolumeOptions{Name: "pvc-docst-bad"}); err != nil {
		t.Fatalf("removevolume: %v", err)
	}
	if err := env.kube.CoreV1().PersistentVolumeClaims(vmNamespace).Delete(ctx, "pvc-docst-bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	addVolume(t, node, createHostPVC(t, "pvc-docst-good", "harvester-longhorn"))
	// The row passes, with "no hot-plugged volume", between the removal
	// and the addition; only the new volume Ready is the fixed state.
	const fixed = "1 hot-plugged volumes Ready"
	waitRowWhere(t, cluster, doctor.CheckVolumes, "OK "+fixed, func(row doctor.Row) bool {
		return row.Status == doctor.OK && row.Seen == fixed
	})
	if err := env.virt.KubevirtV1().VirtualMachines(vmNamespace).RemoveVolume(ctx, node, &kubevirtv1.RemoveVolumeOptions{Name: "pvc-docst-good"}); err != nil {
		t.Errorf("removevolume: %v", err)
	}
}

// createHostPVC creates a block PVC as the CSI driver does on Harvester;
// it is deleted after the test.
func createHostPVC(t *testing.T, name, class string) string {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vmNamespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: ptr.To(class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := env.kube.CoreV1().PersistentVolumeClaims(vmNamespace).Create(testContext(t), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create host PVC %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = env.kube.CoreV1().PersistentVolumeClaims(vmNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// addVolume hot-plugs claim into the VM as the CSI driver does before
// Harvester 1.8 (addvolume; the volume named after the claim).
func addVolume(t *testing.T, vm, claim string) {
	t.Helper()
	opts := &kubevirtv1.AddVolumeOptions{Name: claim, Disk: &kubevirtv1.Disk{DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusSCSI}}},
		VolumeSource: &kubevirtv1.HotplugVolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			Hotpluggable: true, PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	if err := env.virt.KubevirtV1().VirtualMachines(vmNamespace).AddVolume(testContext(t), vm, opts); err != nil {
		t.Fatalf("addvolume %s to %s: %v", claim, vm, err)
	}
}
