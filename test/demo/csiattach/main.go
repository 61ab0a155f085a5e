// Command csiattach plays the Harvester CSI driver's controller (v0.2.9)
// for `make demo`: with the cloud-config the guest cluster's add-ons hold
// (the Secret kube-system/harvester-cloud-config) it creates a volume on
// Harvester and hot-plugs it into a guest node's VM, or detaches and
// deletes it again, with the API calls the driver makes: get the host
// StorageClass, create the host PVC and wait for Bound, PUT addvolume on
// the VM, wait until the VM and its VMI hold the volume (Ready); for
// detach, PUT removevolume, wait until it is gone, delete the PVC.
//
//	csiattach attach|detach --guest-kubeconfig FILE --node NODE --volume NAME [--host-storage-class SC] [--size 1Gi]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

const usage = "usage: csiattach attach|detach --guest-kubeconfig FILE --node NODE --volume NAME [--host-storage-class SC] [--size 1Gi]"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "csiattach:", err)
		os.Exit(1)
	}
}

// harvester is what the CSI driver's cloud-config connects to.
type harvester struct {
	kube      kubernetes.Interface
	virt      kubevirt.Interface
	namespace string
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "attach" && args[0] != "detach") {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("csiattach "+args[0], flag.ContinueOnError)
	guestKubeconfig := fs.String("guest-kubeconfig", "", "kubeconfig of the guest cluster")
	node := fs.String("node", "", "guest node (= VM) name")
	volume := fs.String("volume", "", "volume name (the CSI driver uses pvc-<guest PVC UID>)")
	class := fs.String("host-storage-class", "harvester-longhorn", "Harvester StorageClass of the volume")
	size := fs.String("size", "1Gi", "volume size")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var problems []error
	for _, f := range []struct{ name, value string }{{"--guest-kubeconfig", *guestKubeconfig}, {"--node", *node}, {"--volume", *volume}} {
		if f.value == "" {
			problems = append(problems, fmt.Errorf("%s is required", f.name))
		}
	}
	quantity, err := resource.ParseQuantity(*size)
	if err != nil {
		problems = append(problems, fmt.Errorf("--size %q: a quantity such as 1Gi", *size))
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := connect(ctx, *guestKubeconfig)
	if err != nil {
		return err
	}
	if args[0] == "detach" {
		return h.detach(ctx, *node, *volume)
	}
	return h.attach(ctx, *node, *volume, *class, quantity)
}

// connect reads the cloud-config Secret from the guest cluster and
// connects to Harvester with it.
func connect(ctx context.Context, guestKubeconfig string) (*harvester, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", guestKubeconfig)
	if err != nil {
		return nil, err
	}
	guest, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	secret, err := guest.CoreV1().Secrets(addons.DefaultNamespace).Get(ctx, addons.DefaultCloudConfigSecret, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the cloud-config Secret from the guest cluster: %w", err)
	}
	hcfg, ns, err := simtest.CloudConfigREST(secret.Data[addons.CloudConfigKey])
	if err != nil {
		return nil, err
	}
	h := &harvester{namespace: ns}
	if h.kube, err = kubernetes.NewForConfig(hcfg); err != nil {
		return nil, err
	}
	if h.virt, err = kubevirt.NewForConfig(hcfg); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *harvester) attach(ctx context.Context, node, volume, class string, size resource.Quantity) error {
	if _, err := h.kube.StorageV1().StorageClasses().Get(ctx, class, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("get host StorageClass: %w", err)
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: volume, Namespace: h.namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	claims := h.kube.CoreV1().PersistentVolumeClaims(h.namespace)
	if _, err := claims.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create host PVC: %w", err)
	}
	bound, err := kubeapi.Wait(ctx, kubeapi.KindOf("PVC", &corev1.PersistentVolumeClaim{}, claims), h.namespace, volume, 0,
		func(p *corev1.PersistentVolumeClaim) (bool, error) {
			return p != nil && p.Status.Phase == corev1.ClaimBound, nil
		})
	if err != nil {
		return fmt.Errorf("wait for host PVC %s Bound: %w", volume, err)
	}
	fmt.Printf("host PVC %s/%s (StorageClass %s, %s) Bound to %s\n", h.namespace, volume, class, size.String(), bound.Spec.VolumeName)
	opts := &kubevirtv1.AddVolumeOptions{Name: volume,
		Disk: &kubevirtv1.Disk{DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusSCSI}}},
		VolumeSource: &kubevirtv1.HotplugVolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			Hotpluggable: true, PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: volume}}}}
	if err := h.virt.KubevirtV1().VirtualMachines(h.namespace).AddVolume(ctx, node, opts); err != nil {
		return fmt.Errorf("addvolume %s to VM %s: %w", volume, node, err)
	}
	fmt.Printf("PUT .../virtualmachines/%s/addvolume accepted\n", node)
	st, err := h.waitVolume(ctx, node, volume, true)
	if err != nil {
		return err
	}
	fmt.Printf("VMI %s status.volumeStatus: name=%s target=%s phase=%s reason=%s attachPod=%s\n",
		node, st.Name, st.Target, st.Phase, st.Reason, st.HotplugVolume.AttachPodName)
	return nil
}

func (h *harvester) detach(ctx context.Context, node, volume string) error {
	if err := h.virt.KubevirtV1().VirtualMachines(h.namespace).RemoveVolume(ctx, node, &kubevirtv1.RemoveVolumeOptions{Name: volume}); err != nil {
		return fmt.Errorf("removevolume %s from VM %s: %w", volume, node, err)
	}
	if _, err := h.waitVolume(ctx, node, volume, false); err != nil {
		return err
	}
	claims := h.kube.CoreV1().PersistentVolumeClaims(h.namespace)
	if err := claims.Delete(ctx, volume, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete host PVC %s: %w", volume, err)
	}
	if _, err := kubeapi.Wait(ctx, kubeapi.KindOf("PVC", &corev1.PersistentVolumeClaim{}, claims), h.namespace, volume, 0,
		func(p *corev1.PersistentVolumeClaim) (bool, error) { return p == nil, nil }); err != nil {
		return fmt.Errorf("wait for host PVC %s gone: %w", volume, err)
	}
	fmt.Printf("volume %s detached from VM %s and its host PVC deleted\n", volume, node)
	return nil
}

// waitVolume is the CSI driver's attach check: the volume in the VM's spec
// and Ready in its VMI (or, detaching, in neither).
func (h *harvester) waitVolume(ctx context.Context, node, volume string, attached bool) (kubevirtv1.VolumeStatus, error) {
	var st kubevirtv1.VolumeStatus
	vmis := h.virt.KubevirtV1().VirtualMachineInstances(h.namespace)
	_, err := kubeapi.Wait(ctx, kubeapi.KindOf("VMI", &kubevirtv1.VirtualMachineInstance{}, vmis), h.namespace, node, 0,
		func(vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
			if vmi == nil {
				return false, fmt.Errorf("VMI %s is gone", node)
			}
			st = kubevirtv1.VolumeStatus{}
			for _, s := range vmi.Status.VolumeStatus {
				if s.Name == volume {
					st = s
				}
			}
			if attached {
				return st.Phase == kubevirtv1.VolumeReady && st.HotplugVolume != nil, nil
			}
			return st.Name == "", nil
		})
	if err != nil {
		return st, fmt.Errorf("wait for volume %s attached=%v in VMI %s: %w", volume, attached, node, err)
	}
	vm, err := h.virt.KubevirtV1().VirtualMachines(h.namespace).Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return st, fmt.Errorf("get VM %s: %w", node, err)
	}
	inSpec := false
	for _, v := range vm.Spec.Template.Spec.Volumes {
		inSpec = inSpec || v.Name == volume
	}
	if inSpec != attached {
		return st, fmt.Errorf("VM %s: volume %s in spec=%v, want %v", node, volume, inSpec, attached)
	}
	return st, nil
}
