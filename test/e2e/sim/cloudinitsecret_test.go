package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestVMIWaitsForItsCloudInitSecret: as in KubeVirt, whose virt-launcher
// pod mounts the cloud-init Secret (a Secret volume, not optional), a VMI
// whose Secret is missing stays in Scheduling, without a node; once the
// Secret exists it starts.
func TestVMIWaitsForItsCloudInitSecret(t *testing.T) {
	ctx := testContext(t)
	const name, secret = "cloudinit-missing", "cloudinit-missing-userdata"
	vm := limitsVM(name, "1", "1Gi")
	always := kubevirtv1.RunStrategyAlways
	vm.Spec.RunStrategy = &always
	vm.Spec.Template.Spec.Domain.Devices.Disks = []kubevirtv1.Disk{{Name: "cloudinitdisk", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}}}
	vm.Spec.Template.Spec.Volumes = []kubevirtv1.Volume{{Name: "cloudinitdisk", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{
		UserDataSecretRef: &corev1.LocalObjectReference{Name: secret}}}}}
	createVM(t, ctx, vm)

	// Scheduling is reached (on a loaded machine the VMI may take a while
	// to appear), and then nothing past it for longer than the simulator's
	// schedule and boot delays.
	pastScheduling := func(vmi *kubevirtv1.VirtualMachineInstance) bool {
		switch vmi.Status.Phase {
		case kubevirtv1.VmPhaseUnset, kubevirtv1.Pending, kubevirtv1.Scheduling:
			return false
		}
		t.Errorf("VMI reached %s (node %q) without its cloud-init Secret", vmi.Status.Phase, vmi.Status.NodeName)
		return true
	}
	reach, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := watchVMI(reach, name, func(vmi *kubevirtv1.VirtualMachineInstance) bool {
		return vmi.Status.Phase == kubevirtv1.Scheduling || pastScheduling(vmi)
	}); err != nil {
		t.Fatalf("the VMI never reached Scheduling: %v", err)
	}
	if t.Failed() {
		return
	}
	held, cancel1 := context.WithTimeout(ctx, 6*time.Second)
	defer cancel1()
	if err := watchVMI(held, name, pastScheduling); !errors.Is(err, context.DeadlineExceeded) && err != nil {
		t.Fatalf("watch VMI: %v", err)
	}
	if t.Failed() {
		return
	}

	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: "default"}, StringData: map[string]string{"userdata": "#cloud-config\n"}}
	if _, err := kube.CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Secrets("default").Delete(context.WithoutCancel(ctx), secret, metav1.DeleteOptions{})
	})
	running, cancel2 := context.WithTimeout(ctx, 30*time.Second)
	defer cancel2()
	if err := watchVMI(running, name, func(vmi *kubevirtv1.VirtualMachineInstance) bool { return vmi.Status.Phase == kubevirtv1.Running }); err != nil {
		t.Fatalf("VMI not Running once its Secret exists: %v", err)
	}
}

// watchVMI watches the VMI called name in default until done returns true.
func watchVMI(ctx context.Context, name string, done func(*kubevirtv1.VirtualMachineInstance) bool) error {
	w, err := virt.KubevirtV1().VirtualMachineInstances("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("watch ended")
			}
			if vmi, ok := ev.Object.(*kubevirtv1.VirtualMachineInstance); ok && done(vmi) {
				return nil
			}
		}
	}
}
