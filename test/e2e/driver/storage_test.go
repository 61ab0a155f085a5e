package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// guestClients are the clients the CSI driver and the CCM build from the
// guest cluster's cloud-config.
type guestClients struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	virt kubevirt.Interface
}

func newGuestClients(t *testing.T, kc []byte) guestClients {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatalf("guest kubeconfig: %v", err)
	}
	var g guestClients
	if g.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if g.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if g.virt, err = kubevirt.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return g
}

// k3sNode creates one K3s machine with the cloud provider and returns its
// name and the credential the driver wrote into its cloud-init.
func k3sNode(t *testing.T, cluster string) (string, []byte) {
	t.Helper()
	r := newRM(t, cluster)
	names := createPoolAtOnce(t, r, 1, "--harvester-cloud-provider=k3s",
		"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")
	t.Cleanup(func() {
		_, _ = r.run(append([]string{"rm", "-y"}, names...)...)
		bootstrap(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", namespace)
	})
	return names[0], checkNodeFiles(t, nodefiles.K3s, cluster, readNodeCloudInit(t, names[0]))
}

// TestCSIHotplugWithGuestCredential plays the CSI driver v0.2.9's
// controller with the credential a K3s node got: create the host PVC, wait
// for Bound, hot-plug it into the node's VM (addvolume before Harvester 1.8,
// a JSON patch of the VM from 1.8), see it attached in VM and VMI, detach,
// delete the PVC; nothing is left. Another cluster's credential is refused.
//
// Sequential: it revokes a credential in namespace default, and revoke
// deletes the namespace's guest grant once no credential is left there
// (credentials.DropGrantIfUnused), racing another test's credential on its
// way.
func TestCSIHotplugWithGuestCredential(t *testing.T) {
	node, kc := k3sNode(t, "csi-k3s")
	g := newGuestClients(t, kc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	settings := schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
	if _, err := g.dyn.Resource(settings).Get(ctx, "server-version", metav1.GetOptions{}); err != nil {
		t.Fatalf("CSI start: get settings/server-version: %v", err)
	}
	t.Run("addvolume", func(t *testing.T) {
		claim := csiCreateVolume(ctx, t, g)
		opts := &kubevirtv1.AddVolumeOptions{Name: claim,
			Disk:         &kubevirtv1.Disk{DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusSCSI}}},
			VolumeSource: &kubevirtv1.HotplugVolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		if err := g.virt.KubevirtV1().VirtualMachines(namespace).AddVolume(ctx, node, opts); err != nil {
			t.Fatalf("addvolume: %v", err)
		}
		st := waitAttached(ctx, t, g, node, claim, true)
		if st.Target == "" || st.HotplugVolume == nil || st.HotplugVolume.AttachPodName == "" || st.PersistentVolumeClaimInfo == nil {
			t.Errorf("volume status of %s: %+v, want a target, hotplugVolume and the claim's info", claim, st)
		}
		if err := g.virt.KubevirtV1().VirtualMachines(namespace).AddVolume(ctx, node, opts); !apierrors.IsConflict(err) ||
			!strings.Contains(err.Error(), "Unable to add volume ["+claim+"] because volume with that name already exists") {
			t.Errorf("addvolume twice: %v, want 409 with virt-api's message", err)
		}
		if err := g.virt.KubevirtV1().VirtualMachines(namespace).RemoveVolume(ctx, node, &kubevirtv1.RemoveVolumeOptions{Name: claim}); err != nil {
			t.Fatalf("removevolume: %v", err)
		}
		waitAttached(ctx, t, g, node, claim, false)
		csiDeleteVolume(ctx, t, g, claim)
	})
	t.Run("declarative 1.8", func(t *testing.T) {
		claim := csiCreateVolume(ctx, t, g)
		vm, err := g.virt.KubevirtV1().VirtualMachines(namespace).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		add := []map[string]any{
			{"op": "add", "path": "/spec/template/spec/volumes/-", "value": kubevirtv1.Volume{Name: claim, VolumeSource: kubevirtv1.VolumeSource{
				PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
			{"op": "add", "path": "/spec/template/spec/domain/devices/disks/-", "value": kubevirtv1.Disk{Name: claim,
				DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusSCSI}}}},
		}
		patchVM(ctx, t, g, node, add)
		waitAttached(ctx, t, g, node, claim, true)
		vol, disk := len(vm.Spec.Template.Spec.Volumes), len(vm.Spec.Template.Spec.Domain.Devices.Disks)
		patchVM(ctx, t, g, node, []map[string]any{
			{"op": "test", "path": fmt.Sprintf("/spec/template/spec/volumes/%d/name", vol), "value": claim},
			{"op": "remove", "path": fmt.Sprintf("/spec/template/spec/volumes/%d", vol)},
			{"op": "test", "path": fmt.Sprintf("/spec/template/spec/domain/devices/disks/%d/name", disk), "value": claim},
			{"op": "remove", "path": fmt.Sprintf("/spec/template/spec/domain/devices/disks/%d", disk)},
		})
		waitAttached(ctx, t, g, node, claim, false)
		csiDeleteVolume(ctx, t, g, claim)
	})
	t.Run("another cluster's credential", func(t *testing.T) {
		other := "csi-other-ns"
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "cloud-config")
		bootstrap(t, "kubeconfig", "--cluster-name", "csi-other", "--namespace", other, "-o", out)
		t.Cleanup(func() { bootstrap(t, "kubeconfig", "revoke", "--cluster-name", "csi-other", "--namespace", other) })
		okc, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		o := newGuestClients(t, okc)
		_, err = o.kube.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, hostPVC("pvc-refused", "harvester-longhorn"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("another cluster creates a PVC in %s: %v, want Forbidden", namespace, err)
		}
		err = o.virt.KubevirtV1().VirtualMachines(namespace).AddVolume(ctx, node, &kubevirtv1.AddVolumeOptions{Name: "x",
			Disk:         &kubevirtv1.Disk{},
			VolumeSource: &kubevirtv1.HotplugVolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "x"}}}})
		if !apierrors.IsForbidden(err) {
			t.Errorf("another cluster's addvolume on %s: %v, want Forbidden", node, err)
		}
		if _, err := o.virt.KubevirtV1().VirtualMachineInstances(namespace).GuestOsInfo(ctx, node); !apierrors.IsForbidden(err) {
			t.Errorf("another cluster's guestosinfo on %s: %v, want Forbidden", node, err)
		}
	})
	t.Run("guestosinfo", func(t *testing.T) {
		info, err := g.virt.KubevirtV1().VirtualMachineInstances(namespace).GuestOsInfo(ctx, node)
		if err != nil {
			t.Fatalf("guestosinfo as the CCM asks: %v", err)
		}
		if info.Hostname != node || info.OS.Name != "Ubuntu" || info.OS.VersionID != "22.04" || !strings.HasSuffix(info.OS.KernelRelease, "-generic") || info.GAVersion == "" {
			t.Errorf("guestosinfo: %+v, want hostname %s and the Ubuntu 22.04 image's OS", info, node)
		}
	})
	pvcs, err := kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pvcs.Items {
		if strings.HasPrefix(p.Name, "pvc-csi-") {
			t.Errorf("PVC %s left behind", p.Name)
		}
	}
}

// csiCreateVolume is CreateVolume: a PVC named after the guest volume with
// the host StorageClass, then wait for Bound (as ControllerPublishVolume needs).
func csiCreateVolume(ctx context.Context, t *testing.T, g guestClients) string {
	t.Helper()
	if _, err := g.kube.StorageV1().StorageClasses().Get(ctx, "harvester-longhorn", metav1.GetOptions{}); err != nil {
		t.Fatalf("get host storage class: %v", err)
	}
	name := fmt.Sprintf("pvc-csi-%d", time.Now().UnixNano())
	if _, err := g.kube.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, hostPVC(name, "harvester-longhorn"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create host PVC: %v", err)
	}
	t.Cleanup(func() { deletePVC(context.WithoutCancel(ctx), name) })
	pvcKind := kubeapi.KindOf("PVC", &corev1.PersistentVolumeClaim{}, g.kube.CoreV1().PersistentVolumeClaims(namespace))
	if _, err := kubeapi.Wait(ctx, pvcKind, namespace, name, 0, func(p *corev1.PersistentVolumeClaim) (bool, error) {
		return p.Status.Phase == corev1.ClaimBound, nil
	}); err != nil {
		t.Fatalf("host PVC %s not Bound: %v", name, err)
	}
	if _, err := g.kube.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list volumeattachments: %v", err)
	}
	return name
}

func hostPVC(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: ptr.To(class),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// csiDeleteVolume is DeleteVolume: the remote-restore lookup, then delete
// the PVC and see it (and its volume) gone.
func csiDeleteVolume(ctx context.Context, t *testing.T, g guestClients, name string) {
	t.Helper()
	// DeleteVolume's first call (v0.2.9): a restore of that name? 404 lets
	// the delete go on; any other answer (403 with a narrower credential)
	// aborts it.
	restores := schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "volumeremoterestores"}
	if _, err := g.dyn.Resource(restores).Namespace(namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("DeleteVolume: get volumeremoterestores/%s: %v, want NotFound", name, err)
	}
	pvc, err := g.kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.kube.CoreV1().PersistentVolumeClaims(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete host PVC: %v", err)
	}
	pvcKind := kubeapi.KindOf("PVC", &corev1.PersistentVolumeClaim{}, g.kube.CoreV1().PersistentVolumeClaims(namespace))
	if _, err := kubeapi.Wait(ctx, pvcKind, namespace, name, 0, func(p *corev1.PersistentVolumeClaim) (bool, error) { return p == nil, nil }); err != nil {
		t.Fatalf("host PVC %s not gone: %v", name, err)
	}
	pvKind := kubeapi.KindOf("PV", &corev1.PersistentVolume{}, kube.CoreV1().PersistentVolumes())
	if _, err := kubeapi.Wait(ctx, pvKind, "", pvc.Spec.VolumeName, 0, func(p *corev1.PersistentVolume) (bool, error) { return p == nil, nil }); err != nil {
		t.Fatalf("volume %s of %s not gone: %v", pvc.Spec.VolumeName, name, err)
	}
}

func patchVM(ctx context.Context, t *testing.T, g guestClients, name string, ops []map[string]any) {
	t.Helper()
	data, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.virt.KubevirtV1().VirtualMachines(namespace).Patch(ctx, name, types.JSONPatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch VM %s: %v", name, err)
	}
}

// waitAttached is the CSI driver's attach check: the volume in the VM's
// spec and in the VMI (with status Ready); or, detaching, in neither. It
// watches the VMI with the guest credential.
func waitAttached(ctx context.Context, t *testing.T, g guestClients, node, claim string, want bool) kubevirtv1.VolumeStatus {
	t.Helper()
	var st kubevirtv1.VolumeStatus
	vmiKind := kubeapi.KindOf("VMI", &kubevirtv1.VirtualMachineInstance{}, g.virt.KubevirtV1().VirtualMachineInstances(namespace))
	_, err := kubeapi.Wait(ctx, vmiKind, namespace, node, 0, func(vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
		if vmi == nil {
			return false, fmt.Errorf("VMI %s is gone", node)
		}
		inSpec := hasVolume(vmi.Spec.Volumes, claim)
		st = kubevirtv1.VolumeStatus{}
		for _, s := range vmi.Status.VolumeStatus {
			if s.Name == claim {
				st = s
			}
		}
		if want {
			return inSpec && st.Phase == kubevirtv1.VolumeReady, nil
		}
		return !inSpec && st.Name == "", nil
	})
	if err != nil {
		t.Fatalf("volume %s attached=%v in VMI %s: %v", claim, want, node, err)
	}
	// The VM controller updates the VMI's spec before it drops the VM's
	// volume request.
	var inSpec bool
	var pending []kubevirtv1.VirtualMachineVolumeRequest
	_, err = kubeapi.Wait(ctx, vmKind(), namespace, node, 0, func(vm *kubevirtv1.VirtualMachine) (bool, error) {
		if vm == nil {
			return false, fmt.Errorf("VM %s is gone", node)
		}
		inSpec, pending = hasVolume(vm.Spec.Template.Spec.Volumes, claim), vm.Status.VolumeRequests
		return inSpec == want && len(pending) == 0, nil
	})
	if err != nil {
		t.Fatalf("VM %s: volume %s in spec=%v (want %v), pending requests %v: %v", node, claim, inSpec, want, pending, err)
	}
	return st
}

func hasVolume(vols []kubevirtv1.Volume, claim string) bool {
	for _, v := range vols {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim && v.PersistentVolumeClaim.Hotpluggable {
			return true
		}
	}
	return false
}

// TestHotplugErrorsAndLifecycleSubresources: virt-api's answers for a name
// already taken (409), a claim that does not exist or is not Bound
// (accepted, then Pending in the VMI with KubeVirt's reason), a missing
// body (400), a name that is no DNS-1123 label (422); and
// start/stop/restart as KubeVirt's subresources.
func TestHotplugErrorsAndLifecycleSubresources(t *testing.T) {
	t.Parallel()
	r := newRM(t, "hp-errors")
	node := createPoolAtOnce(t, r, 1, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vms := virt.KubevirtV1().VirtualMachines(namespace)
	// A SCSI disk, as the driver and the CSI plug-in ask: with Harvester's
	// DeclarativeHotplugVolumes, virt-controller copies the VM's new disk
	// to the VMI (pkg/storage/hotplug patchHotplugVolumes), and KubeVirt's
	// VMI update admitter refuses a hot-plugged disk without a disk or LUN
	// device (pkg/storage/admitters ValidateHotplugDiskConfiguration:
	// "requires diskDevice of type 'disk' or 'lun'"): an empty Disk never
	// reaches the VMI.
	scsi := kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusSCSI}}
	add := func(name, claim string) error {
		return vms.AddVolume(ctx, node, &kubevirtv1.AddVolumeOptions{Name: name, Disk: &kubevirtv1.Disk{DiskDevice: scsi},
			VolumeSource: &kubevirtv1.HotplugVolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}})
	}
	rootVolume := getVM(t, node).Spec.Template.Spec.Volumes[0].Name
	if err := add(rootVolume, "other"); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Unable to add volume ["+rootVolume+"] because volume with that name already exists") {
		t.Errorf("addvolume with a taken name: %v, want 409", err)
	}
	if err := vms.RemoveVolume(ctx, node, &kubevirtv1.RemoveVolumeOptions{Name: rootVolume}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "because it is not hotpluggable") {
		t.Errorf("removevolume of the root disk: %v, want 409", err)
	}
	if err := vms.AddVolume(ctx, node, &kubevirtv1.AddVolumeOptions{Name: "x"}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "AddVolumeOptions requires disk to not be nil") {
		t.Errorf("addvolume without a disk: %v, want 400", err)
	}
	if err := add("missing", "no-such-claim"); err != nil {
		t.Fatalf("addvolume of a missing claim: %v (virt-api accepts it)", err)
	}
	pending := hostPVC("pvc-no-class", "no-such-class")
	if _, err := kube.CoreV1().PersistentVolumeClaims(namespace).Create(ctx, pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePVC(context.WithoutCancel(ctx), pending.Name) })
	if err := add("unbound", pending.Name); err != nil {
		t.Fatalf("addvolume of an unbound claim: %v", err)
	}
	want := map[string]string{"missing": "FailedPvcNotFound/PVC no-such-claim not found", "unbound": "PVCNotReady/PVC is in phase ClaimPending"}
	vmiKind := kubeapi.KindOf("VMI", &kubevirtv1.VirtualMachineInstance{}, virt.KubevirtV1().VirtualMachineInstances(namespace))
	_, err := kubeapi.Wait(ctx, vmiKind, namespace, node, 0, func(vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
		got := 0
		for _, s := range vmi.Status.VolumeStatus {
			if w, ok := want[s.Name]; ok && s.Phase == kubevirtv1.VolumePending && s.Reason+"/"+s.Message == w {
				got++
			}
		}
		return got == len(want), nil
	})
	if err != nil {
		t.Fatalf("pending hot-plugged volumes: %v; VMI volume status %+v", err, getVMI(t, node).Status.VolumeStatus)
	}
	for name := range want {
		if err := vms.RemoveVolume(ctx, node, &kubevirtv1.RemoveVolumeOptions{Name: name}); err != nil {
			t.Errorf("removevolume %s: %v", name, err)
		}
	}

	// Issue 30, 9: a name that is no DNS-1123 label is refused by KubeVirt's
	// VM webhook, and virt-api passes that on (422); nothing is requested.
	if err := add("../x", "other"); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `admission webhook "virtualmachine-validator.kubevirt.io" denied the request: a lowercase RFC 1123 label`) {
		t.Errorf("addvolume named ../x: %v, want 422 from the VM webhook", err)
	}
	for _, req := range getVM(t, node).Status.VolumeRequests {
		if req.AddVolumeOptions != nil && req.AddVolumeOptions.Name == "../x" {
			t.Errorf("the refused addvolume left a volume request: %+v", req.AddVolumeOptions)
		}
	}

	// Lifecycle: the driver's VMs run with RerunOnFailure.
	uid := getVMI(t, node).UID
	if err := vms.Start(ctx, node, &kubevirtv1.StartOptions{}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "VM is already running") {
		t.Errorf("start of a running VM: %v, want 409", err)
	}
	if err := vms.Restart(ctx, node, &kubevirtv1.RestartOptions{}); err != nil {
		t.Fatalf("restart: %v", err)
	}
	restarted, err := kubeapi.Wait(ctx, vmiKind, namespace, node, 0, func(vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
		return vmi != nil && vmi.UID != uid && vmi.Status.Phase == kubevirtv1.Running, nil
	})
	if err != nil {
		t.Fatalf("restart gives a new running VMI: %v", err)
	}
	if err := vms.Stop(ctx, node, &kubevirtv1.StopOptions{}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	// As in KubeVirt, the stop deletes the VMI and its guest shuts down:
	// Succeeded. Watched from the restarted VMI's version on, so that the
	// phase is seen even when the VMI is gone by the time the watch starts.
	if _, err := kubeapi.WaitFrom(ctx, vmiKind, node, restarted.ResourceVersion, func(vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
		if vmi == nil {
			return false, errors.New("the VMI was deleted before it was seen Succeeded")
		}
		return vmi.UID == restarted.UID && vmi.Status.Phase == kubevirtv1.Succeeded, nil
	}); err != nil {
		t.Fatalf("stop shuts the guest of VMI %s down: %v", restarted.UID, err)
	}
	if err := vms.Stop(ctx, node, &kubevirtv1.StopOptions{}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "VM is not running") {
		t.Errorf("stop of a stopped VM: %v, want 409", err)
	}
	// virt-api refuses a start while the consumed stop request is still in
	// the VM's status; the VM controller drops it after the VMI is final.
	if _, err := kubeapi.Wait(ctx, vmKind(), namespace, node, 0, func(vm *kubevirtv1.VirtualMachine) (bool, error) {
		return vm != nil && len(vm.Status.StateChangeRequests) == 0, nil
	}); err != nil {
		t.Fatalf("the stop request stays in VM %s's status: %v", node, err)
	}
	if err := vms.Start(ctx, node, &kubevirtv1.StartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	if _, err := kubeapi.Wait(ctx, vmiKind, namespace, node, 0, func(vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
		return vmi != nil && vmi.UID != restarted.UID && vmi.Status.Phase == kubevirtv1.Running, nil
	}); err != nil {
		t.Fatalf("start runs the VM again (a new VMI): %v", err)
	}
	if vm := getVM(t, node); len(vm.Status.StateChangeRequests) != 0 || vm.Spec.RunStrategy == nil || *vm.Spec.RunStrategy != kubevirtv1.RunStrategyRerunOnFailure {
		t.Errorf("after start: run strategy %v, pending requests %v; want RerunOnFailure kept and none pending", vm.Spec.RunStrategy, vm.Status.StateChangeRequests)
	}
}

// deletePVC removes a test's PVC after the test (NotFound is done); ctx
// must outlive the test's own.
func deletePVC(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = kube.CoreV1().PersistentVolumeClaims(namespace).Delete(ctx, name, metav1.DeleteOptions{})
}
