package driver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// guestVolume makes a PVC like the guest cluster's CSI driver would: it
// carries the guest cluster label but is no disk of any VM.
func guestVolume(t *testing.T, name, cluster string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labelCluster: cluster}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(namespace).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func pvcExists(t *testing.T, name string) bool {
	t.Helper()
	p, err := kube.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), name, metav1.GetOptions{})
	return err == nil && p.DeletionTimestamp == nil
}

// TestRemoveKeepsHotplugAndGuestVolumes: a normal node delete removes the
// VM's own disks but neither its hot-plug disk nor the guest cluster's
// volumes.
func TestRemoveKeepsHotplugAndGuestVolumes(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-keep")
	name := "e2e-keep-pool1-h0000"
	disks := `{"disks":[{"imageName":"default/ubuntu-22.04","size":20,"bootOrder":1},{"storageClassName":"harvester-longhorn","size":2,"hotPlugAble":true}]}`
	r.mustCreate(name, "--harvester-disk-info="+disks, "--harvester-network-name=default/vlan1")
	guestVolume(t, "e2e-keep-csi-vol", "e2e-keep")

	r.mustRun("rm", "-y", "--update-config", name)
	if pvcExists(t, name+"-disk-0") {
		t.Errorf("the VM's root disk survived rm")
	}
	for _, keep := range []string{name + "-disk-1", "e2e-keep-csi-vol"} {
		if !pvcExists(t, keep) {
			t.Errorf("volume %s was removed by a normal node delete", keep)
		}
		_ = kube.CoreV1().PersistentVolumeClaims(namespace).Delete(context.Background(), keep, metav1.DeleteOptions{})
		waitPVCGone(t, keep)
	}
}

// TestRemoveAllGuestVolumes: with harvesterhci.io/removeAllPersistentVolumeClaims
// on the VM (Rancher deleting the cluster) every guest cluster volume goes.
func TestRemoveAllGuestVolumes(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-all")
	name := "e2e-all-pool1-a0000"
	r.mustCreate(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")
	guestVolume(t, "e2e-all-csi-vol", "e2e-all")
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vm := getVM(t, name)
		vm.Annotations["harvesterhci.io/removeAllPersistentVolumeClaims"] = "true"
		_, err := virt.KubevirtV1().VirtualMachines(namespace).Update(context.Background(), vm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r.mustRun("rm", "-y", "--update-config", name)
	for _, gone := range []string{name + "-disk-0", "e2e-all-csi-vol"} {
		if pvcExists(t, gone) {
			t.Errorf("volume %s survived the cluster delete", gone)
		}
	}
}
