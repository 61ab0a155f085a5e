package controllers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// Event reasons on a host (Node, events in namespace default) for what
// Harvester's nodedrain controller only logs: the simulator's way of
// telling `harvester-sim maintenance` why maintenance was refused or what
// the drain waits for.
const (
	ReasonMaintenanceRefused = "MaintenanceModeRefused"
	ReasonDrainWaiting       = "DrainWaiting"
	eventNamespace           = "default"
)

// reconcileNode plays, for one host, Harvester's nodedrain controller
// (drain-requested annotation: refuse or stop non-migratable VMs, cordon,
// drain), its maintain controller (maintain-status running -> completed)
// (KubeVirt's own evacuation controller migrates the VMIs of a host
// tainted kubevirt.io/drain).
func (s *sim) reconcileNode(ctx context.Context, name string) (time.Duration, error) {
	if name == "" {
		return 0, nil
	}
	node, err := s.kubeInformers.Core().V1().Nodes().Lister().Get(name)
	if err != nil || node.DeletionTimestamp != nil {
		return 0, nil
	}
	if _, ok := node.Annotations[hv.AnnDrainRequested]; ok {
		return 0, s.drainHost(ctx, node.DeepCopy())
	}
	if node.Annotations[hv.AnnMaintainStatus] == hv.MaintainRunning {
		return 0, s.completeMaintenance(ctx, node)
	}
	return 0, nil
}

// vmisOnHost are the VMIs labelled kubevirt.io/nodeName=host (Harvester's
// ListByNode: any phase).
func (s *sim) vmisOnHost(host string) []*kubevirtv1.VirtualMachineInstance {
	list, _ := s.vmis.List(labels.SelectorFromSet(labels.Set{LabelVMINodeName: host}))
	var out []*kubevirtv1.VirtualMachineInstance
	for _, o := range list {
		if u, ok := o.(*unstructured.Unstructured); ok {
			if vmi := s.cachedVMI(u.GetNamespace(), u.GetName()); vmi != nil {
				out = append(out, vmi)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out
}

// drainHost is Harvester's nodedrain controller OnNodeChange, with the
// drain (kubectl's, through the eviction API) played by KubeVirt's
// eviction rule on each VMI (evictionOf).
func (s *sim) drainHost(ctx context.Context, node *corev1.Node) error {
	_, forced := node.Annotations[hv.AnnDrainForced]
	hosts := s.hosts()
	if err := drainPossible(node, hosts); err != nil {
		return s.refuseMaintenance(ctx, node, "enabling maintenance mode is impossible: "+err.Error())
	}
	vmis := s.vmisOnHost(node.Name)
	nonMig, err := nonMigratableVMs(vmis, node.Name, hosts)
	if err != nil {
		return err
	}
	var shutdown []string
	if !forced {
		if len(nonMig) > 0 {
			return s.refuseMaintenance(ctx, node, maintenanceRefusal(nonMig))
		}
		var strategyVMs []string
		for _, vmi := range vmis {
			v := vmi.Labels[labelMaintainModeStrategy]
			if !slices.Contains(shutdownStrategies, v) {
				continue
			}
			vm := findVM(vmi)
			if vm == "" {
				return fmt.Errorf("no valid VM owner found for VMI %s", vmi.Name)
			}
			strategyVMs = append(strategyVMs, vmi.Namespace+"/"+vm)
			if v == strategyShutdown {
				continue
			}
			if err := s.annotateVM(ctx, vmi.Namespace, vm, annMaintainModeStrategyNodeName, node.Name); err != nil {
				return err
			}
		}
		shutdown = uniqueVMs(map[string][]string{keyMaintainModeStrategy: strategyVMs})
	} else {
		shutdown = uniqueVMs(nonMig)
	}
	for _, v := range shutdown {
		ns, name, _ := strings.Cut(v, "/")
		if err := s.haltVM(ctx, ns, name); err != nil {
			return err
		}
		s.log.Info("maintenance stops vm", "node", node.Name, "vm", v)
	}
	if !node.Spec.Unschedulable {
		_, err := s.updateNode(ctx, node.Name, func(n *corev1.Node) bool {
			if n.Spec.Unschedulable {
				return false
			}
			n.Spec.Unschedulable = true
			return true
		})
		return err // the update brings the host back through the queue
	}
	waiting, err := s.drainVMIs(ctx, node.Name, vmis, shutdown)
	if err != nil {
		return err
	}
	if len(waiting) > 0 {
		msg := "drain of " + node.Name + " waits for: " + strings.Join(waiting, "; ")
		if s.state.once("node/"+node.Name, "drain", msg) {
			s.nodeEvent(ctx, node, corev1.EventTypeWarning, ReasonDrainWaiting, msg)
		}
		return nil
	}
	_, err = s.updateNode(ctx, node.Name, func(n *corev1.Node) bool {
		if _, ok := n.Annotations[hv.AnnDrainRequested]; !ok {
			return false
		}
		n.Annotations[hv.AnnMaintainStatus] = hv.MaintainRunning
		delete(n.Annotations, hv.AnnDrainRequested)
		delete(n.Annotations, hv.AnnDrainForced)
		return true
	})
	return err
}

// drainVMIs evicts the launcher pod of every VMI on the host through the
// eviction API, as the drain does (skipping the pods
// maintainModeStrategyFilter skips, and waiting for the VMs already
// stopped). KubeVirt's eviction webhook decides: it refuses the eviction of
// a VMI that migrates and has its evacuation controller migrate it; an
// allowed eviction deletes the pod and the guest shuts down. It returns
// the VMIs the drain still waits for, with why.
func (s *sim) drainVMIs(ctx context.Context, host string, vmis []*kubevirtv1.VirtualMachineInstance, stopped []string) ([]string, error) {
	var waiting []string
	for _, vmi := range vmis {
		key := vmi.Namespace + "/" + vmi.Name
		if vmi.IsFinal() || vmi.DeletionTimestamp != nil && vmi.Status.NodeName != host {
			continue
		}
		if s.drainSkips(vmi, host) {
			continue // neither evicted nor waited for
		}
		if slices.Contains(stopped, key) {
			if vmi.DeletionTimestamp == nil {
				waiting = append(waiting, key+": being stopped")
			}
			continue
		}
		if vmi.Status.NodeName != host {
			continue
		}
		pod := currentPod(s.launcherPods(vmi.Namespace, vmi.UID), host)
		if pod == nil || pod.DeletionTimestamp != nil {
			waiting = append(waiting, key+": guest shutting down")
			continue
		}
		err := s.kube.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}})
		switch {
		case err == nil:
			s.log.Info("drain evicted launcher pod: guest shuts down", "node", host, "vmi", key, "pod", pod.Name)
			waiting = append(waiting, key+": guest shutting down")
		case apierrors.IsNotFound(err):
		case vmi.Status.EvacuationNodeName == host || strings.Contains(err.Error(), "evacuation"):
			waiting = append(waiting, key+": live migration ("+s.migrationProgress(vmi)+")")
		default:
			waiting = append(waiting, key+": eviction refused: "+err.Error())
		}
	}
	return waiting, nil
}

// migrationProgress describes the VMI's newest migration for a waiting drain.
func (s *sim) migrationProgress(vmi *kubevirtv1.VirtualMachineInstance) string {
	var newest *unstructured.Unstructured
	list, _ := s.migrations.ByNamespace(vmi.Namespace).List(labels.SelectorFromSet(labels.Set{LabelMigrationVMI: vmi.Name}))
	for _, o := range list {
		if u, ok := o.(*unstructured.Unstructured); ok && (newest == nil || u.GetCreationTimestamp().After(newest.GetCreationTimestamp().Time)) {
			newest = u
		}
	}
	if newest == nil {
		return "not started"
	}
	phase, _, _ := unstructured.NestedString(newest.Object, "status", "phase")
	return "migration " + newest.GetName() + " " + orPending(phase)
}

func orPending(p string) string {
	if p == "" {
		return "new"
	}
	return p
}

// completeMaintenance is Harvester's maintain controller: once no VMI is
// labelled with the host, the VMs shut down with strategy
// ShutdownAndRestartAfterEnable for it start again and the host is
// maintain-status completed. Until then it says what it waits for.
func (s *sim) completeMaintenance(ctx context.Context, node *corev1.Node) error {
	if left := s.vmisOnHost(node.Name); len(left) > 0 {
		s.maintainWaits(ctx, node, left)
		return nil
	}
	if err := s.restartAfterEnable(ctx, node.Name); err != nil {
		return err
	}
	_, err := s.updateNode(ctx, node.Name, func(n *corev1.Node) bool {
		if n.Annotations[hv.AnnMaintainStatus] != hv.MaintainRunning {
			return false
		}
		n.Annotations[hv.AnnMaintainStatus] = hv.MaintainCompleted
		return true
	})
	if err == nil {
		s.log.Info("maintenance completed", "node", node.Name)
	}
	return err
}

// restartAfterEnable starts the VMs labelled
// ShutdownAndRestartAfterEnable whose node annotation names the host: the
// maintain controller sets the run strategy saved in
// harvesterhci.io/vmRunStrategy (else RerunOnFailure) and removes the
// annotation.
func (s *sim) restartAfterEnable(ctx context.Context, host string) error {
	dyn, strategy := s.dyn, strategyShutdownAndRestartAfterEnable
	list, err := dyn.Resource(gvrVM).Namespace("").List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{labelMaintainModeStrategy: strategy}).String()})
	if err != nil {
		return fmt.Errorf("list vms with %s=%s: %w", labelMaintainModeStrategy, strategy, err)
	}
	for _, u := range list.Items {
		if u.GetAnnotations()[annMaintainModeStrategyNodeName] != host {
			continue
		}
		vms := dyn.Resource(gvrVM).Namespace(u.GetNamespace())
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := vms.Get(ctx, u.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			ann := cur.GetAnnotations()
			if ann[annMaintainModeStrategyNodeName] != host {
				return nil
			}
			rs := ann[annVMRunStrategy]
			if rs == "" {
				rs = string(kubevirtv1.RunStrategyRerunOnFailure)
			}
			_ = unstructured.SetNestedField(cur.Object, rs, "spec", "runStrategy")
			unstructured.RemoveNestedField(cur.Object, "spec", "running")
			delete(ann, annMaintainModeStrategyNodeName)
			cur.SetAnnotations(ann)
			_, err = vms.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("restart vm %s/%s after maintenance: %w", u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}

// refuseMaintenance is the nodedrain controller's refusal: the
// maintenance annotations are removed and the error (only logged by
// Harvester) is an event on the host.
func (s *sim) refuseMaintenance(ctx context.Context, node *corev1.Node, msg string) error {
	// The event first: whoever sees the request gone finds why. Then the
	// request is withdrawn only if it is the one judged (the cache may be
	// behind): a newer one, e.g. the same host requested again with force
	// right after this refusal, comes through the queue itself.
	s.log.Info("maintenance refused", "node", node.Name, "why", msg)
	s.nodeEvent(ctx, node, corev1.EventTypeWarning, ReasonMaintenanceRefused, msg)
	_, err := s.updateNode(ctx, node.Name, func(n *corev1.Node) bool {
		if n.ResourceVersion != node.ResourceVersion {
			return false
		}
		_, a := n.Annotations[hv.AnnMaintainStatus]
		_, b := n.Annotations[hv.AnnDrainRequested]
		_, c := n.Annotations[hv.AnnDrainForced]
		delete(n.Annotations, hv.AnnMaintainStatus)
		delete(n.Annotations, hv.AnnDrainRequested)
		delete(n.Annotations, hv.AnnDrainForced)
		return a || b || c
	})
	return err
}

// nodeEvent records an event about a host (namespace default, as for any
// cluster-scoped object).
func (s *sim) nodeEvent(ctx context.Context, node *corev1.Node, typ, reason, msg string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: node.Name + ".", Namespace: eventNamespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID},
		Reason:         reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: "harvester-sim/node-drain-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := s.kube.CoreV1().Events(eventNamespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.log.Warn("record node event", "node", node.Name, "err", err)
	}
}

// updateNode applies change to the live host and updates it (conflicts retried).
func (s *sim) updateNode(ctx context.Context, name string, change func(*corev1.Node) bool) (*corev1.Node, error) {
	var out *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := s.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if !change(n) {
			out = n
			return nil
		}
		out, err = s.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update node %s: %w", name, err)
	}
	return out, nil
}

// annotateVM sets one annotation on a VM.
func (s *sim) annotateVM(ctx context.Context, ns, name, key, value string) error {
	_, err := s.updateMeta(ctx, gvrVM, ns, name, func(cur *unstructured.Unstructured) bool {
		ann := cur.GetAnnotations()
		if ann[key] == value {
			return false
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[key] = value
		cur.SetAnnotations(ann)
		return true
	})
	if err != nil && apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// haltVM is Harvester's findAndStopVM: spec.runStrategy Halted.
func (s *sim) haltVM(ctx context.Context, ns, name string) error {
	return StopVM(ctx, s.dyn, ns, name)
}

// hosts are Harvester's hosts (the Node cache), by name.
func (s *sim) hosts() []corev1.Node {
	list, _ := s.kubeInformers.Core().V1().Nodes().Lister().List(labels.Everything())
	out := make([]corev1.Node, 0, len(list))
	for _, n := range list {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
