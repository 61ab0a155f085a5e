package maintenance

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
)

// migration is a VMI migration as KubeVirt v1.7 labels it (its webhook
// sets kubevirt.io/vmi-name to spec.vmiName).
func migration(ns, name, vmi string, phase kubevirtv1.VirtualMachineInstanceMigrationPhase) kubevirtv1.VirtualMachineInstanceMigration {
	m := kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"kubevirt.io/vmi-name": vmi}}}
	m.Spec.VMIName = vmi
	m.Status.Phase = phase
	return m
}

// event is an event about migration ns/name.
func event(ns, name, typ, reason string) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + ".1"}, Type: typ, Reason: reason,
		InvolvedObject: corev1.ObjectReference{Kind: "VirtualMachineInstanceMigration", Namespace: ns, Name: name}}
}

// TestUpgradeFailedEvacuation: Harvester v1.8's package/upgrade/upgrade_node.sh,
// wait_vms_out_or_shutdown → check_migrations_phase "Failed": for each
// Running VMI labelled with the host it lists `kubectl get vmim -n NS
// -lkubevirt.io/vmi-name=NAME` in phase Failed, skips a name not starting
// "kubevirt-evacuation", and runs `virtctl stop` when the reasons of
// `kubectl events --for=virtualmachineinstancemigration/NAME --types=warning`
// contain "failedmigration" (grep -i). Phases Scheduling and Pending are
// only printed. The migration's age is not looked at.
func TestUpgradeFailedEvacuation(t *testing.T) {
	const evac = "kubevirt-evacuation-abcde"
	cases := []struct {
		name   string
		migs   []kubevirtv1.VirtualMachineInstanceMigration
		events []corev1.Event
		noVM   bool
		action string
		why    string
	}{
		{name: "failed evacuation with a FailedMigration warning: stopped", action: ShutDown, why: "its evacuation migration " + evac + " Failed",
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("default", evac, "Warning", "FailedMigration")}},
		{name: "the reason is matched case-insensitively, as a part", action: ShutDown,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("default", evac, "Warning", "SuccessfulCreate"), event("default", evac, "warning", "XFAILEDMIGRATIONx")}},
		{name: "no event (events live an hour): not stopped, migrates", action: Migrates,
			migs: []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationFailed)}},
		{name: "a Normal FailedMigration event does not count", action: Migrates,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("default", evac, "Normal", "FailedMigration")}},
		{name: "another warning reason does not count", action: Migrates,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("default", evac, "Warning", "MigrationTargetPodUnschedulable")}},
		{name: "a migration not named kubevirt-evacuation-* is skipped", action: Migrates,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", "mine", "g-p-0", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("default", "mine", "Warning", "FailedMigration")}},
		{name: "phase Scheduling is only printed", action: Migrates,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationScheduling)},
			events: []corev1.Event{event("default", evac, "Warning", "FailedMigration")}},
		{name: "phase Pending is only printed", action: Migrates,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationPending)},
			events: []corev1.Event{event("default", evac, "Warning", "FailedMigration")}},
		{name: "another VMI's migration", action: Migrates,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-1", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("default", evac, "Warning", "FailedMigration")}},
		{name: "another namespace's migration of that name", action: Migrates,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("other", evac, "g-p-0", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("other", evac, "Warning", "FailedMigration")}},
		{name: "the event of another migration", action: Migrates,
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("default", "kubevirt-evacuation-zzzzz", "Warning", "FailedMigration")}},
		// virtctl stop fails without a VM (`|| true`), and the VMI stays.
		{name: "a VMI without a VM cannot be stopped: blocks", noVM: true, action: Blocks, why: "it has no VM",
			migs:   []kubevirtv1.VirtualMachineInstanceMigration{migration("default", evac, "g-p-0", kubevirtv1.MigrationFailed)},
			events: []corev1.Event{event("default", evac, "Warning", "FailedMigration")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p"), guestVMI("g-p-1", "h2", "g", "p"), guestVMI("g-p-2", "h3", "g", "p"))
			if c.noVM {
				h.VMs = h.VMs[1:]
			}
			h.Migrations, h.MigrationEvents = c.migs, c.events
			r, err := Check(h, nil, Options{Upgrade: true, RestoreVM: true})
			if err != nil {
				t.Fatal(err)
			}
			v := verdict(t, r, "g-p-0")
			if v.Step != 1 || v.Action != c.action || !strings.Contains(v.Why, c.why) || v.Restored {
				t.Errorf("verdict %+v, want step 1 %s (%q), not restored", v, c.action, c.why)
			}
		})
	}
}

// TestUpgradeFailedEvacuationsQuorum: three VMs of a pool, each with a
// failed evacuation from an earlier maintenance, are all shut down at
// their host's step (and none is restored: vm-live-migrate-detector's
// ConfigMap lists only the VMs it stops): the pool is lost, the check fails.
func TestUpgradeFailedEvacuationsQuorum(t *testing.T) {
	h := snapshot(threeHosts(), guestVMI("g-p-0", "h1", "g", "p"), guestVMI("g-p-1", "h2", "g", "p"), guestVMI("g-p-2", "h3", "g", "p"))
	for i, name := range []string{"g-p-0", "g-p-1", "g-p-2"} {
		m := "kubevirt-evacuation-" + string(rune('a'+i))
		h.Migrations = append(h.Migrations, migration("default", m, name, kubevirtv1.MigrationFailed))
		h.MigrationEvents = append(h.MigrationEvents, event("default", m, "Warning", "FailedMigration"))
	}
	r, err := Check(h, nil, Options{Upgrade: true, RestoreVM: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range r.VMs {
		got = append(got, itoa(v.Step)+" "+v.Name+" "+v.Action)
	}
	if want := []string{"1 g-p-0 shut down", "2 g-p-1 shut down", "3 g-p-2 shut down"}; !slices.Equal(got, want) {
		t.Errorf("verdicts %q, want %q", got, want)
	}
	if !r.Failed() || len(r.Losses) != 2 || r.Losses[1].Why != "every node of pool p down (3)" {
		t.Errorf("losses %+v: want the pool's majority, then every node", r.Losses)
	}
}

func pinnedTo(host string) vmOpt {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": host}
	}
}

// TestUpgradeRestoreVM: Harvester v1.8's restore-VM option (setting
// upgrade-config, restoreVM). pkg/upgradehelper/vmlivemigratedetector
// (Run, getRestoreVMNames) lists the VMs it stops (GetAllNonLiveMigratableVMINames:
// here a nodeSelector) in ConfigMap <upgrade>-restore-vm, key the host,
// except a VMI with condition Paused True or label harvesterhci.io/upgrade;
// the job controller (sendRestoreVMJob) runs restore-vm after the host's
// post-drain, except on a witness host; restorevm starts each listed VM.
// Without the option, the upgrade webhook (checkNonLiveMigratableVMs)
// refuses the Upgrade while such a VMI exists and there is more than one
// non-witness host: "There are non-live migratable VMs that need to be
// shut off before initiating the upgrade: ...".
func TestUpgradeRestoreVM(t *testing.T) {
	paused := func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.Conditions = append(v.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{Type: "Paused", Status: corev1.ConditionTrue})
	}
	repo := func(v *kubevirtv1.VirtualMachineInstance) { v.Labels["harvesterhci.io/upgrade"] = "hvst-upgrade-x" }
	cases := []struct {
		name     string
		nodes    []corev1.Node
		vmi      kubevirtv1.VirtualMachineInstance
		restore  bool
		restored bool
		why      string
		refused  string
	}{
		{name: "restoreVM: started again after its host", vmi: guestVMI("g-a-0", "h1", "g", "a", pinnedTo("h1")), restore: true, restored: true,
			why: "restoreVM starts it again once h1 is upgraded"},
		{name: "without restoreVM the webhook refuses the Upgrade", vmi: guestVMI("g-a-0", "h1", "g", "a", pinnedTo("h1")),
			why:     "it stays down",
			refused: "There are non-live migratable VMs that need to be shut off before initiating the upgrade: default/g-a-0 "},
		{name: "one non-witness host: no refusal, every VM stopped", nodes: []corev1.Node{host("h1", "a"), host("w", "a", "node-role.harvesterhci.io/witness", "true")},
			vmi: guestVMI("g-a-0", "h1", "g", "a"), why: "the only host"},
		{name: "a paused VMI is not listed", vmi: guestVMI("g-a-0", "h1", "g", "a", pinnedTo("h1"), paused), restore: true, why: "its VMI is paused"},
		{name: "the upgrade repository VM is not listed", vmi: guestVMI("g-a-0", "h1", "g", "a", pinnedTo("h1"), repo), restore: true, why: "upgrade repository VM"},
		{name: "no restore-vm job on a witness host", restore: true, why: "witness host",
			nodes: []corev1.Node{host("h1", "a", "node-role.harvesterhci.io/witness", "true"), host("h2", "b"), host("h3", "c")},
			vmi:   guestVMI("g-a-0", "h1", "g", "a", pinnedTo("h1"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nodes := c.nodes
			if nodes == nil {
				nodes = threeHosts()
			}
			r, err := Check(snapshot(nodes, c.vmi), nil, Options{Upgrade: true, RestoreVM: c.restore})
			if err != nil {
				t.Fatal(err)
			}
			v := verdict(t, r, "g-a-0")
			if v.Action != ShutDown || v.Restored != c.restored || !strings.Contains(v.Why, c.why) {
				t.Errorf("verdict %+v, want shut down, restored %v, why with %q", v, c.restored, c.why)
			}
			if (r.UpgradeRefused != "") != (c.refused != "") || !strings.HasPrefix(r.UpgradeRefused, c.refused) || (c.refused != "" && !r.Failed()) {
				t.Errorf("refused %q, want %q", r.UpgradeRefused, c.refused)
			}
		})
	}
}

// TestUpgradeRestoredVMCountsUpAgain: a pool of two VMs each pinned to its
// host by a nodeSelector. Without restoreVM both are down after step 2:
// the pool is lost. With it each is down only during its host's step.
func TestUpgradeRestoredVMCountsUpAgain(t *testing.T) {
	h := func() *clusterstate.Hosts {
		return snapshot(threeHosts(), guestVMI("g-a-0", "h1", "g", "a", pinnedTo("h1")), guestVMI("g-a-1", "h2", "g", "a", pinnedTo("h2")))
	}
	lost := func(o Options) []string {
		r, err := Check(h(), nil, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range r.Losses {
			out = append(out, itoa(l.Step)+" "+l.Why)
		}
		return out
	}
	if got := lost(Options{Upgrade: true}); !slices.Contains(got, "2 every node of pool a down (2)") {
		t.Errorf("without restoreVM: losses %q, want the pool lost at step 2", got)
	}
	if got := lost(Options{Upgrade: true, RestoreVM: true}); slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "every node") }) {
		t.Errorf("with restoreVM: losses %q, want no step with every node down", got)
	}
}

// TestRestoreVMOption: the setting upgrade-config as Harvester v1.8 reads it
// (pkg/util/setting.go IsRestoreVM: settings.DecodeConfig[UpgradeConfig],
// field restoreVM; the default from pkg/settings/settings.go).
func TestRestoreVMOption(t *testing.T) {
	const harvesterDefault = `{"imagePreloadOption":{"strategy":{"type":"sequential"}},"nodeUpgradeOption":{"strategy":{"mode":"auto"}},"restoreVM": false, "logReadyTimeout": "5"}`
	cases := []struct {
		setting string
		flag    bool
		want    bool
		note    string
	}{
		{setting: "", want: false},
		{setting: "", flag: true, want: true},
		{setting: harvesterDefault, want: false},
		{setting: harvesterDefault, flag: true, want: true},
		{setting: `{"restoreVM":true}`, want: true, note: "restoreVM is true in the setting upgrade-config"},
		{setting: `{"restoreVM":true}`, flag: true, want: true},
		{setting: `{"restoreVM":"yes"}`, want: false, note: "is not JSON Harvester can read"},
	}
	for _, c := range cases {
		got, note := restoreVMOption(c.setting, Options{Upgrade: true, RestoreVM: c.flag})
		if got != c.want || !strings.Contains(note, c.note) || (c.note == "") != (note == "") {
			t.Errorf("setting %q, flag %v: %v %q, want %v %q", c.setting, c.flag, got, note, c.want, c.note)
		}
	}
}
