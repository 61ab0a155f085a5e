package driver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
)

// TestDeleteVolumeWaitsOutHarvesterRefusal: Harvester's webhook refuses to
// delete a volume that a VM not being deleted uses, with a 409 Conflict,
// the same code as a failed UID precondition. The driver once took that
// Conflict for "already gone": its rm of a VM without Harvester's
// finalizer deleted the VM, had the volume's delete refused (the webhook's
// cache had not seen the VM's deletion yet) and waited 10 minutes for a
// deletion never made. Now the refusal is reported, and tried again until
// the webhook lets it through.
func TestDeleteVolumeWaitsOutHarvesterRefusal(t *testing.T) {
	t.Parallel()
	const name = "e2e-refused"
	guestVolume(t, name+"-disk", "e2e-refused")
	vm := haltedVM(name)
	vm.Spec.Template.Spec.Domain.Devices.Disks = []kubevirtv1.Disk{{Name: "disk-0", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}}}
	vm.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{{Name: "disk-0", VolumeSource: kubevirtv1.VolumeSource{
		PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-disk"}}}}}
	vm, err := virt.KubevirtV1().VirtualMachines(namespace).Create(context.Background(), vm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc, err := kube.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), name+"-disk", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	api, err := harvesterapi.New(cfg, harvesterapi.Options{CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	// The VM is not being deleted: the webhook refuses for good, and the
	// delete says so when its time runs out. The time allows a refusal to
	// come back on a loaded machine: 5 s once ran out during the first
	// request (a slow 2-core machine running four simulators).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	err = api.DeletePVC(ctx, namespace, pvc.Name, pvc.UID)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "currently attached to VM: "+namespace+"/"+name) {
		t.Errorf("delete of a volume the VM uses: %v, want Harvester's refusal (currently attached to VM: %s/%s)", err, namespace, name)
	}
	if !pvcExists(t, pvc.Name) {
		t.Fatalf("the refused volume is gone or being deleted")
	}

	// Deleting the VM, then at once its volume, as rm does for a VM
	// without Harvester's finalizer: the volume goes.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := api.DeleteVM(ctx, namespace, name, vm.UID); err != nil {
		t.Fatal(err)
	}
	if err := api.DeletePVC(ctx, namespace, pvc.Name, pvc.UID); err != nil {
		t.Fatalf("delete of the volume of a VM being deleted: %v", err)
	}
	waitPVCGone(t, pvc.Name)
}
