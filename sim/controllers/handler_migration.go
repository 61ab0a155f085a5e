// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's side of a live
// migration. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/migration-target.go.

package controllers

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// GVRMigration is KubeVirt's VirtualMachineInstanceMigration.
var GVRMigration = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstancemigrations"}

var gvrVMIM = GVRMigration

// LabelMigrationVMI is the label virt-controller puts on a migration: its
// VMI's name.
const LabelMigrationVMI = kubevirtv1.MigrationSelectorLabel

// A migration as the two virt-handlers report it on the VMI, once
// KubeVirt's migration controller has handed the VMI over
// (migrationState with the target Pod and node), per KubeVirt v1.7's
// pkg/virt-handler/migration-target.go and migration-source.go:
//   - target: its Pod runs -> migrationState.targetNodeAddress and
//     targetDirectMigrationNodePorts (the controller: TargetReady);
//   - source: the transfer starts -> startTimestamp, mode (Running);
//   - MigrationDuration later the target acks the completion:
//     targetNodeDomainDetected, targetNodeDomainReadyTimestamp,
//     endTimestamp, completed, status.nodeName and label
//     kubevirt.io/nodeName = the target (Succeeded); the source
//     virt-launcher then exits;
//   - the transfer fails when the target goes after it started (its Pod
//     removed or ended, or its host silent for libvirt's keepalive): the source
//     marks the migration failed on the VMI (failed, endTimestamp,
//     failureReason), which is what lets the migration controller finish
//     and the evacuation controller try again.

// Ports and messages of the simulated migration.
const (
	// migrationPort is the target's direct migration port as virt-handler
	// advertises it (its migration proxy's listener; one, for the memory).
	migrationPort = "49152"
	// reasonTargetGone is the libvirt failure the source's virt-launcher
	// records when the target end of the transfer disappears.
	// libvirtKeepalive is how long libvirt's migration connection lasts
	// without an answer from a dead peer (keepalive_interval 5 s times
	// keepalive_count 5, libvirt's defaults).
	libvirtKeepalive = 30 * time.Second
	reasonTargetGone = "Live migration failed error encountered during MigrateToURI3 libvirt api call: " +
		"virError(Code=38, Domain=7, Message='Unable to read from socket: Connection reset by peer')"
)

// migrate plays both handlers for a Running VMI with a migration in
// progress. acted is true when it wrote (the next reconcile reports the
// guest as usual).
func (s *sim) migrate(ctx context.Context, c *vmiContext) (time.Duration, bool, error) {
	ms := c.st.MigrationState
	if ms == nil || ms.MigrationUID == "" || ms.TargetNode == "" || ms.TargetPod == "" || ms.SourceNode != c.st.NodeName {
		return 0, false, nil
	}
	if ms.EndTimestamp != nil && (ms.Completed || ms.Failed) {
		return 0, false, nil
	}
	target := s.targetPod(c, ms)
	if ms.StartTimestamp != nil {
		if target == nil || podEnded(target) {
			return s.migrationFailed(ctx, c, ms)
		}
		if since, down := s.hosts.Host(ms.TargetNode).DownSince(); down {
			if wait := time.Until(since.Add(libvirtKeepalive)); wait > 0 {
				return wait, false, nil
			}
			return s.migrationFailed(ctx, c, ms)
		}
	}
	if s.hosts.Host(ms.TargetNode).Down() || target == nil {
		return 0, false, nil
	}
	switch {
	case ms.TargetNodeAddress == "":
		if target.Status.Phase != corev1.PodRunning {
			return 0, false, nil
		}
		return s.migrationTargetReady(ctx, c, ms)
	case ms.StartTimestamp == nil:
		ms.StartTimestamp, ms.Mode = &c.now, kubevirtv1.MigrationPreCopy
		wait, err := s.writeVMI(ctx, c, c.u)
		if err == nil && wait == 0 {
			s.event.emit(c.u, corev1.EventTypeNormal, string(kubevirtv1.Migrating), "VirtualMachineInstance is migrating.")
		}
		return min0(wait, max(s.tuned().MigrationDuration, time.Millisecond)), true, err
	}
	if wait := ms.StartTimestamp.Add(s.tuned().MigrationDuration).Sub(c.now.Time); wait > 0 {
		return wait, false, nil
	}
	return s.migrationCompleted(ctx, c, ms)
}

// migrationTargetReady is the target's virt-handler once its Pod runs:
// it listens for the transfer and advertises where.
func (s *sim) migrationTargetReady(ctx context.Context, c *vmiContext, ms *kubevirtv1.VirtualMachineInstanceMigrationState) (time.Duration, bool, error) {
	addr := s.hostIP(ms.TargetNode)
	if addr == "" {
		addr = ms.TargetNode
	}
	ports := map[string]int{migrationPort: 0}
	ms.TargetNodeAddress, ms.TargetDirectMigrationNodePorts = addr, ports
	if ts := ms.TargetState; ts != nil {
		ts.NodeAddress, ts.DirectMigrationNodePorts = &addr, maps.Clone(ports)
	}
	wait, err := s.writeVMI(ctx, c, c.u)
	if err == nil && wait == 0 {
		s.event.emit(c.u, corev1.EventTypeNormal, string(kubevirtv1.PreparingTarget),
			fmt.Sprintf("Migration Target is listening at %s, on ports: %s", addr, migrationPort))
	}
	return wait, true, err
}

// migrationCompleted is the target's ack of a finished transfer: the VMI
// runs on the target host now. The source virt-launcher exits.
func (s *sim) migrationCompleted(ctx context.Context, c *vmiContext, ms *kubevirtv1.VirtualMachineInstanceMigrationState) (time.Duration, bool, error) {
	now := c.now
	ms.TargetNodeDomainDetected, ms.TargetNodeDomainReadyTimestamp = true, &now
	ms.EndTimestamp, ms.Completed = &now, true
	if ts := ms.TargetState; ts != nil {
		ts.DomainDetected, ts.DomainReadyTimestamp = true, &now
	}
	removeVMICondition(c.st, kubevirtv1.VirtualMachineInstanceMigrationRequired)
	source := c.st.NodeName
	c.st.NodeName, c.st.EvacuationNodeName = ms.TargetNode, ""
	c.st.MigrationTransport = kubevirtv1.MigrationTransportUnix
	c.st.LauncherContainerImageVersion = ""
	c.labels = maps.Clone(c.u.GetLabels())
	if c.labels == nil {
		c.labels = map[string]string{}
	}
	c.labels[kubevirtv1.NodeNameLabel] = ms.TargetNode
	delete(c.labels, kubevirtv1.MigrationTargetNodeNameLabel)
	delete(c.labels, kubevirtv1.OutdatedLauncherImageLabel)
	u := c.u.DeepCopy()
	if ann := u.GetAnnotations(); ann != nil {
		delete(ann, kubevirtv1.EvictionSourceAnnotation)
		u.SetAnnotations(ann)
	}
	wait, err := s.writeVMI(ctx, c, u)
	if err != nil || wait > 0 {
		return wait, true, err
	}
	s.event.emit(c.u, corev1.EventTypeNormal, string(kubevirtv1.Migrated), "The VirtualMachineInstance migrated to node "+ms.TargetNode+".")
	for _, pod := range s.launcherPods(c.u.GetNamespace(), c.u.GetUID()) {
		if pod.Spec.NodeName == source && pod.Name != ms.TargetPod {
			if err := s.endPod(ctx, pod, corev1.PodSucceeded); err != nil {
				return 0, true, err
			}
		}
	}
	return 0, true, nil
}

// migrationFailed is the source's virt-handler when the transfer broke
// (the target went away after it started): the migration is failed on
// the VMI, which keeps running on the source.
func (s *sim) migrationFailed(ctx context.Context, c *vmiContext, ms *kubevirtv1.VirtualMachineInstanceMigrationState) (time.Duration, bool, error) {
	ms.Failed, ms.EndTimestamp, ms.FailureReason = true, &c.now, reasonTargetGone
	wait, err := s.writeVMI(ctx, c, c.u)
	if err == nil && wait == 0 {
		s.log.Info("virt-handler: migration failed, its target is gone", "vmi", c.key, "target", ms.TargetNode, "pod", ms.TargetPod)
		s.event.emit(c.u, corev1.EventTypeWarning, string(kubevirtv1.Migrated),
			fmt.Sprintf("VirtualMachineInstance migration uid %s failed. reason:%s", ms.MigrationUID, reasonTargetGone))
	}
	return wait, true, err
}

// targetPod is the migration's target launcher Pod, nil when it is gone.
func (s *sim) targetPod(c *vmiContext, ms *kubevirtv1.VirtualMachineInstanceMigrationState) *corev1.Pod {
	pod, err := s.kubeInformers.Core().V1().Pods().Lister().Pods(c.u.GetNamespace()).Get(ms.TargetPod)
	if err != nil {
		return nil
	}
	return pod
}

// podIsDown: the Pod ended or is being deleted (KubeVirt's
// controller.IsPodDownOrGoingDown without the compute-container detail).
func podIsDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil || podEnded(pod)
}

// podEnded: the Pod's containers exited. (A Pod being deleted on a dead
// host still "runs" as far as its peers know, until it is removed.)
func podEnded(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
