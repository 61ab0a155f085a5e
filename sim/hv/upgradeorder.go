package hv

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// The hosts' CAPI Machine, as Rancher's planner sees it.
const (
	// AnnMachine is CAPI's annotation of a Node with its Machine's name
	// (clusterv1.MachineAnnotation); Harvester's upgrade validator refuses
	// an upgrade while a host lacks it (pkg/webhook/resources/upgrade/validator.go).
	AnnMachine = "cluster.x-k8s.io/machine"
	// LabelInitNode marks the Machine Rancher's planner bootstrapped etcd
	// on (capr.InitNodeLabel). Rancher puts it on the Machine, not the
	// Node: the simulator's Machines carry no labels, and a host carries
	// its Machine's.
	LabelInitNode = "rke.cattle.io/init-node"
)

// UpgradeOrder is the order Harvester v1.8's upgrade takes the hosts in.
// Harvester hands the node upgrades to Rancher's provisioning of the local
// cluster with control-plane and worker concurrency 1
// (pkg/controller/master/upgrade/upgrade_controller.go, upgradeKubernetes;
// each host's pre-drain hook runs upgrade_node.sh). Rancher's planner
// (rancher/rancher pkg/capr/planner/planner.go fullReconcile, the version
// Harvester's go.mod pins) then reconciles its tiers one after the other:
// bootstrap (the etcd init node), etcd (the other etcd hosts, one at a
// time), control plane (the control-plane hosts not done yet), worker
// (hosts that are only workers: isOnlyWorker); within a tier in the order
// of collect (planentry.go), by Machine name. A host with no Machine
// annotation is ordered by its own name; a host with no role label is
// taken with the workers.
func UpgradeOrder(nodes []corev1.Node) []string {
	type host struct {
		name, machine string
		tier          int
	}
	hosts := make([]host, 0, len(nodes))
	for _, n := range nodes {
		h := host{name: n.Name, machine: n.Annotations[AnnMachine], tier: upgradeTier(&n)}
		if h.machine == "" {
			h.machine = n.Name
		}
		hosts = append(hosts, h)
	}
	sort.SliceStable(hosts, func(i, j int) bool {
		if hosts[i].tier != hosts[j].tier {
			return hosts[i].tier < hosts[j].tier
		}
		return hosts[i].machine < hosts[j].machine
	})
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.name
	}
	return out
}

// upgradeTier is the planner's tier of a host: 0 bootstrap, 1 etcd, 2
// control plane, 3 worker (the role labels RKE2 puts on its Node,
// capr.EtcdRoleLabel and ControlPlaneRoleLabel on the Machine).
func upgradeTier(n *corev1.Node) int {
	etcd := n.Labels[LabelRoleEtcd] == "true"
	switch {
	case etcd && n.Labels[LabelInitNode] == "true":
		return 0
	case etcd:
		return 1
	case n.Labels[LabelRoleControlPlane] == "true":
		return 2
	}
	return 3
}
