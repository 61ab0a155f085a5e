package sim_test

import (
	"context"
	"errors"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// TestHarvesterWebhookRunsFromBin: Harvester's own webhook runs as a child
// of the simulator from bin/, seeing a Pod's ServiceAccount files with
// namespace harvester-system.
func TestHarvesterWebhookRunsFromBin(t *testing.T) {
	checkHarvesterPod(t, "harvester-webhook")
}

// checkHarvesterPod: a child of the simulator runs bin/name and sees a
// Pod's ServiceAccount files with namespace harvester-system.
func checkHarvesterPod(t *testing.T, name string) {
	t.Helper()
	bin, err := simtest.Bin(name)
	if err != nil {
		t.Fatal(err)
	}
	pid := childRunning(t, simulator.PID(), bin)
	if pid == 0 {
		t.Fatalf("no child of the simulator (pid %d) runs %s", simulator.PID(), bin)
	}
	ns, err := readPodFile(pid, "namespace")
	if err != nil || ns != "harvester-system" {
		t.Errorf("%s (pid %d) sees ServiceAccount namespace %q (%v), want harvester-system", name, pid, ns, err)
	}
}

// TestHarvesterWebhookConfigurationsRegistered: the configurations are
// Harvester v1.8.0's own (pkg/webhook/server/server.go): registered by the
// webhook itself, sending to Service harvester-system/harvester-webhook
// port 443; the validator fails closed, the mutator open.
func TestHarvesterWebhookConfigurationsRegistered(t *testing.T) {
	ctx := testContext(t)
	val, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "harvester-validator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mut, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "harvester-mutator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(val.Webhooks) != 1 || len(mut.Webhooks) != 1 {
		t.Fatalf("harvester-validator has %d webhooks, harvester-mutator %d: want one each", len(val.Webhooks), len(mut.Webhooks))
	}
	check := func(name, wantName, path string, cc admissionv1.WebhookClientConfig, policy *admissionv1.FailurePolicyType, want admissionv1.FailurePolicyType) {
		t.Helper()
		s := cc.Service
		if name != wantName || s == nil || s.Namespace != "harvester-system" || s.Name != "harvester-webhook" ||
			s.Port == nil || *s.Port != 443 || s.Path == nil || *s.Path != path || cc.URL != nil || len(cc.CABundle) == 0 {
			t.Errorf("webhook %s: client config %+v, want %s by Service harvester-system/harvester-webhook:443%s with a CA bundle", name, cc, wantName, path)
		}
		if policy == nil || *policy != want {
			t.Errorf("webhook %s: failurePolicy %v, want %s", name, policy, want)
		}
	}
	v, m := val.Webhooks[0], mut.Webhooks[0]
	check(v.Name, "validator.harvesterhci.io", "/v1/webhook/validation", v.ClientConfig, v.FailurePolicy, admissionv1.Fail)
	check(m.Name, "mutator.harvesterhci.io", "/v1/webhook/mutation", m.ClientConfig, m.FailurePolicy, admissionv1.Ignore)
}

// TestDuplicateMACRefused: a second VM with a MAC address a VM already has
// on the same cluster network (mgmt: the fixture network's label) is
// refused with Harvester's message (pkg/webhook/resources/virtualmachine/
// validator.go, checkForDuplicateMacAddrs); nothing is stored.
func TestDuplicateMACRefused(t *testing.T) {
	ctx := testContext(t)
	createVM(t, ctx, macVM("mac-a", "52:54:00:12:34:56"))
	second := macVM("mac-b", "52:54:00:12:34:56")
	_, err := virt.KubevirtV1().VirtualMachines("default").Create(ctx, second, metav1.CreateOptions{})
	const want = `admission webhook "validator.harvesterhci.io" denied the request: duplicate mac address present for vm mac-b for cluster network mgmt`
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Message != want {
		if err == nil {
			t.Cleanup(func() {
				_ = virt.KubevirtV1().VirtualMachines("default").Delete(context.WithoutCancel(ctx), second.Name, metav1.DeleteOptions{})
			})
		}
		t.Fatalf("second VM with the same MAC: got %v, want Harvester's refusal %q", err, want)
	}
	if _, err := virt.KubevirtV1().VirtualMachines("default").Get(ctx, second.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused VM: get %v, want NotFound", err)
	}
	// Another MAC on the same network is fine.
	createVM(t, ctx, macVM("mac-c", "52:54:00:12:34:57"))
}

// macVM is a halted VM with one bridge interface of MAC mac on the
// fixture network default/vlan1.
func macVM(name, mac string) *kubevirtv1.VirtualMachine {
	vm := limitsVM(name, "1", "1Gi")
	spec := &vm.Spec.Template.Spec
	spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{{Name: "nic-1", MacAddress: mac,
		InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}}}
	spec.Networks = []kubevirtv1.Network{{Name: "nic-1",
		NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "default/vlan1"}}}}
	return vm
}
