// Package maintenance decides, from a snapshot of Harvester's hosts, VMs,
// VMIs and pods (clusterstate.Hosts), what happens to each guest-cluster VM
// when hosts go into maintenance or Harvester upgrades them one by one, as
// KubeVirt v1.7's eviction rules and Harvester v1.8's drain apply them:
// it migrates (to a host its affinity, the taints and the room allow), it
// is shut down (with KubeVirt's reason), or it blocks the drain. It also
// names every guest cluster that would lose its etcd quorum, its control
// plane, or every node of a pool. Pure: no API calls.
package maintenance

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// What happens to a VM (VM.Action).
const (
	Migrates = "migrates"
	ShutDown = "shut down"
	Blocks   = "blocks"
)

// VM is the verdict on one guest-cluster VM on a host being drained.
type VM struct {
	// Step is the host's position in the upgrade order (1-based); 0 for
	// maintenance of the given hosts together.
	Step      int    `json:"step,omitempty"`
	Host      string `json:"host"`
	Namespace string `json:"namespace"`
	Name      string `json:"vm"`
	Cluster   string `json:"cluster"`
	Pool      string `json:"pool,omitempty"`
	// Strategy is the eviction strategy in force and where it came from.
	Strategy string `json:"evictionStrategy"`
	// Migratable is the VMI's LiveMigratable condition: True, False, or
	// Unknown when the VMI has none (KubeVirt then treats it as False).
	Migratable string `json:"liveMigratable"`
	Action     string `json:"action"`
	// Reason is KubeVirt's reason of LiveMigratable False, e.g.
	// HostDeviceNotLiveMigratable.
	Reason string `json:"reason,omitempty"`
	Why    string `json:"why"`
	// Targets are the hosts the VM could migrate to; To is the one this
	// check assumes it lands on (the one with the most free memory).
	Targets []string `json:"targets,omitempty"`
	To      string   `json:"to,omitempty"`
	// Restored: shut down, and started again once its host is upgraded
	// (the upgrade's restore-VM option, Options.RestoreVM).
	Restored bool `json:"restored,omitempty"`
	// MaintainModeStrategy is the VM's harvesterhci.io/maintain-mode-strategy
	// when it is one that stops the VM; Restart says when Harvester starts
	// it again (RestartOnEnable, RestartOnDisable, RestartNever).
	MaintainModeStrategy string `json:"maintainModeStrategy,omitempty"`
	Restart              string `json:"restart,omitempty"`
}

// Loss is a guest cluster losing a quorum or a whole pool.
type Loss struct {
	Step      int    `json:"step,omitempty"`
	Host      string `json:"host"` // the host whose drain completes the loss
	Namespace string `json:"namespace"`
	Cluster   string `json:"cluster"`
	// Group: "etcd", "control plane" or "pool NAME".
	Group   string `json:"group"`
	Members int    `json:"members"`
	Down    int    `json:"down"`
	// Certain is false for a pool losing its majority when the nodes'
	// roles are unknown (no --guest-kubeconfig): a quorum is lost only if
	// the pool runs etcd.
	Certain bool   `json:"certain"`
	Why     string `json:"why"`
}

// Result is the whole check.
type Result struct {
	Upgrade bool     `json:"upgrade"`
	Force   bool     `json:"force"`
	Hosts   []string `json:"hosts"` // in the order they are drained
	VMs     []VM     `json:"vms"`
	Losses  []Loss   `json:"losses"`
	Notes   []string `json:"notes,omitempty"`
	// RestoreVM and UpgradeRefused: see Options.RestoreVM and
	// upgradeRefusal.
	RestoreVM      bool   `json:"restoreVM,omitempty"`
	UpgradeRefused string `json:"upgradeRefused,omitempty"`

	// Refused are the hosts Harvester refuses maintenance mode for (their
	// VMs stay where they are).
	Refused []Refusal `json:"refused,omitempty"`
}

// Failed reports whether anything would block or a cluster certainly lose
// a quorum or a pool.
func (r *Result) Failed() bool {
	if r.UpgradeRefused != "" || len(r.Refused) > 0 {
		return true
	}
	for _, v := range r.VMs {
		if v.Action == Blocks {
			return true
		}
	}
	for _, l := range r.Losses {
		if l.Certain {
			return true
		}
	}
	return false
}

// Options of a check.
type Options struct {
	// Upgrade: every host, one at a time, in Harvester's upgrade order.
	Upgrade bool
	// Force: maintenance mode with Harvester's force option.
	Force bool
	// RestoreVM: the upgrade-config setting's restoreVM (Harvester's
	// restore-VM option) is true.
	RestoreVM bool
}

// Check judges putting hosts into maintenance mode (all together), or with
// o.Upgrade every host one at a time in Harvester's upgrade order (hosts
// must then be empty). Unknown hosts are an error naming all of them.
func Check(h *clusterstate.Hosts, hosts []string, o Options) (Result, error) {
	upgrade := o.Upgrade
	w := newWorld(h)
	var restoreNote string
	o.RestoreVM, restoreNote = restoreVMOption(h.UpgradeConfig, o)
	res := Result{Upgrade: upgrade, Force: o.Force && !upgrade, RestoreVM: o.RestoreVM && upgrade, UpgradeRefused: w.upgradeRefusal(o)}
	var steps [][]string
	if upgrade {
		res.Hosts = UpgradeOrder(h.Nodes)
		for _, n := range res.Hosts {
			steps = append(steps, []string{n})
		}
	} else {
		var unknown []string
		for _, n := range hosts {
			if _, ok := w.nodes[n]; !ok {
				unknown = append(unknown, n)
			} else if !slices.Contains(res.Hosts, n) {
				res.Hosts = append(res.Hosts, n)
			}
		}
		if len(unknown) > 0 {
			return res, fmt.Errorf("unknown hosts %s: Harvester's hosts are %s", strings.Join(unknown, ", "), strings.Join(w.nodeNames(), ", "))
		}
		var allowed []string
		allowed, res.Refused = w.controlPlaneRule(res.Hosts)
		steps = [][]string{allowed}
	}
	groups := w.groups()
	lost := map[string]bool{}
	var before []string
	for _, l := range w.losses(groups, lost, 0, "") {
		before = append(before, l.Namespace+"/"+l.Cluster+" "+l.Group+": "+l.Why)
	}
	for i, step := range steps {
		n := 0
		if upgrade {
			n = i + 1
		}
		res.VMs = append(res.VMs, w.drain(step, n, o)...)
		res.Losses = append(res.Losses, w.losses(groups, lost, n, strings.Join(step, ", "))...)
		w.restoreStopped()
	}
	res.Notes = w.notes(res.Hosts)
	for _, b := range before {
		res.Notes = append(res.Notes, "already before the drain: "+b)
	}
	if restoreNote != "" {
		res.Notes = append(res.Notes, restoreNote)
	}
	return res, nil
}

// UpgradeOrder is the order Harvester v1.8's upgrade takes the hosts in:
// it hands the node upgrade to Rancher's provisioning of the local
// cluster with control-plane and worker concurrency 1
// (pkg/controller/master/upgrade/upgrade_controller.go, upgradeKubernetes),
// whose planner goes through the etcd nodes first, then the other
// control-plane nodes, then the workers, one at a time; within each tier
// by the name of the host's CAPI Machine (rancher pkg/capr/planner,
// fullReconcile and collect), which the Node's cluster.x-k8s.io/machine
// annotation names (by host name without one). Not seen from the Nodes:
// the planner's bootstrap tier, the etcd node etcd was initialised on
// (its Machine's rke.cattle.io/init-node label), goes before the others.
func UpgradeOrder(nodes []corev1.Node) []string {
	tier := func(n corev1.Node) int {
		switch {
		case n.Labels[harvester.LabelRoleEtcd] == "true":
			return 0
		case n.Labels[harvester.LabelRoleControlPlane] == "true":
			return 1
		}
		return 2
	}
	machine := func(n corev1.Node) string {
		if m := n.Annotations[harvester.AnnMachine]; m != "" {
			return m
		}
		return n.Name
	}
	sorted := slices.Clone(nodes)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := tier(sorted[i]), tier(sorted[j])
		if a != b {
			return a < b
		}
		return machine(sorted[i]) < machine(sorted[j])
	})
	out := make([]string, len(sorted))
	for i, n := range sorted {
		out[i] = n.Name
	}
	return out
}

// Evict is what KubeVirt's eviction admission does with the VMI when its
// host is drained (harvester.EvictionOf), before any host is looked at:
// Migrates means a migration is started (and needs a host that fits).
// The VM's fields Strategy, Migratable, Reason, Action and Why are set.
func Evict(vmi *kubevirtv1.VirtualMachineInstance, vm *kubevirtv1.VirtualMachine, kv *kubevirtv1.KubeVirt) VM {
	var v VM
	s, from := harvester.EvictionStrategy(vmi, vm, kv)
	v.Strategy = string(s) + " (" + from + ")"
	st, reason, msg := harvester.LiveMigratable(vmi)
	v.Migratable = string(st)
	if st != corev1.ConditionTrue {
		v.Reason = reason
	}
	switch harvester.EvictionOf(s, st == corev1.ConditionTrue) {
	case harvester.EvictionMigrates:
		v.Action = Migrates
	case harvester.EvictionShutsDown:
		switch s {
		case kubevirtv1.EvictionStrategyNone:
			v.Action, v.Why = ShutDown, "eviction strategy None: the VM is stopped"
		case kubevirtv1.EvictionStrategyLiveMigrateIfPossible:
			v.Action, v.Why = ShutDown, "not live-migratable: "+msg
		default:
			v.Action, v.Why = ShutDown, fmt.Sprintf("unknown eviction strategy %q: KubeVirt does not act on it and the eviction stops the VM", s)
		}
	case harvester.EvictionRefused:
		if s == kubevirtv1.EvictionStrategyExternal {
			v.Action, v.Why = Blocks, "eviction strategy External: KubeVirt refuses the eviction and leaves the VM to another controller"
		} else {
			v.Action, v.Why = Blocks, "LiveMigrate but not live-migratable (KubeVirt refuses the eviction): "+msg
		}
	}
	return v
}

// judge decides what draining its host does to one VMI.
//
// Maintenance mode (Harvester's nodedrain controller): Harvester first
// refuses, without force, a host with a VMI maintenanceGate names (with
// force it stops the VM); then it drains the host through the eviction
// API, where KubeVirt's rule (Evict) applies.
//
// Upgrade (command_pre_drain of upgrade_node.sh): Harvester stops the VMs
// upgradeStops names (restored after the host with o.RestoreVM:
// detectorStop), stops at once a VM with a failed evacuation migration
// (failedEvacuation), taints the host kubevirt.io/drain, on which KubeVirt
// migrates every VMI that is migratable on eviction (LiveMigrate, or
// LiveMigrateIfPossible when migratable) and LiveMigratable; then it waits
// until no VMI runs on the host, without limit, and stops (virtctl stop)
// a VM whose evacuation migration (kubevirt-evacuation-*) Failed with a
// FailedMigration warning. A migration whose target pod fits no host is
// such a one: phase Scheduling until KubeVirt's unschedulable timeout
// (300 s) deletes the target pod, then Failed. Any VMI KubeVirt does not
// migrate blocks the pre-drain.
//
// Without a host to migrate to, maintenance mode (a drain through the
// eviction API) keeps evicting and so blocks; the upgrade shuts the VM
// down after the timeout.
func (w *world) judge(p *placed, unavailable map[string]bool, o Options) VM {
	v := Evict(p.vmi, p.vm, w.h.KubeVirt)
	v.Host, v.Namespace, v.Name, v.Cluster, v.Pool = p.node, p.vmi.Namespace, p.vmi.Name, p.cluster, p.pool
	if o.Upgrade {
		why, err := w.upgradeStops(p)
		if err != nil {
			v.Action, v.Why = Blocks, "the upgrade's pre-drain fails (vm-live-migrate-detector): "+err.Error()
			return v
		}
		if why != "" {
			v.Action = ShutDown
			v.Why, v.Restored = w.detectorStop(p, why, o)
			return v
		}
		if mig := failedEvacuation(w.h, p.vmi); mig != "" {
			v.Action, v.Why = evacuationStop(p, mig)
			return v
		}
		if v.Action != Migrates {
			v.Action, v.Why = Blocks, "KubeVirt does not migrate it off the drain-tainted host ("+v.Strategy+", LiveMigratable "+v.Migratable+
				"): the upgrade's pre-drain waits for it to stop or leave"
			return v
		}
	} else if gate := w.maintenanceGate(p, unavailable); gate != "" {
		if o.Force {
			v.Action, v.Why = ShutDown, "forced maintenance stops it: "+gate+overridden(p, &v)
		} else {
			v.Action, v.Why = Blocks, "Harvester refuses maintenance mode without force: "+gate+"; with force it stops the VM"
		}
		return v
	} else if w.maintainMode(p, o, &v) {
		return v
	}
	if v.Action != Migrates {
		return v
	}
	if refused := w.quotaRefusal(p); refused != "" {
		v.Action, v.Why = Blocks, "live-migratable, but quota admission refuses KubeVirt's migration target pod ("+refused+
			"): the migration stays Pending and the VM on the host"
		return v
	}
	targets, whyNot := w.targets(p, unavailable)
	if len(targets) == 0 {
		if o.Upgrade {
			v.Action, v.Why = ShutDown, "live-migratable, but no host can take it ("+whyNot+"): the evacuation migration stays in phase "+
				"Scheduling (its target pod Pending) until KubeVirt's 300 s unschedulable timeout, then Failed; after the migration timed out "+
				"the upgrade's pre-drain stops the VM"
		} else {
			v.Action, v.Why = Blocks, "live-migratable, but no host can take it ("+whyNot+"): the migration stays in phase Scheduling "+
				"(its target pod Pending), fails after KubeVirt's 300 s unschedulable timeout and the drain evicts it again"
		}
		return v
	}
	v.Targets = targets
	v.To = w.pick(targets)
	v.Why += "live migration to one of " + strings.Join(targets, ", ")
	return v
}

// drain judges every guest-cluster VMI on the hosts, the hosts all
// unavailable meanwhile, and applies the outcome (moved, stopped).
func (w *world) drain(hosts []string, step int, o Options) []VM {
	unavailable := map[string]bool{}
	for _, n := range hosts {
		unavailable[n] = true
	}
	var out []VM
	for _, n := range hosts {
		for _, p := range w.on(n) {
			if p.cluster == "" {
				continue
			}
			v := w.judge(p, unavailable, o)
			v.Step = step
			switch v.Action {
			case Migrates:
				p.node = v.To
			case ShutDown:
				p.down = true
				if v.Restored {
					w.restoring = append(w.restoring, p)
				}
			}
			out = append(out, v)
		}
	}
	return out
}

// Only keeps the verdicts and losses of guest cluster name (the others'
// VMs still moved and took room).
func (r *Result) Only(name string) {
	vms := r.VMs[:0]
	for _, v := range r.VMs {
		if v.Cluster == name {
			vms = append(vms, v)
		}
	}
	losses := r.Losses[:0]
	for _, l := range r.Losses {
		if l.Cluster == name {
			losses = append(losses, l)
		}
	}
	r.VMs, r.Losses = vms, losses
}
