package maintenance

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
)

// labelled gives the VMI (and so its VM, in snapshot) the maintain-mode
// strategy label, the harvesterhci.io/vmName label and a VM owner.
func labelled(value string) vmOpt {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Labels["harvesterhci.io/maintain-mode-strategy"] = value
		v.Labels["harvesterhci.io/vmName"] = v.Name
		v.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: v.Name, Controller: new(bool)}}
	}
}

// withLaunchers adds each VMI's virt-launcher pod on its host, labelled
// as KubeVirt labels it (the VMI's labels, then its own), with edit
// applied to the labels.
func withLaunchers(h *clusterstate.Hosts, edit func(map[string]string)) *clusterstate.Hosts {
	for _, v := range h.VMIs {
		l := map[string]string{}
		for k, val := range v.Labels {
			l[k] = val
		}
		l["kubevirt.io"], l["kubevirt.io/created-by"] = "virt-launcher", string(v.UID)
		if edit != nil {
			edit(l)
		}
		h.Pods = append(h.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: "virt-launcher-" + v.Name, Labels: l},
			Spec: corev1.PodSpec{NodeName: v.Status.NodeName}})
	}
	return h
}

// TestMaintainModeStrategy: Harvester v1.8's maintenance mode for VMs
// labelled harvesterhci.io/maintain-mode-strategy. Expected values from
// its source: without force the nodedrain controller stops (runStrategy
// Halted) the VMs of VMIs whose label is Shutdown,
// ShutdownAndRestartAfterEnable or ShutdownAndRestartAfterDisable
// (listVMILabelMaintainModeStrategy, selection.In: case-sensitive),
// after refusing the host if any VMI is non-migratable; the maintain
// controller restarts AfterEnable ones once the host is empty,
// disableMaintenanceMode AfterDisable ones. With force only the
// non-migratable VMs are stopped (not annotated with the host, so never
// restarted), and maintainModeStrategyFilter skips a launcher pod
// carrying harvesterhci.io/vmName and a shutdown strategy: that VM keeps
// running on the host and maintain-status never becomes completed.
func TestMaintainModeStrategy(t *testing.T) {
	one := func(opts ...vmOpt) *clusterstate.Hosts {
		return withLaunchers(snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", opts...), guestVMI("g-p-1", "h2", "g", "p"), guestVMI("g-p-2", "h3", "g", "p")), nil)
	}
	cases := []struct {
		name             string
		h                *clusterstate.Hosts
		force            bool
		action, strategy string
		restart          string
		why              string // a part of Why
	}{
		{name: "Shutdown: stopped, never restarted", h: one(labelled("Shutdown")),
			action: ShutDown, strategy: "Shutdown", restart: RestartNever, why: "maintain-mode-strategy Shutdown (label harvesterhci.io/maintain-mode-strategy): Harvester stops it (runStrategy Halted)"},
		{name: "ShutdownAndRestartAfterEnable: restarted once maintenance completes", h: one(labelled("ShutdownAndRestartAfterEnable")),
			action: ShutDown, strategy: "ShutdownAndRestartAfterEnable", restart: RestartOnEnable},
		{name: "ShutdownAndRestartAfterDisable: restarted on disable", h: one(labelled("ShutdownAndRestartAfterDisable")),
			action: ShutDown, strategy: "ShutdownAndRestartAfterDisable", restart: RestartOnDisable},
		{name: "Migrate is the default: migrates", h: one(labelled("Migrate")), action: Migrates},
		{name: "values are case-sensitive: shutdown migrates", h: one(labelled("shutdown")), action: Migrates},
		{name: "non-migratable and labelled: refused without force first", h: one(labelled("Shutdown"), vgpu),
			action: Blocks, strategy: "", why: "Harvester refuses maintenance mode without force: LiveMigratable False (HostDeviceNotLiveMigratable)"},
		{name: "no VM owner: the controller fails on the host", h: one(labelled("Shutdown"), func(v *kubevirtv1.VirtualMachineInstance) { v.OwnerReferences = nil }),
			action: Blocks, strategy: "Shutdown", why: "no valid VM owner found for VMI g-p-0"},
		{name: "forced, pod labelled: the drain skips it, it stays", h: one(labelled("ShutdownAndRestartAfterEnable")), force: true,
			action: Blocks, strategy: "ShutdownAndRestartAfterEnable", why: "maintain-status stays running and never completed"},
		{name: "forced, pod without vmName: the filter does not skip it", force: true, action: Migrates, strategy: "Shutdown",
			why: "the drain evicts it: live migration to one of h2, h3",
			h: withLaunchers(snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", labelled("Shutdown")), guestVMI("g-p-1", "h2", "g", "p")),
				func(l map[string]string) { delete(l, "harvesterhci.io/vmName") })},
		{name: "forced, label given after the pod was made: evicted as any other", force: true, action: Migrates, strategy: "Shutdown",
			why: "its launcher pod lacks the labels maintainModeStrategyFilter skips",
			h: withLaunchers(snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", labelled("Shutdown")), guestVMI("g-p-1", "h2", "g", "p")),
				func(l map[string]string) { delete(l, "harvesterhci.io/maintain-mode-strategy") })},
		{name: "forced and non-migratable: stopped, the strategy overridden", h: one(labelled("ShutdownAndRestartAfterDisable"), vgpu), force: true,
			action: ShutDown, strategy: "ShutdownAndRestartAfterDisable", restart: RestartNever, why: "force overrides its maintain-mode-strategy ShutdownAndRestartAfterDisable: never started again"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(tc.h, []string{"h1"}, Options{Force: tc.force})
			if err != nil {
				t.Fatal(err)
			}
			v := verdict(t, r, "g-p-0")
			if v.Action != tc.action || v.MaintainModeStrategy != tc.strategy || v.Restart != tc.restart || !strings.Contains(v.Why, tc.why) {
				t.Errorf("got %s / %q / %q: %s\nwant %s / %q / %q containing %q", v.Action, v.MaintainModeStrategy, v.Restart, v.Why, tc.action, tc.strategy, tc.restart, tc.why)
			}
			if failed := tc.action == Blocks; r.Failed() != failed {
				t.Errorf("Failed() = %v, want %v", r.Failed(), failed)
			}
		})
	}
}

// TestMaintainModeStrategyReadWhereHarvesterReadsIt: each rule of v1.8
// reads one object (expected values from its source):
// listVMILabelMaintainModeStrategy the VMI's label, never the VM's;
// maintainModeStrategyFilter the launcher pod's; the maintain controller
// and disableMaintenanceMode select VMs by the VM's label. Without pods
// listed the launcher pod is taken to carry the VMI's labels.
func TestMaintainModeStrategyReadWhereHarvesterReadsIt(t *testing.T) {
	scene := func(vmiLabel, vmLabel string, podLabel *string) *clusterstate.Hosts {
		h := snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", labelled(vmiLabel)), guestVMI("g-p-1", "h2", "g", "p"))
		h.VMs[0].Labels = maps.Clone(h.VMIs[0].Labels)
		h.VMs[0].Labels["harvesterhci.io/maintain-mode-strategy"] = vmLabel
		return withLaunchers(h, func(l map[string]string) {
			if podLabel != nil && l["harvesterhci.io/vmName"] == "g-p-0" {
				l["harvesterhci.io/maintain-mode-strategy"] = *podLabel
			}
		})
	}
	shutdown, migrate := "Shutdown", "Migrate"
	cases := []struct {
		name            string
		h               *clusterstate.Hosts
		force           bool
		action, restart string
		why             string
	}{
		{name: "VM labelled Shutdown, VMI and pod not: migrates", h: scene("Migrate", "Shutdown", &migrate), action: Migrates},
		{name: "VMI labelled Shutdown under a VM labelled Migrate: stopped", h: scene("Shutdown", "Migrate", nil), action: ShutDown,
			restart: RestartNever, why: "Harvester stops it"},
		{name: "VMI AfterEnable under a VM labelled Migrate: stopped, annotated, never restarted (the maintain controller selects the VM's label)",
			h: scene("ShutdownAndRestartAfterEnable", "Migrate", nil), action: ShutDown, restart: RestartNever},
		{name: "VMI AfterDisable under a VM AfterEnable: restarted when maintenance completes",
			h: scene("ShutdownAndRestartAfterDisable", "ShutdownAndRestartAfterEnable", nil), action: ShutDown, restart: RestartOnEnable},
		{name: "relabelled Migrate, the pod keeps Shutdown: not stopped, the drain skips it, blocks", h: scene("Migrate", "Migrate", &shutdown),
			action: Blocks, why: "its launcher pod is labelled maintain-mode-strategy Shutdown but its VMI is not"},
		{name: "forced, relabelled Migrate, the pod keeps Shutdown: blocks", h: scene("Migrate", "Migrate", &shutdown), force: true,
			action: Blocks, why: "its launcher pod's maintain-mode-strategy Shutdown: forced maintenance stops only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(tc.h, []string{"h1"}, Options{Force: tc.force})
			if err != nil {
				t.Fatal(err)
			}
			if v := verdict(t, r, "g-p-0"); v.Action != tc.action || v.Restart != tc.restart || !strings.Contains(v.Why, tc.why) {
				t.Errorf("got %s / %q: %s\nwant %s / %q containing %q", v.Action, v.Restart, v.Why, tc.action, tc.restart, tc.why)
			}
		})
	}
	h := snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", labelled("Shutdown")), guestVMI("g-p-1", "h2", "g", "p"))
	h.Pods = nil
	r, _ := Check(h, []string{"h1"}, Options{Force: true})
	if v := verdict(t, r, "g-p-0"); v.Action != Blocks {
		t.Errorf("forced, pods not listed: %+v, want blocks (the pod carries the VMI's labels)", v)
	}
}

// TestAfterDisableConflict: v1.8's disableMaintenanceMode starts the first
// ShutdownAndRestartAfterDisable VM of the host it lists, then updates the
// VM object it listed before that start (a patch): kube-apiserver refuses
// the stale update (conflict), the action returns the error, and no other
// VM is started. One such VM: started, the annotation stays; two: only
// one of them, in the cache's order.
func TestAfterDisableConflict(t *testing.T) {
	h := withLaunchers(snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p", labelled("ShutdownAndRestartAfterDisable")),
		guestVMI("g-p-1", "h2", "g", "p"), guestVMI("g-p-2", "h3", "g", "p")), nil)
	r, _ := Check(h, []string{"h1"}, Options{})
	if v := verdict(t, r, "g-p-0"); v.Restart != RestartOnDisable || !strings.Contains(v.Why, "conflicts with the start") {
		t.Errorf("one: %+v", v)
	}
	// A second one, not of a guest cluster (Harvester's list holds every
	// VM with the label), already annotated with h1 by an earlier
	// maintenance and off.
	other := kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other",
		Labels:      map[string]string{"harvesterhci.io/maintain-mode-strategy": "ShutdownAndRestartAfterDisable"},
		Annotations: map[string]string{"harvesterhci.io/maintain-mode-strategy-node-name": "h1"}}}
	h.VMs = append(h.VMs, other)
	r, _ = Check(h, []string{"h1"}, Options{})
	if v := verdict(t, r, "g-p-0"); v.Restart != "for one of the host's 2 such VMs only, when maintenance mode is disabled" || !strings.Contains(v.Why, "the others stay off") {
		t.Errorf("two: %+v", v)
	}
}
