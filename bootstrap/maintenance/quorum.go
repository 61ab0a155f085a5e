package maintenance

import (
	"fmt"
	"sort"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// group is a set of a guest cluster's VMs that must not all (pool,
// control plane) or not for the most part (etcd) go down.
type group struct {
	namespace, cluster, name string
	majority                 bool     // etcd (or a pool whose roles are unknown): a majority must stay up
	members                  []string // namespace/name of VMs
}

func (g *group) key() string { return g.namespace + "/" + g.cluster + "/" + g.name }

// groups are every guest cluster's pools, and with the guest's nodes its
// etcd members and control plane (a guest node named after its VM).
func (w *world) groups() []*group {
	byKey := map[string]*group{}
	get := func(ns, cluster, name string, majority bool) *group {
		g := &group{namespace: ns, cluster: cluster, name: name, majority: majority}
		if old, ok := byKey[g.key()]; ok {
			return old
		}
		byKey[g.key()] = g
		return g
	}
	roles := map[string]map[string]string{}
	for _, n := range w.h.GuestNodes {
		roles[n.Name] = n.Labels
	}
	for _, vm := range w.h.VMs {
		cluster := vm.Labels[harvester.LabelGuestCluster]
		if cluster == "" {
			continue
		}
		id := vm.Namespace + "/" + vm.Name
		known := w.h.GuestNodes != nil && cluster == w.h.GuestCluster
		if pool := vm.Labels[harvester.LabelNodePool]; pool != "" {
			g := get(vm.Namespace, cluster, "pool "+pool, !known)
			g.members = append(g.members, id)
		}
		if !known {
			continue
		}
		l := roles[vm.Name]
		if l[harvester.LabelRoleEtcd] == "true" {
			g := get(vm.Namespace, cluster, "etcd", true)
			g.members = append(g.members, id)
		}
		if l[harvester.LabelRoleControlPlane] == "true" || l[harvester.LabelRoleControlPlaneRKE1] == "true" {
			g := get(vm.Namespace, cluster, "control plane", false)
			g.members = append(g.members, id)
		}
	}
	out := make([]*group, 0, len(byKey))
	for _, g := range byKey {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// isDown: the VM has no running VMI, or the check shut it down.
func (w *world) isDown(id string) bool {
	for _, p := range w.vmis {
		if p.vmi.Namespace+"/"+p.vmi.Name == id {
			return p.down
		}
	}
	return true
}

// losses are the groups lost once step's hosts are drained that were not
// lost before (lost records them, true once certainly): a pool first at
// risk (its majority down, roles unknown) is reported again once every
// node is down.
func (w *world) losses(groups []*group, lost map[string]bool, step int, hosts string) []Loss {
	var out []Loss
	for _, g := range groups {
		down := 0
		for _, id := range g.members {
			if w.isDown(id) {
				down++
			}
		}
		n := len(g.members)
		all := down == n
		// A majority of n up: more than n/2.
		noMajority := g.majority && n-down <= n/2
		certain, seen := lost[g.key()]
		if (!all && !noMajority) || (seen && (certain || !all)) {
			continue
		}
		l := Loss{Step: step, Host: hosts, Namespace: g.namespace, Cluster: g.cluster, Group: g.name, Members: n, Down: down, Certain: true}
		switch {
		case all && g.name == "etcd":
			l.Why = fmt.Sprintf("all %d etcd members down: etcd is gone", n)
		case all && g.name == "control plane":
			l.Why = fmt.Sprintf("all %d control-plane nodes down: the guest's API is gone", n)
		case all:
			l.Why = fmt.Sprintf("every node of %s down (%d)", g.name, n)
		case g.name == "etcd":
			l.Why = fmt.Sprintf("%d of %d etcd members down: etcd loses its quorum (needs %d)", down, n, n/2+1)
		default:
			l.Certain = false
			l.Why = fmt.Sprintf("%d of %d nodes of %s down: if it runs etcd, etcd loses its quorum (give --guest-kubeconfig to know the roles)", down, n, g.name)
		}
		lost[g.key()] = l.Certain
		out = append(out, l)
	}
	return out
}
