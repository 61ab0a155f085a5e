package sim

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/sim/guests"
	"github.com/harvester-kit/harvester-machine/sim/kubevip"
)

// guestNodeRow is one node line of a guest cluster in `harvester-sim status`.
type guestNodeRow struct {
	cluster, node, ready, ip, taints, zone, region string
}

// guestNodeRows describes a guest cluster's nodes (pure).
func guestNodeRows(cluster string, nodes []corev1.Node) []guestNodeRow {
	rows := make([]guestNodeRow, 0, len(nodes))
	for _, n := range nodes {
		r := guestNodeRow{cluster: cluster, node: n.Name, ready: "NotReady", ip: "-",
			zone: orDash(n.Labels[guests.LabelZone]), region: orDash(n.Labels[guests.LabelRegion])}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				r.ready = "Ready"
			}
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				r.ip = a.Address
			}
		}
		r.taints = nodeTaints(&n)
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].node < rows[j].node })
	return rows
}

// addonSummary is "name (source)" of each Addon (pure).
func addonSummary(addons []unstructured.Unstructured) []string {
	var out []string
	for _, a := range addons {
		src, _, _ := unstructured.NestedString(a.Object, "spec", "source")
		out = append(out, a.GetName()+" ("+src+")")
	}
	sort.Strings(out)
	return out
}

// workloadSummary is "name (Kind)" of each Deployment and DaemonSet the
// add-ons put in kube-system, sorted (pure).
func workloadSummary(deps []appsv1.Deployment, dss []appsv1.DaemonSet) []string {
	var out []string
	for _, d := range deps {
		out = append(out, d.Name+" (Deployment)")
	}
	for _, d := range dss {
		out = append(out, d.Name+" (DaemonSet)")
	}
	sort.Strings(out)
	return out
}

// guestClusters lists the guest clusters with a kubeconfig in DIR/guests.
func guestClusters(stateDir string) []string {
	entries, _ := os.ReadDir(filepath.Join(stateDir, GuestsDir))
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(stateDir, GuestsDir, e.Name(), KubeconfigFile)); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// PrintGuests writes each running guest cluster's nodes (ready, address,
// taints, zone), the add-ons it applied and the workloads they run in
// kube-system (the cloud provider, kube-vip, the CSI driver).
func PrintGuests(ctx context.Context, stateDir string, w io.Writer) error {
	clusters := guestClusters(stateDir)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "GUEST CLUSTER\tNODE\tSTATUS\tINTERNAL-IP\tZONE\tREGION\tTAINTS")
	if len(clusters) == 0 {
		fmt.Fprintln(tw, "(no guest clusters: start with --guest-clusters and label VMs guestcluster.harvesterhci.io/name)")
		return tw.Flush()
	}
	addonLines, workloadLines := map[string][]string{}, map[string][]string{}
	for _, cluster := range clusters {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(stateDir, GuestsDir, cluster, KubeconfigFile))
		if err != nil {
			return fmt.Errorf("status: guest cluster %s: %w", cluster, err)
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(tw, "%s\t(unreachable: %v)\n", cluster, err)
			continue
		}
		for _, r := range guestNodeRows(cluster, nodes.Items) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.cluster, r.node, r.ready, r.ip, r.zone, r.region, r.taints)
		}
		if len(nodes.Items) == 0 {
			fmt.Fprintf(tw, "%s\t(no nodes yet)\n", cluster)
		}
		if addons, err := dyn.Resource(guests.AddonGVR).Namespace(guests.AddonNamespace).List(ctx, metav1.ListOptions{}); err == nil {
			addonLines[cluster] = addonSummary(addons.Items)
		}
		deps, derr := kube.AppsV1().Deployments(guests.AddonNamespace).List(ctx, metav1.ListOptions{})
		dss, serr := kube.AppsV1().DaemonSets(guests.AddonNamespace).List(ctx, metav1.ListOptions{})
		if derr == nil && serr == nil {
			workloadLines[cluster] = workloadSummary(deps.Items, dss.Items)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "GUEST CLUSTER\tADD-ONS APPLIED\tWORKLOADS IN "+guests.AddonNamespace)
	for _, cluster := range clusters {
		list := strings.Join(addonLines[cluster], ", ")
		workloads := strings.Join(workloadLines[cluster], ", ")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cluster, orDash(list), orDash(workloads))
	}
	printKubeVIP(tw, stateDir, clusters)
	return tw.Flush()
}

// printKubeVIP writes each guest node's kube-vip (the real one the
// simulator runs): its state, restarts, the gratuitous ARPs seen from it
// and its last error.
func printKubeVIP(w io.Writer, stateDir string, clusters []string) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "GUEST CLUSTER\tNODE\tKUBE-VIP\tRESTARTS\tGRATUITOUS ARP\tLAST ERROR")
	rows := 0
	for _, cluster := range clusters {
		for _, r := range kubeVIPRows(kubevip.ReadStates(filepath.Join(stateDir, GuestsDir, cluster))) {
			fmt.Fprintf(w, "%s\t%s\n", cluster, r)
			rows++
		}
	}
	if rows == 0 {
		fmt.Fprintln(w, "(no kube-vip run: it runs with --guest-interface for guest clusters with a kube-vip DaemonSet)")
	}
}

// kubeVIPRows describes kube-vip states, one tab-separated line each (pure).
func kubeVIPRows(states []kubevip.State) []string {
	var out []string
	for _, s := range states {
		phase := s.Phase
		if s.Reason != "" {
			phase += " (" + s.Reason + ")"
		}
		var arps []string
		for addr, n := range s.GratuitousARPs {
			arps = append(arps, fmt.Sprintf("%s x%d", addr, n))
		}
		sort.Strings(arps)
		out = append(out, strings.Join([]string{s.Node, phase, fmt.Sprint(s.Restarts), orDash(strings.Join(arps, ", ")), orDash(s.LastError)}, "\t"))
	}
	return out
}
