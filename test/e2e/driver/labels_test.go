package driver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVMLabels: --harvester-vm-labels puts the user's labels on the VM and
// its VMI template, so the running VMI carries them too (what Harvester's
// load balancer with workloadType vm and network policies select on).
func TestVMLabels(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-lbl")
	name := "e2e-lbl-pool1-l0000"
	r.mustCreate(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-vm-labels=app=web,billing.example.com/team=db")
	t.Cleanup(func() { r.mustRun("rm", "-y", name) })

	want := map[string]string{"app": "web", "billing.example.com/team": "db"}
	vm := getVM(t, name)
	vmi := getVMI(t, name)
	if vmi == nil {
		t.Fatalf("VM %s has no VMI after create", name)
	}
	for k, v := range want {
		if vm.Labels[k] != v || vm.Spec.Template.ObjectMeta.Labels[k] != v || vmi.Labels[k] != v {
			t.Errorf("label %s=%s: VM %q, template %q, VMI %q", k, v, vm.Labels[k], vm.Spec.Template.ObjectMeta.Labels[k], vmi.Labels[k])
		}
	}
	if vm.Labels[labelCreator] != creatorValue {
		t.Errorf("the driver's own labels are gone: %v", vm.Labels)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vmis, err := virt.KubevirtV1().VirtualMachineInstances(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(vmis.Items) != 1 || vmis.Items[0].Name != name {
		t.Errorf("selector app=web selects %d VMIs (%v), want %s", len(vmis.Items), err, name)
	}
}

// TestVMLabelsReservedRefused: keys of Harvester, KubeVirt and the driver
// are refused with the reason, every one at once, before anything exists.
func TestVMLabelsReservedRefused(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-lblr")
	out, err := r.create("e2e-lblr-pool1-l0000", "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-vm-labels=harvesterhci.io/creator=me,vm.kubevirt.io/name=x,node-driver.harvester-kit.io/machine-id=y,Bad Key=z")
	if err == nil {
		t.Fatalf("create succeeded:\n%s", out)
	}
	for _, want := range []string{
		`--harvester-vm-labels: "harvesterhci.io/creator=me": key "harvesterhci.io/creator" is reserved: keys under harvesterhci.io/ are Harvester's`,
		`key "vm.kubevirt.io/name" is reserved: keys under kubevirt.io/ are KubeVirt's`,
		`keys under node-driver.harvester-kit.io/ are the node driver's`,
		`key "Bad Key" is not a valid label key`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
