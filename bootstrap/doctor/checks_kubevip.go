package doctor

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// CheckKubeVIP is the name of the check that something in the guest
// announces the LoadBalancer addresses.
const CheckKubeVIP = "kube-vip"

// kubeVIPs are the kube-vip containers in kube-system ("Kind name") with
// their svc_enable value ("" when unset: kube-vip's default, off).
func kubeVIPs(g *clusterstate.Guest) map[string]string {
	out := map[string]string{}
	look := func(kind, name string, spec corev1.PodSpec) {
		for _, c := range spec.Containers {
			if c.Name != addons.KubeVIPName && !strings.Contains(c.Image, addons.KubeVIPName) {
				continue
			}
			out[kind+" "+name] = ""
			for _, e := range c.Env {
				if e.Name == addons.KubeVIPEnvSvcEnable {
					out[kind+" "+name] = e.Value
				}
			}
		}
	}
	for _, d := range g.DaemonSets {
		look("DaemonSet", d.Name, d.Spec.Template.Spec)
	}
	for _, d := range g.Deployments {
		look("Deployment", d.Name, d.Spec.Template.Spec)
	}
	return out
}

// serviceAddress is the address the cloud provider gave svc: the
// annotation it writes for kube-vip, the Service's ingress, or its
// Harvester LoadBalancer's address.
func serviceAddress(h *clusterstate.Harvester, svc corev1.Service) string {
	if a := svc.Annotations[addons.KubeVIPAddressAnnotation]; a != "" {
		return a
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
	}
	if l := lbOfService(h, svc); l != nil {
		return Address(l)
	}
	return ""
}

// KubeVIP: kube-vip runs where the cloud provider does, with svc_enable
// on, its node name from the pod's node, the chart's rights, and nodes it
// can run on; without it a LoadBalancer Service's address is allocated but
// nothing in the guest answers for it.
func KubeVIP(s *clusterstate.Snapshot) Row {
	g, h := s.Guest, &s.Harvester
	if row, bad := unlisted(g.Errors, CheckKubeVIP, clusterstate.KindWorkload, clusterstate.KindService); bad {
		return row
	}
	install := "install kube-vip with the add-ons: `harvester-bootstrap apply --guest-kubeconfig F --cluster-name " + h.Cluster +
		"` (K3s, RKE1; RKE2's bundled chart deploys it unless kube-vip.enabled is false)"
	found := kubeVIPs(g)
	var off, on []string
	for w, v := range found {
		if v == "true" {
			on = append(on, w+" "+addons.KubeVIPEnvSvcEnable+"=true")
		} else {
			off = append(off, w+" "+addons.KubeVIPEnvSvcEnable+"="+quoteOrNone(v))
		}
	}
	sort.Strings(on)
	sort.Strings(off)
	if len(off) > 0 {
		return fail(CheckKubeVIP, names(off)+": it announces no Service addresses",
			"set "+addons.KubeVIPEnvSvcEnable+": \"true\" in kube-vip's environment (`harvester-bootstrap apply` renders it so)")
	}
	if len(on) > 0 {
		return kubeVIPSetupRow(g, found, names(on))
	}
	var addressed []string
	for _, svc := range g.LoadBalancerServices() {
		if a := serviceAddress(h, svc); a != "" {
			addressed = append(addressed, svc.Namespace+"/"+svc.Name+" "+a)
		}
	}
	switch {
	case len(addressed) > 0:
		return fail(CheckKubeVIP, "no kube-vip in "+addons.DefaultNamespace+": nothing announces "+names(addressed), install)
	case len(ccmClusterNames(g)) > 0:
		return warn(CheckKubeVIP, "the cloud provider runs without kube-vip in "+addons.DefaultNamespace+": LoadBalancer addresses would be unreachable", install)
	}
	return ok(CheckKubeVIP, "no cloud provider and no LoadBalancer Service: nothing to announce")
}

// kubeVIPSetupRow checks each kube-vip DaemonSet with svc_enable on
// (checkKubeVIPSetup); on names them.
func kubeVIPSetupRow(g *clusterstate.Guest, found map[string]string, on string) Row {
	var all kubeVIPSetup
	for i := range g.DaemonSets {
		ds := &g.DaemonSets[i]
		if found["DaemonSet "+ds.Name] != "true" {
			continue
		}
		r := checkKubeVIPSetup(g, ds)
		all.problems = append(all.problems, r.problems...)
		all.warnings = append(all.warnings, r.warnings...)
		all.seen = append(all.seen, r.seen...)
	}
	fix := "apply the add-ons again: `harvester-bootstrap apply` renders kube-vip's ClusterRole and binding, " +
		addons.KubeVIPEnvNodeName + " from " + addons.KubeVIPNodeNameField + " and the chart's control-plane affinity and tolerations"
	seen := on
	if len(all.seen) > 0 {
		seen += " (" + strings.Join(all.seen, "; ") + ")"
	}
	switch {
	case len(all.problems) > 0:
		return fail(CheckKubeVIP, on+": "+strings.Join(append(all.problems, all.warnings...), "; "), fix)
	case len(all.warnings) > 0:
		return warn(CheckKubeVIP, on+": "+strings.Join(all.warnings, "; "), fix)
	}
	return ok(CheckKubeVIP, seen)
}
