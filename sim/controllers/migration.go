package controllers

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// GVRMigration is KubeVirt's VirtualMachineInstanceMigration.
var GVRMigration = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}

var gvrVMIM = GVRMigration

// targetPods remembers each migration's target launcher pod by migration UID.
type targetPods struct {
	mu   sync.Mutex
	pods map[types.UID]*targetPod
}

func (t *targetPods) get(uid types.UID) *targetPod {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.pods[uid]; ok {
		c := *p
		return &c
	}
	return nil
}

func (t *targetPods) set(uid types.UID, p targetPod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pods[uid] = &p
}

// forgetExcept drops the target pods of migrations that are gone.
func (t *targetPods) forgetExcept(live map[types.UID]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid := range t.pods {
		if !live[uid] {
			delete(t.pods, uid)
		}
	}
}

// reconcileMigration moves a VirtualMachineInstanceMigration through
// KubeVirt's phases (stepMigration) and plays the target pod, the
// scheduler and both virt-handlers on the way.
func (s *sim) reconcileMigration(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.migrations, ns, name)
	if u == nil {
		s.forgetMigrations()
		return 0, nil
	}
	var m kubevirtv1.VirtualMachineInstanceMigration
	if err := decodeStrict(u, &m); err != nil {
		var st kubevirtv1.VirtualMachineInstanceMigrationStatus
		looseStatus(u, &st)
		if st.Phase == kubevirtv1.MigrationFailed {
			return 0, nil
		}
		old := *st.DeepCopy()
		st.Phase = kubevirtv1.MigrationFailed
		if s.state.once(key, "invalid", err.Error()) {
			s.event.emit(u, corev1.EventTypeWarning, "FailedMigration", "spec does not decode as kubevirt.io/v1 VirtualMachineInstanceMigration: "+err.Error())
		}
		_, err := s.writeStatus(ctx, gvrVMIM, u, old, st)
		return 0, err
	}
	if u.GetLabels()[LabelMigrationVMI] != m.Spec.VMIName {
		_, err := s.updateMeta(ctx, gvrVMIM, ns, name, func(cur *unstructured.Unstructured) bool {
			l := cur.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			if l[LabelMigrationVMI] == m.Spec.VMIName {
				return false
			}
			l[LabelMigrationVMI] = m.Spec.VMIName
			cur.SetLabels(l)
			return true
		})
		return 0, err
	}
	vmi := s.cachedVMI(ns, m.Spec.VMIName)
	now := time.Now()
	view := migrationView{
		Phase: m.Status.Phase, UID: m.UID, VMI: vmi, Target: s.migTargets.get(m.UID), Now: now,
		TargetBoot: s.opts.BootDelay, Duration: s.opts.MigrationDuration, UnschedulableTimeout: unschedulableTimeout(m.Annotations),
	}
	if vmi != nil {
		view.SourceDown = s.kubelets.HostDown(vmi.Status.NodeName)
	}
	if view.Target != nil && view.Target.Node != "" {
		view.TargetDown = s.kubelets.HostDown(view.Target.Node)
	}
	if vmi != nil && vmi.Status.MigrationState != nil {
		view.OtherActive = s.migrationActive(ns, vmi.Status.MigrationState.MigrationUID, m.UID)
	}
	step := stepMigration(view)
	st := m.Status.DeepCopy()
	requeue := step.Wait
	switch step.Action {
	case migCreateTarget:
		pod, err := s.kube.CoreV1().Pods(ns).Create(ctx, migrationTargetPod(vmi, &m, s.overheadRatio(ctx)), metav1.CreateOptions{})
		if err != nil {
			return 0, fmt.Errorf("create migration target pod for %s/%s: %w", ns, vmi.Name, err)
		}
		s.migTargets.set(m.UID, targetPod{Name: pod.Name, Created: now})
		s.event.emit(u, corev1.EventTypeNormal, "SuccessfulCreate", "Created migration target pod "+pod.Name)
		requeue = time.Millisecond
	case migTargetPlacement:
		t := *view.Target
		placed, err := s.placeTarget(ctx, ns, &t, now)
		if err != nil {
			return 0, err
		}
		s.migTargets.set(m.UID, t)
		if placed {
			requeue = time.Millisecond
		} else if t.Unschedulable != "" {
			step.Message += " " + t.Unschedulable
		}
	case migDeleteTarget:
		t := *view.Target
		err := s.kube.CoreV1().Pods(ns).Delete(ctx, t.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("delete migration target pod %s/%s: %w", ns, t.Name, err)
		}
		t.Deleted = true
		s.migTargets.set(m.UID, t)
		requeue = time.Millisecond
	case migHandOff, migTargetReady, migStart, migComplete:
		if err := s.advanceVMIMigration(ctx, &m, vmi, view.Target, step.Action); err != nil {
			return 0, err
		}
	case migRecordFinal:
		st.MigrationState = vmi.Status.MigrationState.DeepCopy()
	}
	if step.Reason != "" && s.state.once(key, "migration-event", step.Reason+step.Message) {
		typ := corev1.EventTypeNormal
		if step.Warning {
			typ = corev1.EventTypeWarning
		}
		s.event.emit(u, typ, step.Reason, step.Message)
	}
	if st.Phase != step.Phase {
		st.Phase = step.Phase
		st.PhaseTransitionTimestamps = append(st.PhaseTransitionTimestamps, kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
			Phase: step.Phase, PhaseTransitionTimestamp: metav1.NewTime(now)})
		if step.Phase == kubevirtv1.MigrationSucceeded || step.Phase == kubevirtv1.MigrationFailed {
			s.log.Info("migration finished", "migration", key, "vmi", m.Spec.VMIName, "phase", step.Phase)
		}
	}
	if _, err := s.writeStatus(ctx, gvrVMIM, u, m.Status, st); err != nil {
		return 0, err
	}
	return requeue, nil
}

// placeTarget reads the target launcher pod as the real kube-scheduler
// left it: bound (then played as kubelet would: Running), or with its
// PodScheduled condition False and the scheduler's message. It reports
// whether the pod is placed.
func (s *sim) placeTarget(ctx context.Context, ns string, t *targetPod, now time.Time) (bool, error) {
	pod, err := s.kubeInformers.Core().V1().Pods().Lister().Pods(ns).Get(t.Name)
	if err != nil {
		return false, nil //nolint:nilerr // not in the cache yet: its event requeues the migration
	}
	if pod.Spec.NodeName == "" {
		if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
			t.Unschedulable = c.Message
		}
		return false, nil
	}
	if pod.Status.Phase != corev1.PodRunning {
		if err := s.startLauncher(ctx, pod); err != nil {
			return false, err
		}
	}
	t.Node, t.Unschedulable, t.Placed = pod.Spec.NodeName, "", now
	return true, nil
}

// advanceVMIMigration writes what the controller and the virt-handlers
// put on the VMI at each step: the hand-off (source, target, UID, the
// label kubevirt.io/migrationTargetNodeName), the target's address, the
// start (mode PreCopy) and the completion: the VMI now runs on the target
// (status.nodeName, label kubevirt.io/nodeName, Harvester's topology
// annotations for node-driver VMs).
func (s *sim) advanceVMIMigration(ctx context.Context, m *kubevirtv1.VirtualMachineInstanceMigration, vmi *kubevirtv1.VirtualMachineInstance,
	t *targetPod, action migrationAction) error {
	now := metav1.Now()
	var hostLabels map[string]string
	var hostAddr string
	if t != nil {
		if n, err := s.kubeInformers.Core().V1().Nodes().Lister().Get(t.Node); err == nil {
			hostLabels = n.Labels
			hostAddr = t.Node
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					hostAddr = a.Address
				}
			}
		}
	}
	copyTopology := false
	if owner := controllerVMNameOf(vmi); owner != "" {
		if vm := getCached(s.vms, vmi.Namespace, owner); vm != nil {
			copyTopology = vm.GetLabels()[hv.LabelCreator] == hv.CreatorNodeDriver
		}
	}
	_, err := s.updateMeta(ctx, gvrVMI, vmi.Namespace, vmi.Name, func(cur *unstructured.Unstructured) bool {
		if cur.GetUID() != vmi.UID {
			return false
		}
		var st kubevirtv1.VirtualMachineInstanceStatus
		looseStatus(cur, &st)
		old := st.DeepCopy()
		lbls, ann := cur.GetLabels(), cur.GetAnnotations()
		if lbls == nil {
			lbls = map[string]string{}
		}
		if ann == nil {
			ann = map[string]string{}
		}
		oldL, oldA := maps.Clone(lbls), maps.Clone(ann)
		ms := st.MigrationState
		switch action {
		case migHandOff:
			st.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
				MigrationUID: m.UID, TargetNode: t.Node, SourceNode: st.NodeName, TargetPod: t.Name}
			lbls[kubevirtv1.MigrationTargetNodeNameLabel] = t.Node
		case migTargetReady:
			if ms == nil || ms.MigrationUID != m.UID {
				return false
			}
			ms.TargetNodeAddress = hostAddr
		case migStart:
			if ms == nil || ms.MigrationUID != m.UID {
				return false
			}
			ms.StartTimestamp, ms.Mode = &now, kubevirtv1.MigrationPreCopy
		case migComplete:
			if ms == nil || ms.MigrationUID != m.UID {
				return false
			}
			ms.Completed, ms.EndTimestamp = true, &now
			ms.TargetNodeDomainDetected, ms.TargetNodeDomainReadyTimestamp = true, &now
			st.NodeName = ms.TargetNode
			st.EvacuationNodeName = ""
			lbls[LabelVMINodeName] = ms.TargetNode
			delete(lbls, kubevirtv1.MigrationTargetNodeNameLabel)
			if copyTopology {
				for _, k := range []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelHostname} {
					if v, ok := hostLabels[k]; ok {
						ann[k] = v
					}
				}
			}
		}
		if equality.Semantic.DeepEqual(old, &st) && maps.Equal(oldL, lbls) && maps.Equal(oldA, ann) {
			return false
		}
		sm, err := toUnstructured(&st)
		if err != nil {
			return false
		}
		cur.Object["status"] = sm
		cur.SetLabels(lbls)
		cur.SetAnnotations(ann)
		return true
	})
	if err == nil && action == migComplete {
		key := vmi.Namespace + "/" + vmi.Name
		c := &vmiContext{u: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
			"metadata": map[string]any{"name": vmi.Name, "namespace": vmi.Namespace, "uid": string(vmi.UID)}}}, key: key}
		if owner := controllerVMNameOf(vmi); owner != "" {
			c.vm = getCached(s.vms, vmi.Namespace, owner)
		}
		s.emit(c, corev1.EventTypeNormal, "Migrated", "The VirtualMachineInstance migrated to node "+t.Node+".")
		// The source virt-launcher exits once its guest moved: kubelet
		// reports its pod Succeeded, and it holds no room on the host.
		for _, pod := range s.launcherPods(vmi.Namespace, vmi.UID) {
			if pod.Name != t.Name && pod.Spec.NodeName != t.Node {
				if err := s.endLauncherPod(ctx, pod, corev1.PodSucceeded); err != nil {
					return err
				}
			}
		}
	}
	return err
}

// cachedVMI is the cached VMI decoded loosely, or nil.
func (s *sim) cachedVMI(ns, name string) *kubevirtv1.VirtualMachineInstance {
	u := getCached(s.vmis, ns, name)
	if u == nil {
		return nil
	}
	var vmi kubevirtv1.VirtualMachineInstance
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vmi); err != nil {
		vmi = kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: u.GetUID(),
			Labels: u.GetLabels(), Annotations: u.GetAnnotations(), OwnerReferences: u.GetOwnerReferences()}}
		looseStatus(u, &vmi.Status)
	}
	return &vmi
}

// migrationActive: the migration with UID other (not self) exists and is not final.
func (s *sim) migrationActive(ns string, other, self types.UID) bool {
	if other == "" || other == self {
		return false
	}
	list, _ := s.migrations.ByNamespace(ns).List(labels.Everything())
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GetUID() != other {
			continue
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase != string(kubevirtv1.MigrationSucceeded) && phase != string(kubevirtv1.MigrationFailed)
	}
	return false
}

// forgetMigrations drops the target pods of deleted migrations.
func (s *sim) forgetMigrations() {
	list, _ := s.migrations.List(labels.Everything())
	live := map[types.UID]bool{}
	for _, o := range list {
		if u, ok := o.(*unstructured.Unstructured); ok {
			live[u.GetUID()] = true
		}
	}
	s.migTargets.forgetExcept(live)
}

// migrationKeysOf lists the migrations of a VMI (label kubevirt.io/vmi-name),
// and those not labelled yet.
func (s *sim) migrationKeysOf(ns, vmi string) []string {
	list, _ := s.migrations.ByNamespace(ns).List(labels.Everything())
	var out []string
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if v, ok := u.GetLabels()[LabelMigrationVMI]; !ok || v == vmi {
			out = append(out, u.GetNamespace()+"/"+u.GetName())
		}
	}
	return out
}

func controllerVMNameOf(vmi *kubevirtv1.VirtualMachineInstance) string {
	for _, ref := range vmi.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "VirtualMachine" {
			return ref.Name
		}
	}
	return ""
}
