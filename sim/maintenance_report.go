package sim

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/controllers"
)

// HostReport is what happened to the VMs of one host.
type HostReport struct {
	Host     string
	Migrated []string // "ns/name -> host"
	ShutDown []string // "ns/name"
	Blocked  []string // "ns/name: why"
	Refused  string   // Harvester's refusal, when it refused
}

// Print writes the report.
func (r HostReport) Print(w io.Writer) {
	if r.Host == "" {
		return
	}
	_, _ = fmt.Fprintf(w, "host %s\n", r.Host)
	if r.Refused != "" {
		_, _ = fmt.Fprintf(w, "  refused: %s\n", r.Refused)
	}
	for _, group := range []struct {
		what string
		list []string
	}{{"migrated", r.Migrated}, {"shut down", r.ShutDown}, {"blocked", r.Blocked}} {
		for _, v := range group.list {
			_, _ = fmt.Fprintf(w, "  %-9s %s\n", group.what, v)
		}
	}
}

// vmiSnapshot is a VMI's place and phase.
type vmiSnapshot struct {
	UID   string
	Node  string
	Phase kubevirtv1.VirtualMachineInstancePhase
}

// vmisOn lists the VMIs labelled with the host, by namespace/name.
func vmisOn(ctx context.Context, dyn dynamic.Interface, host string) (map[string]vmiSnapshot, error) {
	list, err := dyn.Resource(vmiGVR).Namespace("").List(ctx, metav1.ListOptions{LabelSelector: controllers.LabelVMINodeName + "=" + host})
	if err != nil {
		return nil, fmt.Errorf("list vmis on %s: %w", host, err)
	}
	out := map[string]vmiSnapshot{}
	for _, u := range list.Items {
		var st kubevirtv1.VirtualMachineInstanceStatus
		if m, ok := u.Object["status"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
		}
		out[u.GetNamespace()+"/"+u.GetName()] = vmiSnapshot{UID: string(u.GetUID()), Node: st.NodeName, Phase: st.Phase}
	}
	return out, nil
}

// outcome reports where each VMI that was on host went.
func outcome(ctx context.Context, dyn dynamic.Interface, host string, before map[string]vmiSnapshot, rep *HostReport) {
	keys := make([]string, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		u, err := dyn.Resource(vmiGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || string(u.GetUID()) != before[k].UID {
			rep.ShutDown = append(rep.ShutDown, k)
			continue
		}
		var st kubevirtv1.VirtualMachineInstanceStatus
		if m, ok := u.Object["status"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
		}
		switch {
		case st.Phase == kubevirtv1.Succeeded || st.Phase == kubevirtv1.Failed || u.GetDeletionTimestamp() != nil:
			rep.ShutDown = append(rep.ShutDown, k)
		case st.NodeName != host:
			rep.Migrated = append(rep.Migrated, k+" -> "+st.NodeName)
		}
	}
}

// blockers names the VMIs still on the host (not Succeeded), each with
// why(launcher pod on the host) when it says something, else its phase.
func blockers(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, host string, why func(pod string) string) []string {
	left, _ := vmisOn(ctx, dyn, host)
	var out []string
	for k, v := range left {
		if v.Phase == kubevirtv1.Succeeded {
			continue
		}
		r := ""
		if why != nil {
			if pod := launcherPodOn(ctx, kube, k, v.UID, host); pod != "" {
				r = why(pod)
			}
		}
		if r == "" {
			r = "still on the host (phase " + string(v.Phase) + ")"
		}
		out = append(out, k+": "+r)
	}
	sort.Strings(out)
	return out
}

// launcherPodOn is the name of the VMI's virt-launcher Pod on host
// (KubeVirt's label kubevirt.io/created-by: the VMI's UID), or "".
func launcherPodOn(ctx context.Context, kube kubernetes.Interface, key, uid, host string) string {
	ns, _, _ := strings.Cut(key, "/")
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: kubevirtv1.CreatedByLabel + "=" + uid, FieldSelector: "spec.nodeName=" + host})
	if err != nil || len(pods.Items) == 0 {
		return ""
	}
	return pods.Items[len(pods.Items)-1].Name
}
