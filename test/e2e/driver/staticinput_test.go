package driver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// assertNothingOf fails the test if the machine has a VM or holds an
// address (rancher-machine's store is the test's own).
func assertNothingOf(t *testing.T, name string) {
	t.Helper()
	if _, err := virt.KubevirtV1().VirtualMachines(namespace).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused machine %s has a VM (err %v)", name, err)
	}
	if addr, ok := heldAddresses(t, "")[name]; ok {
		t.Errorf("the refused machine %s holds %s", name, addr)
	}
}

// TestStaticFlagsRefusedThroughRancherMachine (issue 30, 4 and 5): through
// rancher-machine, --harvester-static-interface nic--1 is refused naming
// the flag (it panicked the plugin: rancher-machine said "unexpected
// EOF"); ranges and gateways no machine can use are refused naming each
// flag, its value and why, all at once; nothing is created.
func TestStaticFlagsRefusedThroughRancherMachine(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-staticbad")
	for i, tc := range []struct {
		flags []string
		want  []string
	}{
		{[]string{"--harvester-static-address-range=10.60.2.10-10.60.2.20/24", "--harvester-static-interface=nic--1"},
			[]string{`--harvester-static-interface: "nic--1" is not an interface name; write nic-<i> for the i-th interface (nic-0 is the first)`}},
		{[]string{"--harvester-static-address-range=127.0.0.10-127.0.0.59/24", "--harvester-static-gateway=224.0.0.1"},
			[]string{`--harvester-static-address-range: "127.0.0.10-127.0.0.59/24": the range is loopback (127.0.0.0/8)`,
				"--harvester-static-gateway: 224.0.0.1 is multicast (224.0.0.0/4)"}},
		{[]string{"--harvester-static-address-range=255.255.255.1-255.255.255.9/24"},
			[]string{`--harvester-static-address-range: "255.255.255.1-255.255.255.9/24": the range is in the reserved block 240.0.0.0/4`}},
		{[]string{"--harvester-static-address-range=10.60.2.10-10.60.2.20/24", "--harvester-static-gateway=10.60.2.255"},
			[]string{"--harvester-static-gateway: 10.60.2.255 is the broadcast address of 10.60.2.0/24, not a host"}},
	} {
		name := fmt.Sprintf("e2e-staticbad-pool1-%d", i)
		out, err := r.create(name, append(append([]string{}, imageAndNet...), tc.flags...)...)
		if err == nil {
			t.Fatalf("create with %v succeeded:\n%s", tc.flags, out)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("create with %v: output lacks %q:\n%s", tc.flags, want, out)
			}
		}
		for _, bad := range []string{"unexpected EOF", "panic", "index out of range"} {
			if strings.Contains(out, bad) {
				t.Errorf("create with %v: the plugin failed (%q):\n%s", tc.flags, bad, out)
			}
		}
		assertNothingOf(t, name)
	}
}

// refuseStart makes kube-apiserver refuse (a ValidatingAdmissionPolicy)
// starting a halted VM whose name starts with prefix, and returns once the
// refusal is in effect (a dry-run start of a halted probe VM is refused).
func refuseStart(t *testing.T, prefix, message string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "e2e-refuse-start-" + strings.TrimSuffix(prefix, "-")
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"kubevirt.io"}, APIVersions: []string{"*"}, Resources: []string{"virtualmachines"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf(`!object.metadata.name.startsWith(%q) || !has(oldObject.spec.runStrategy) || oldObject.spec.runStrategy != "Halted" || !has(object.spec.runStrategy) || object.spec.runStrategy == "Halted"`, prefix),
				Message:    message,
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	api := kube.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	probe := haltedVM(prefix + "probe")
	vms := virt.KubevirtV1().VirtualMachines(namespace)
	if _, err := vms.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { deleteVMAndWait(t, probe.Name) }()
	start := []byte(`{"spec":{"runStrategy":"Always"}}`)
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := vms.Patch(ctx, probe.Name, types.MergePatchType, start, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), message), nil
	})
	if err != nil {
		t.Fatalf("the policy refusing starts of %s* is not in effect: %v", prefix, err)
	}
}

// TestStaticRollbackEndsAtOnce (issue 30, 6): a static-address create that
// fails after its Secret exists (the API server refuses starting the VM)
// rolls back and returns well within --harvester-wait-timeout. The
// rollback used to delete the Secret, then watch it from the VM's later
// resource version for the deletion it had already seen, until the
// timeout.
//
// Sequential: it adds an admission policy, which every test's VM start
// passes.
func TestStaticRollbackEndsAtOnce(t *testing.T) {
	const prefix, timeout = "e2e-srb-", 60 * time.Second
	const refusal = "e2e: starting this VM is refused"
	refuseStart(t, prefix, refusal)
	r := newRM(t, "e2e-srb")
	name := prefix + "pool1-a"
	began := time.Now()
	out, err := r.create(name, append(append([]string{}, imageAndNet...), "--harvester-static-address-range=10.60.3.10-10.60.3.20/24",
		"--harvester-static-gateway=10.60.3.1", fmt.Sprintf("--harvester-wait-timeout=%d", int(timeout.Seconds())))...)
	elapsed := time.Since(began)
	if err == nil {
		t.Fatalf("create succeeded though starting the VM is refused:\n%s", out)
	}
	for _, want := range []string{"creating cloud-init Secret", refusal, "removing what it created"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cleanup after the failed create also failed") {
		t.Errorf("the rollback failed:\n%s", out)
	}
	if elapsed >= timeout {
		t.Errorf("the failed create took %s, not less than --harvester-wait-timeout %s: the rollback waited out the timeout", elapsed.Round(time.Second), timeout)
	}
	assertNothingOf(t, name)
	if _, err := kube.CoreV1().Secrets(namespace).Get(context.Background(), name+"-cloudinit", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed machine's Secret is left (err %v)", err)
	}
	r.mustRun("rm", "-y", name)
}
