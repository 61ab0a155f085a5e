package driver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAffinityRuleSelectsExactlyItsPool: `harvester-bootstrap affinity` for
// pool1 of cluster e2e-aff gives a rule whose selector matches exactly the
// VMs (and VMIs) the driver creates for that pool, not those of another pool
// of the same cluster; as a hard rule it puts pool1's VMs on different hosts,
// and the driver does not add its default spread term twice.
func TestAffinityRuleSelectsExactlyItsPool(t *testing.T) {
	t.Parallel()
	const cluster = "e2e-aff"
	rule := bootstrapAffinity(t, "--namespace", namespace, "--cluster-name", cluster, "--pool", "pool1", "--required", "--format", "base64")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rule))
	if err != nil {
		t.Fatalf("affinity output is not base64: %v\n%s", err, rule)
	}
	var aff corev1.Affinity
	if err := json.Unmarshal(raw, &aff); err != nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity %s: %v", raw, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector)
	if err != nil {
		t.Fatal(err)
	}

	r := newRM(t, cluster)
	pool1 := []string{cluster + "-pool1-a0000", cluster + "-pool1-a0001"}
	pool2 := cluster + "-pool2-b0000"
	base := []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1"}
	for _, name := range pool1 {
		r.mustCreate(name, append(base, "--harvester-vm-affinity="+strings.TrimSpace(rule))...)
	}
	r.mustCreate(pool2, base...)
	t.Cleanup(func() {
		for _, name := range append(pool1, pool2) {
			r.mustRun("rm", "-y", "--update-config", name)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := metav1.ListOptions{LabelSelector: selector.String()}
	vms, err := virt.KubevirtV1().VirtualMachines(namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	vmis, err := virt.KubevirtV1().VirtualMachineInstances(namespace).List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var vmNames, vmiNames []string
	hosts := map[string]bool{}
	for _, vm := range vms.Items {
		vmNames = append(vmNames, vm.Name)
		if terms := vm.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) != 1 {
			t.Errorf("VM %s: %d preferred spread terms, want the driver's one", vm.Name, len(terms))
		}
	}
	for _, vmi := range vmis.Items {
		vmiNames = append(vmiNames, vmi.Name)
		hosts[vmi.Status.NodeName] = true
	}
	slices.Sort(vmNames)
	slices.Sort(vmiNames)
	if !slices.Equal(vmNames, pool1) || !slices.Equal(vmiNames, pool1) {
		t.Errorf("selector %s selects VMs %v and VMIs %v, want exactly pool1 %v", selector, vmNames, vmiNames, pool1)
	}
	if len(hosts) != len(pool1) || hosts[""] {
		t.Errorf("pool1's VMIs share a host despite the hard rule: %v", hosts)
	}
}

// bootstrapAffinity runs bin/harvester-bootstrap affinity and returns stdout.
func bootstrapAffinity(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "harvester-bootstrap"), append([]string{"affinity"}, args...)...).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("harvester-bootstrap affinity %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}
