package maintenance

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/daemonset"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// placed is a running VMI and where the check has it.
type placed struct {
	vmi           *kubevirtv1.VirtualMachineInstance
	vm            *kubevirtv1.VirtualMachine
	cluster, pool string
	node          string
	down          bool // shut down (by this check, or not running)
	need          corev1.ResourceList
	// launcher is the VMI's virt-launcher pod on its host, nil when not
	// seen (pods not listed).
	launcher *corev1.Pod
}

// world is the hosts and the VMIs as the check moves them.
type world struct {
	h      *clusterstate.Hosts
	nodes  map[string]*corev1.Node
	vmis   []*placed
	podUse map[string]corev1.ResourceList
	// restoring: the VMs the current step stopped that restoreVM starts
	// again after it (restoreStopped).
	restoring []*placed
}

// launcherTolerations are those the DefaultTolerationSeconds admission
// plugin gives every pod, virt-launcher pods among them.
var launcherTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
}

func newWorld(h *clusterstate.Hosts) *world {
	w := &world{h: h, nodes: map[string]*corev1.Node{}, podUse: map[string]corev1.ResourceList{}}
	for i := range h.Nodes {
		w.nodes[h.Nodes[i].Name] = &h.Nodes[i]
	}
	vms := map[string]*kubevirtv1.VirtualMachine{}
	for i := range h.VMs {
		vms[h.VMs[i].Namespace+"/"+h.VMs[i].Name] = &h.VMs[i]
	}
	launchers := map[string]*corev1.Pod{} // by VMI UID
	for i := range h.Pods {
		p := &h.Pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		if uid := p.Labels[kubevirtv1.CreatedByLabel]; uid != "" && p.Labels[kubevirtv1.AppLabel] == "virt-launcher" {
			launchers[uid] = p
			continue
		}
		add(w.podUse, p.Spec.NodeName, podRequests(p))
	}
	for i := range h.VMIs {
		vmi := &h.VMIs[i]
		if vmi.Status.NodeName == "" || vmi.IsFinal() || vmi.DeletionTimestamp != nil {
			continue
		}
		p := &placed{vmi: vmi, node: vmi.Status.NodeName, down: vmi.Status.Phase != kubevirtv1.Running}
		p.vm = vms[vmi.Namespace+"/"+vmi.Name]
		p.cluster, p.pool = vmi.Labels[harvester.LabelGuestCluster], vmi.Labels[harvester.LabelNodePool]
		if p.cluster == "" && p.vm != nil {
			p.cluster, p.pool = p.vm.Labels[harvester.LabelGuestCluster], p.vm.Labels[harvester.LabelNodePool]
		}
		if pod, ok := launchers[string(vmi.UID)]; ok {
			p.launcher, p.need = pod, podRequests(pod)
		} else {
			p.need = w.launcherNeed(vmi)
		}
		w.vmis = append(w.vmis, p)
	}
	sort.Slice(w.vmis, func(i, j int) bool {
		a, b := w.vmis[i].vmi, w.vmis[j].vmi
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return w
}

// launcherNeed is what a VMI's virt-launcher pod requests when the pod
// itself is not visible: the pod KubeVirt would render for it
// (internal/harvester), totalled as the scheduler totals it.
func (w *world) launcherNeed(vmi *kubevirtv1.VirtualMachineInstance) corev1.ResourceList {
	arch := ""
	if n := w.nodes[vmi.Status.NodeName]; n != nil {
		arch = n.Status.NodeInfo.Architecture
	}
	return podRequests(harvester.LauncherPod(&vmi.Spec, arch, w.h.OverheadRatio))
}

// podRequests is what kube-scheduler's NodeResourcesFit counts for a pod
// (component-helpers' PodRequests): its containers and sidecars, an init
// container where it asks more, and the pod overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	requests, _ := harvester.PodTotals(p)
	return requests
}

func add(m map[string]corev1.ResourceList, node string, req corev1.ResourceList) {
	if m[node] == nil {
		m[node] = corev1.ResourceList{}
	}
	for n, q := range req {
		v := m[node][n]
		v.Add(q)
		m[node][n] = v
	}
}

func (w *world) nodeNames() []string {
	out := make([]string, 0, len(w.nodes))
	for n := range w.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// on is the running VMIs the check has on node.
func (w *world) on(node string) []*placed {
	var out []*placed
	for _, p := range w.vmis {
		if p.node == node && !p.down {
			out = append(out, p)
		}
	}
	return out
}

// free is node's allocatable less what its pods and VMIs request.
func (w *world) free(node string) corev1.ResourceList {
	out := w.nodes[node].Status.Allocatable.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	used := map[string]corev1.ResourceList{}
	add(used, node, w.podUse[node])
	for _, p := range w.on(node) {
		add(used, node, p.need)
	}
	for n, q := range used[node] {
		v := out[n]
		v.Sub(q)
		out[n] = v
	}
	return out
}

// targets are the hosts p could migrate to, with why the others cannot
// (the first reason per host, summed up).
func (w *world) targets(p *placed, unavailable map[string]bool) ([]string, string) {
	var ok, why []string
	for _, name := range w.nodeNames() {
		if name == p.node {
			continue
		}
		if r := w.whyNot(p, name, unavailable); r != "" {
			why = append(why, name+": "+r)
			continue
		}
		ok = append(ok, name)
	}
	if len(why) == 0 {
		why = []string{"no other host"}
	}
	return ok, strings.Join(why, "; ")
}

// whyNot says why node cannot take p's migration target pod, or "".
func (w *world) whyNot(p *placed, name string, unavailable map[string]bool) string {
	n := w.nodes[name]
	if unavailable[name] {
		return "in maintenance too"
	}
	if n.Spec.Unschedulable {
		return "cordoned"
	}
	spec := corev1.PodSpec{NodeSelector: p.vmi.Spec.NodeSelector, Affinity: p.vmi.Spec.Affinity, Tolerations: p.vmi.Spec.Tolerations}
	if r := daemonset.WhyPodNotOn(spec, n, launcherTolerations); r != "" {
		return r
	}
	if r := w.antiAffinity(p, n); r != "" {
		return r
	}
	free := w.free(name)
	var short []string
	for res, q := range p.need {
		if q.IsZero() {
			continue
		}
		f := free[res]
		if f.Cmp(q) < 0 {
			short = append(short, fmt.Sprintf("%s (needs %s, %s free)", res, q.String(), f.String()))
		}
	}
	if len(short) > 0 {
		sort.Strings(short)
		return "no room: " + strings.Join(short, ", ")
	}
	return ""
}

// antiAffinity: p's required pod anti-affinity against the VMIs the check
// has in node's topology domain (VMI labels are its launcher pod's).
func (w *world) antiAffinity(p *placed, n *corev1.Node) string {
	a := p.vmi.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return ""
	}
	for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		dom, has := n.Labels[term.TopologyKey]
		if !has {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			return "required pod anti-affinity: " + err.Error()
		}
		for _, o := range w.vmis {
			if o == p || o.down || !sameNamespace(term, p.vmi.Namespace, o.vmi.Namespace) {
				continue
			}
			if on := w.nodes[o.node]; on != nil && on.Labels[term.TopologyKey] == dom && sel.Matches(labels.Set(o.vmi.Labels)) {
				return "required pod anti-affinity (" + o.vmi.Name + " in " + term.TopologyKey + "=" + dom + ")"
			}
		}
	}
	return ""
}

func sameNamespace(term corev1.PodAffinityTerm, own, other string) bool {
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		return own == other
	}
	for _, ns := range term.Namespaces {
		if ns == other {
			return true
		}
	}
	return false
}

// pick is the target the check assumes: the most free memory, then name.
func (w *world) pick(targets []string) string {
	best, bestFree := "", resource.Quantity{}
	for _, t := range targets {
		f := w.free(t)[corev1.ResourceMemory]
		if best == "" || f.Cmp(bestFree) > 0 {
			best, bestFree = t, f
		}
	}
	return best
}

// notes say what the check could not see.
func (w *world) notes(hosts []string) []string {
	var out []string
	if w.h.Pods == nil {
		out = append(out, "pods could not be listed ("+w.h.Errors[clusterstate.KindPod]+"): room on each host is judged from the VMIs alone")
	}
	for k, e := range w.h.Errors {
		if k != clusterstate.KindPod {
			out = append(out, e)
		}
	}
	others, refused := 0, 0
	for _, h := range hosts {
		for _, p := range w.vmis {
			if p.node == h && p.cluster == "" && !p.down {
				others++
				if NotMigratable(p.vmi) != "" {
					refused++
				}
			}
		}
	}
	if others > 0 {
		out = append(out, fmt.Sprintf("%d VMs of no guest cluster run on these hosts; they are not judged here (%d with LiveMigratable False: "+
			"Harvester refuses maintenance mode without force for them too)", others, refused))
	}
	if w.h.Namespace != "" {
		out = append(out, "only VMs of namespace "+w.h.Namespace+" are judged and counted")
	}
	sort.Strings(out)
	return out
}
