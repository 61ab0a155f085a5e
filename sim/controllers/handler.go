// Stand-in for virt-handler, KubeVirt v1.7.0: every host's virt-handler: a
// VMI's phases on its host. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/controller.go.

package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The simulated virt-handler: KubeVirt's own virt-controller creates the
// VMI's launcher Pod and moves the VMI to Scheduled once the Pod runs on
// a host; from there the host's virt-handler reports the guest (this
// file), its migrations (handler_migration.go) and its volumes. It writes
// as KubeVirt's handler ServiceAccount (handler_client.go): KubeVirt's VMI
// mutator reverts status changes from anyone else.

// vmiContext is one VMI being reconciled.
type vmiContext struct {
	key    string
	u      *unstructured.Unstructured
	vmi    kubevirtv1.VirtualMachineInstance
	old    kubevirtv1.VirtualMachineInstanceStatus
	st     *kubevirtv1.VirtualMachineInstanceStatus
	vm     *unstructured.Unstructured // owning VM, may be nil
	vmName string                     // name fault patterns are matched against
	now    metav1.Time
	labels map[string]string // labels to write with the status (nil: unchanged)
}

// Event messages of KubeVirt v1.7's virt-handler (pkg/virt-handler/controller.go).
const (
	msgVMIStarted  = "VirtualMachineInstance started."
	msgVMIShutdown = "The VirtualMachineInstance was shut down."
)

// reconcileVMI is the virt-handler of the VMI's host: a Scheduled guest
// boots (BootDelay), a Running one is reported (addresses, volumes,
// LiveMigratable) and migrated, a deleted one shuts down (Succeeded). On a
// host that is down nothing happens: its virt-handler is gone with it.
func (s *sim) reconcileVMI(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.vmis, ns, name)
	if u == nil {
		s.state.forget(key)
		s.guestOffNetwork(key)
		return 0, nil
	}
	s.state.track(key, string(u.GetUID()))
	c := s.newVMIContext(key, u)
	node := c.st.NodeName
	if node == "" {
		return 0, nil
	}
	if s.hosts.Host(node).Down() {
		s.guestOffNetwork(key) // the guest died with its host
		return 0, nil
	}
	switch c.st.Phase {
	case kubevirtv1.Scheduled:
		if u.GetDeletionTimestamp() != nil {
			return s.shutdownVMI(ctx, c)
		}
		return s.bootVMI(ctx, c)
	case kubevirtv1.Running:
		if u.GetDeletionTimestamp() != nil {
			return s.shutdownVMI(ctx, c)
		}
		// A transfer under way comes back when it ends (migrate's wait),
		// whatever else the guest does meanwhile.
		migWait, acted, err := s.migrate(ctx, c)
		if acted || err != nil {
			return migWait, err
		}
		if s.launcherGone(c) {
			return s.shutdownVMI(ctx, c) // its virt-launcher was stopped (evicted, deleted): the guest shut down
		}
		wait, err := s.runVMI(ctx, c)
		return min0(wait, migWait), err
	case kubevirtv1.Succeeded, kubevirtv1.Failed:
		s.guestOffNetwork(key)
		return 0, s.finishLaunchers(ctx, c)
	}
	return 0, nil
}

// newVMIContext decodes the cached VMI (loosely: the apiserver already
// checked it against KubeVirt's schema and admitters).
func (s *sim) newVMIContext(key string, u *unstructured.Unstructured) *vmiContext {
	c := &vmiContext{key: key, u: u, now: metav1.Now(), vmName: u.GetName()}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c.vmi); err != nil {
		c.vmi = kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(),
			UID: u.GetUID(), Labels: u.GetLabels(), Annotations: u.GetAnnotations()}}
		looseStatus(u, &c.vmi.Status)
	}
	if owner := controllerVMName(u); owner != "" {
		c.vmName = owner
		c.vm = getCached(s.vms, u.GetNamespace(), owner)
	}
	c.old = *c.vmi.Status.DeepCopy()
	c.st = c.vmi.Status.DeepCopy()
	return c
}

// bootVMI starts the guest of a Scheduled VMI, BootDelay after it was
// scheduled: phase Running, LiveMigratable, its interfaces (no address
// yet), its volumes' targets, event Started.
func (s *sim) bootVMI(ctx context.Context, c *vmiContext) (time.Duration, error) {
	if wait := s.since(c).Add(s.tuned().BootDelay).Sub(c.now.Time); wait > 0 {
		return wait, nil
	}
	s.enter(c, kubevirtv1.Running)
	c.st.SelinuxContext = "none"
	setVMICondition(c.st, liveMigratable(&c.vmi, s.claimsOf(c)), c.now)
	c.st.Interfaces = keepControllerReport(interfaceStatuses(&c.vmi.Spec, c.key, nil), c.old.Interfaces)
	c.st.VolumeStatus = s.volumeStatusOf(c)
	if wait, err := s.writeVMI(ctx, c, c.u); err != nil || wait > 0 {
		return wait, err
	}
	s.event.emit(c.u, corev1.EventTypeNormal, string(kubevirtv1.Started), msgVMIStarted)
	return 0, nil
}

// shutdownVMI is virt-handler's answer to a deleted VMI: the guest shuts
// down (phase Succeeded) and leaves the guest network; its launcher Pod
// exits. virt-controller then removes the VMI's finalizer.
func (s *sim) shutdownVMI(ctx context.Context, c *vmiContext) (time.Duration, error) {
	s.guestOffNetwork(c.key)
	s.enter(c, kubevirtv1.Succeeded)
	if wait, err := s.writeVMI(ctx, c, c.u); err != nil || wait > 0 {
		return wait, err
	}
	s.event.emit(c.u, corev1.EventTypeNormal, string(kubevirtv1.Stopped), msgVMIShutdown)
	return 0, s.finishLaunchers(ctx, c)
}

// launcherGone: no launcher Pod of the VMI is alive on its host.
func (s *sim) launcherGone(c *vmiContext) bool {
	for _, p := range s.launcherPods(c.u.GetNamespace(), c.u.GetUID()) {
		if p.Spec.NodeName == c.st.NodeName && !podIsDown(p) {
			return false
		}
	}
	return true
}

// finishLaunchers plays kubelet for a VMI whose guest ended: the compute
// container of its launcher Pods on up hosts exits (Succeeded, Failed for
// a failed VMI), so they hold no room on the host.
func (s *sim) finishLaunchers(ctx context.Context, c *vmiContext) error {
	phase := corev1.PodSucceeded
	if c.st.Phase == kubevirtv1.Failed {
		phase = corev1.PodFailed
	}
	for _, pod := range s.launcherPods(c.u.GetNamespace(), c.u.GetUID()) {
		if s.hosts.Host(pod.Spec.NodeName).Down() {
			continue
		}
		if err := s.endPod(ctx, pod, phase); err != nil {
			return err
		}
	}
	return nil
}

// writeVMI writes the VMI's new status (and labels, when set) as
// virt-handler, unless nothing changed. A conflict is retried soon: the
// next reconcile reads the fresh object.
func (s *sim) writeVMI(ctx context.Context, c *vmiContext, u *unstructured.Unstructured) (time.Duration, error) {
	if equalStatus(c.old, *c.st) && c.labels == nil && sameMeta(c.u, u) {
		return 0, nil
	}
	m, err := toUnstructured(c.st)
	if err != nil {
		return 0, err
	}
	out := u.DeepCopy()
	out.Object["status"] = m
	if c.labels != nil {
		out.SetLabels(c.labels)
	}
	handler, err := s.handlerClient(ctx)
	if err != nil {
		return time.Second, nil //nolint:nilerr // logged by handlerClient; KubeVirt's handler account is not there yet
	}
	_, err = handler.Resource(gvrVMI).Namespace(out.GetNamespace()).Update(ctx, out, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return 200 * time.Millisecond, nil
	case apierrors.IsNotFound(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("virt-handler: update vmi %s: %w", c.key, err)
	}
	return 0, nil
}

// sameMeta: the annotations to write are the cached ones.
func sameMeta(a, b *unstructured.Unstructured) bool {
	return a == b || fmt.Sprint(a.GetAnnotations()) == fmt.Sprint(b.GetAnnotations())
}

func (s *sim) enter(c *vmiContext, phase kubevirtv1.VirtualMachineInstancePhase) {
	enterPhase(c.st, phase, c.now)
	s.state.markPhase(c.key, string(c.u.GetUID()), phase, c.now.Time)
}

// since is when the VMI entered its current phase.
func (s *sim) since(c *vmiContext) time.Time {
	if at, ok := s.state.phaseStart(c.key, string(c.u.GetUID()), c.st.Phase); ok {
		return at
	}
	return phaseSince(c.st, c.u.GetCreationTimestamp().Time)
}

// emit records an event on the VMI and, when it has one, on its VM.
func (s *sim) emit(c *vmiContext, eventType, reason, message string) {
	s.event.emit(c.u, eventType, reason, message)
	if c.vm != nil {
		s.event.emit(c.vm, eventType, reason, message)
	}
}

// min0 is the smaller of two waits, ignoring zeros.
func min0(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
