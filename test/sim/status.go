package sim

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var (
	vmGVR  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmiGVR = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
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
			r.zone = orDash(vmi.GetAnnotations()[harvester.ZoneKey])
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
	fmt.Fprintln(tw, "HOST\tREGION\tZONE")
	for _, n := range nodes.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, n.Labels[harvester.RegionKey], n.Labels[harvester.ZoneKey])
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
	return tw.Flush()
}
