package sim

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

var (
	vmGVR   = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmiGVR  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	lbGVR   = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "loadbalancers"}
	poolGVR = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "ippools"}
)

// vmRow is one line of `harvester-sim status`.
type vmRow struct {
	namespace, name, status, phase, host, zone, ip string
}

// vmRows joins VMs with their VMIs (pure).
func vmRows(vms, vmis []unstructured.Unstructured) []vmRow {
	byKey := map[string]*unstructured.Unstructured{}
	for i := range vmis {
		byKey[vmis[i].GetNamespace()+"/"+vmis[i].GetName()] = &vmis[i]
	}
	rows := make([]vmRow, 0, len(vms))
	for _, vm := range vms {
		r := vmRow{namespace: vm.GetNamespace(), name: vm.GetName(), status: "-", phase: "-", host: "-", zone: "-", ip: "-"}
		if s, _, _ := unstructured.NestedString(vm.Object, "status", "printableStatus"); s != "" {
			r.status = s
		}
		if vmi := byKey[vm.GetNamespace()+"/"+vm.GetName()]; vmi != nil {
			r.phase = orDash(nested(vmi, "status", "phase"))
			r.host = orDash(nested(vmi, "status", "nodeName"))
			r.zone = orDash(vmi.GetAnnotations()[corev1.LabelTopologyZone])
			ifaces, _, _ := unstructured.NestedSlice(vmi.Object, "status", "interfaces")
			var ips []string
			for _, i := range ifaces {
				if m, ok := i.(map[string]any); ok {
					if ip, _ := m["ipAddress"].(string); ip != "" {
						ips = append(ips, ip)
					}
				}
			}
			if len(ips) > 0 {
				r.ip = strings.Join(ips, ",")
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func nested(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PrintStatus writes the hosts and the virtual machines of the simulator.
func PrintStatus(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, w io.Writer) error {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("status: list hosts: %w", err)
	}
	vms, err := dyn.Resource(vmGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("status: list VMs: %w", err)
	}
	vmis, err := dyn.Resource(vmiGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("status: list VMIs: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tREGION\tZONE\tREADY\tTAINTS")
	for _, n := range nodes.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, n.Labels[corev1.LabelTopologyRegion], n.Labels[corev1.LabelTopologyZone], hostReady(&n), nodeTaints(&n))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NAMESPACE\tVM\tSTATUS\tPHASE\tHOST\tZONE\tIP")
	rows := vmRows(vms.Items, vmis.Items)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.namespace, r.name, r.status, r.phase, r.host, r.zone, r.ip)
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, "(no virtual machines)")
	}
	lbs, err := dyn.Resource(lbGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("status: list load balancers: %w", err)
	}
	pools, err := dyn.Resource(poolGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("status: list IP pools: %w", err)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NAMESPACE	LOADBALANCER	CLUSTER	POOL	ALLOCATED	ADDRESS	READY")
	for _, r := range lbRows(lbs.Items) {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if len(lbs.Items) == 0 {
		fmt.Fprintln(tw, "(no load balancers)")
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "IPPOOL	TOTAL	AVAILABLE	ALLOCATED")
	for _, p := range pools.Items {
		total, _, _ := unstructured.NestedInt64(p.Object, "status", "total")
		avail, _, _ := unstructured.NestedInt64(p.Object, "status", "available")
		alloc, _, _ := unstructured.NestedStringMap(p.Object, "status", "allocated")
		var pairs []string
		for ip, owner := range alloc {
			pairs = append(pairs, ip+"="+owner)
		}
		slices.Sort(pairs)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", p.GetName(), total, avail, orDash(strings.Join(pairs, ",")))
	}
	if len(pools.Items) == 0 {
		fmt.Fprintln(tw, "(no IP pools)")
	}
	return tw.Flush()
}

// lbRows describes load balancers (pure): namespace, name, cluster,
// pool, allocated IP, address, Ready (with the message when not ready).
func lbRows(lbs []unstructured.Unstructured) [][]string {
	rows := make([][]string, 0, len(lbs))
	for _, l := range lbs {
		ready := "-"
		conds, _, _ := unstructured.NestedSlice(l.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
				ready = fmt.Sprint(m["status"])
				if msg, _ := m["message"].(string); msg != "" {
					ready += " (" + msg + ")"
				}
			}
		}
		rows = append(rows, []string{l.GetNamespace(), l.GetName(), orDash(l.GetAnnotations()[lbapi.AnnCluster]),
			orDash(nested(&l, "status", "allocatedAddress", "ipPool")), orDash(nested(&l, "status", "allocatedAddress", "ip")),
			orDash(nested(&l, "status", "address")), ready})
	}
	return rows
}

// hostReady is the status of a host's Ready condition ("-" without one).
func hostReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status)
		}
	}
	return "-"
}

// nodeTaints lists a node's taints (a host's or a guest node's) as
// KEY[=VALUE]:EFFECT, comma-separated ("-" without any).
func nodeTaints(n *corev1.Node) string {
	var out []string
	for _, t := range n.Spec.Taints {
		kv := t.Key
		if t.Value != "" {
			kv += "=" + t.Value
		}
		out = append(out, kv+":"+string(t.Effect))
	}
	return orDash(strings.Join(out, ","))
}
