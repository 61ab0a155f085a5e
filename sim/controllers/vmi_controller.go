package controllers

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// Labels and annotations the VMI controller sets.
const (
	LabelVMINodeName = kubevirtv1.NodeNameLabel // kubevirt.io/nodeName
	// AnnAddressReportedAt is the simulator's own record (RFC 3339 with
	// nanoseconds) of when it first wrote the VMI's addresses: taken just
	// before the write that shows them. Benchmarks measure from it.
	AnnAddressReportedAt = "sim.harvesterhci.io/address-reported-at"
	secretUserDataKey    = "userdata"
	secretUserDataKey2   = "userData"
)

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
}

// reconcileVMI moves a VMI through Pending, Scheduling, Scheduled and
// Running, and keeps its interfaces in line with the IP rule.
func (s *sim) reconcileVMI(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.vmis, ns, name)
	if u == nil {
		s.state.forget(key)
		s.guestOffNetwork(key)
		return 0, nil
	}
	s.state.track(key, string(u.GetUID()))
	if u.GetDeletionTimestamp() != nil {
		s.guestOffNetwork(key)
		return 0, s.terminateVMI(ctx, u)
	}
	if s.onDownHost(u) {
		return 0, s.vmiOnDownHost(ctx, key, u)
	}
	if !hasString(u.GetFinalizers(), kubevirtv1.VirtualMachineInstanceFinalizer) {
		return 0, s.addVMIFinalizer(ctx, u)
	}
	c := &vmiContext{key: key, u: u, now: metav1.Now(), vmName: name}
	if owner := controllerVMName(u); owner != "" {
		c.vmName = owner
		c.vm = getCached(s.vms, ns, owner)
	}
	if err := decodeStrict(u, &c.vmi); err != nil {
		looseStatus(u, &c.old)
		st := c.old.DeepCopy()
		setVMICondition(st, kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: reasonInvalidSpec,
			Message: "spec does not decode as kubevirt.io/v1 VirtualMachineInstance: " + err.Error()}, c.now)
		_, err := s.writeStatus(ctx, gvrVMI, u, c.old, st)
		return 0, err
	}
	c.old = *c.vmi.Status.DeepCopy()
	c.st = c.vmi.Status.DeepCopy()
	removeVMICondition(c.st, kubevirtv1.VirtualMachineInstanceSynchronized)

	switch c.st.Phase {
	case kubevirtv1.VmPhaseUnset, kubevirtv1.Pending:
		return s.pendingVMI(ctx, c)
	case kubevirtv1.Scheduling:
		return s.scheduleVMI(ctx, c)
	case kubevirtv1.Scheduled:
		_, wait := nextPhase(c.st.Phase, s.since(c), c.now.Time, s.delays())
		if wait > 0 {
			return wait, nil
		}
		return s.bootVMI(ctx, c)
	case kubevirtv1.Running:
		return s.runVMI(ctx, c)
	}
	s.guestOffNetwork(key)
	return 0, s.finishLauncher(ctx, c)
}

func (s *sim) delays() Delays {
	return Delays{Schedule: s.opts.ScheduleDelay, Boot: s.opts.BootDelay, IP: s.opts.IPDelay}
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

// stuckScheduling is the fault message holding the VMI in Scheduling
// without a launcher pod, or "".
func (s *sim) stuckScheduling(c *vmiContext) string {
	if p := s.faults().Match(fault.StuckScheduling, c.u.GetNamespace(), c.vmName); p != "" {
		return fmt.Sprintf("held in Scheduling by the simulator fault %s (pattern %q in ConfigMap %s)", fault.StuckScheduling, p, fault.ConfigMapKey)
	}
	return ""
}

// pendingVMI creates the VMI's launcher pod, as virt-controller does for
// an unprocessed VMI; the VMI moves to Scheduling once the pod exists. A
// refused pod (quota admission, for one) keeps it Pending.
func (s *sim) pendingVMI(ctx context.Context, c *vmiContext) (time.Duration, error) {
	if c.st.Phase == kubevirtv1.VmPhaseUnset {
		s.enter(c, kubevirtv1.Pending)
	}
	if s.stuckScheduling(c) == "" && s.launcherPodOf(c) == nil {
		if err := s.createLauncherPod(ctx, c); err != nil {
			return s.failedCreate(ctx, c, err)
		}
	}
	s.enter(c, kubevirtv1.Scheduling)
	_, err := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st)
	return 0, err
}

// scheduleVMI follows the launcher pod: while kube-scheduler cannot place
// it, the VMI carries the pod's PodScheduled condition (reason and
// message are the scheduler's); once bound, the simulator plays kubelet
// (the pod runs and is Ready) and the VMI is Scheduled on the pod's node.
func (s *sim) scheduleVMI(ctx context.Context, c *vmiContext) (time.Duration, error) {
	if msg := s.stuckScheduling(c); msg != "" {
		return 0, s.unschedulable(ctx, c, reasonUnschedulableC, msg)
	}
	pod := s.launcherPodOf(c)
	if pod == nil {
		if err := s.createLauncherPod(ctx, c); err != nil {
			return s.failedCreate(ctx, c, err)
		}
		_, err := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st)
		return 0, err // the pod's event brings the VMI back
	}
	c.st.QOSClass = nil
	if pod.Status.QOSClass != "" {
		c.st.QOSClass = &pod.Status.QOSClass
	}
	node := pod.Spec.NodeName
	if node == "" {
		if cond := podCondition(pod, corev1.PodScheduled); cond != nil && cond.Status == corev1.ConditionFalse {
			return 0, s.unschedulable(ctx, c, cond.Reason, cond.Message)
		}
		removeVMICondition(c.st, condPodScheduled)
		_, err := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st)
		return 0, err
	}
	removeVMICondition(c.st, condPodScheduled)
	if why := s.missingCloudInitSecret(c); why != "" {
		// The launcher pod is placed but kubelet cannot start it: the VMI
		// stays in Scheduling, with nothing on it saying why (kubelet
		// reports FailedMount on the pod only), until the Secret exists.
		if s.state.once(c.key, "mount", why) {
			s.log.Info("vmi held in Scheduling: its launcher pod cannot mount a cloud-init Secret", "vmi", c.key, "node", node, "why", why)
		}
		_, err := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st)
		return mountRetry, err
	}
	if !launcherReady(pod) {
		if s.kubelets.HostDown(node) {
			_, err := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st)
			return 0, err
		}
		if _, wait := nextPhase(c.st.Phase, s.since(c), c.now.Time, s.delays()); wait > 0 {
			_, err := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st)
			return wait, err
		}
		if err := s.startLauncher(ctx, pod); err != nil {
			return 0, err
		}
	}
	c.st.ActivePods = map[types.UID]string{pod.UID: node}
	return 0, s.bindVMI(ctx, c, node)
}

func (s *sim) unschedulable(ctx context.Context, c *vmiContext, reason, msg string) error {
	setVMICondition(c.st, kubevirtv1.VirtualMachineInstanceCondition{Type: condPodScheduled, Status: corev1.ConditionFalse,
		Reason: reason, Message: msg}, c.now)
	if s.state.once(c.key, "unschedulable", msg) {
		s.emit(c, corev1.EventTypeWarning, "FailedScheduling", msg)
	}
	_, err := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st)
	return err
}

// bindVMI puts the VMI on the host: label kubevirt.io/nodeName, topology
// annotations for driver-created VMs, then status nodeName and Scheduled.
func (s *sim) bindVMI(ctx context.Context, c *vmiContext, node string) error {
	var hostLabels map[string]string
	if n, err := s.kubeInformers.Core().V1().Nodes().Lister().Get(node); err == nil {
		hostLabels = n.Labels
	}
	copyTopology := c.vm != nil && c.vm.GetLabels()[hv.LabelCreator] == hv.CreatorNodeDriver
	u, err := s.updateMeta(ctx, gvrVMI, c.u.GetNamespace(), c.u.GetName(), func(cur *unstructured.Unstructured) bool {
		if cur.GetUID() != c.u.GetUID() {
			return false
		}
		changed := false
		lbls := cur.GetLabels()
		if lbls == nil {
			lbls = map[string]string{}
		}
		if lbls[LabelVMINodeName] != node {
			lbls[LabelVMINodeName] = node
			changed = true
		}
		cur.SetLabels(lbls)
		if copyTopology {
			ann := cur.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			for _, k := range []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelHostname} {
				if v, ok := hostLabels[k]; ok && ann[k] != v {
					ann[k] = v
					changed = true
				}
			}
			cur.SetAnnotations(ann)
		}
		return changed
	})
	if err != nil {
		return err
	}
	if u.GetUID() != c.u.GetUID() {
		return nil // replaced meanwhile; the new VMI comes through the queue
	}
	c.st.NodeName = node
	setVMICondition(c.st, kubevirtv1.VirtualMachineInstanceCondition{Type: condPodScheduled, Status: corev1.ConditionTrue}, c.now)
	s.enter(c, kubevirtv1.Scheduled)
	if _, err := s.writeStatus(ctx, gvrVMI, u, c.old, c.st); err != nil {
		return err
	}
	s.emit(c, corev1.EventTypeNormal, "Scheduled", "scheduled on "+node)
	return nil
}

// bootVMI makes a scheduled VMI Running with its interfaces (no address).
func (s *sim) bootVMI(ctx context.Context, c *vmiContext) (time.Duration, error) {
	s.enter(c, kubevirtv1.Running)
	setVMICondition(c.st, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}, c.now)
	setVMICondition(c.st, liveMigratable(&c.vmi, s.claimsOf(c)), c.now)
	c.st.Interfaces = interfaceStatuses(&c.vmi.Spec, c.key, nil)
	if _, err := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st); err != nil {
		return 0, err
	}
	s.emit(c, corev1.EventTypeNormal, "Started", "VirtualMachineInstance started on "+c.st.NodeName)
	return 0, nil
}

// runVMI applies the IP rule to a running VMI.
func (s *sim) runVMI(ctx context.Context, c *vmiContext) (time.Duration, error) {
	src := s.guestSources(c)
	agent, why := guestRunsAgent(src)
	noIP := s.faults().Match(fault.NoIP, c.u.GetNamespace(), c.vmName)
	plan := planAddresses(agent, why, noIP, s.since(c), c.now.Time, s.opts.IPDelay)
	var ips []string
	if plan.Report {
		ips = s.state.addrsOf(c.key)
		if ips == nil {
			used := s.usedAddresses(c.key)
			var err error
			allocate := allocateAddresses
			if s.faults().Match(fault.IPv6Only, c.u.GetNamespace(), c.vmName) != "" {
				allocate = allocateIPv6Addresses
			}
			if ips, err = allocate(c.key, len(vmiInterfaceNames(&c.vmi.Spec)), used); err != nil {
				return 0, err
			}
		}
		s.state.setAddrs(c.key, ips)
		ips = s.guestConfigured(c, ips)
		setVMICondition(c.st, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue}, c.now)
	} else {
		s.state.setAddrs(c.key, nil)
		removeVMICondition(c.st, kubevirtv1.VirtualMachineInstanceAgentConnected)
		if plan.Why != "" && s.state.once(c.key, "no-ip", plan.Why) {
			s.log.Info("vmi gets no address", "vmi", c.key, "why", plan.Why)
			s.emit(c, corev1.EventTypeNormal, "NoGuestAddress", "no IP address will be reported: "+plan.Why)
		}
	}
	c.st.Interfaces = interfaceStatuses(&c.vmi.Spec, c.key, ips)
	if len(ips) > 0 && s.faults().Match(fault.GuestBridges, c.u.GetNamespace(), c.vmName) != "" {
		c.st.Interfaces = append(guestOnlyInterfaces(c.key), c.st.Interfaces...)
	}
	if len(ips) > 0 {
		s.guestOnNetwork(c, src, ips)
	} else {
		s.guestOffNetwork(c.key)
	}
	c.st.VolumeStatus = s.volumeStatusOf(c)
	setVMICondition(c.st, liveMigratable(&c.vmi, s.claimsOf(c)), c.now)
	s.readyFromPod(c)
	u := c.u
	if len(ips) > 0 && !hasAddress(c.old.Interfaces) {
		u = u.DeepCopy()
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnAddressReportedAt] = time.Now().UTC().Format(time.RFC3339Nano)
		u.SetAnnotations(ann)
	}
	_, err := s.writeStatus(ctx, gvrVMI, u, c.old, c.st)
	return plan.Wait, err
}

// volumeStatusOf reports the VMI's hot-plugged volumes.
func (s *sim) volumeStatusOf(c *vmiContext) []kubevirtv1.VolumeStatus {
	return hotplugVolumeStatus(c.u.GetUID(), &c.vmi.Spec, c.old.VolumeStatus, s.claimsOf(c))
}

// claimsOf are the VMI's PVCs that exist, by name.
func (s *sim) claimsOf(c *vmiContext) map[string]*corev1.PersistentVolumeClaim {
	lister := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(c.u.GetNamespace())
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, name := range vmiClaimNames(&c.vmi.Spec) {
		if pvc, err := lister.Get(name); err == nil {
			claims[name] = pvc
		}
	}
	return claims
}

func hasAddress(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) bool {
	for _, i := range ifaces {
		if i.IP != "" || len(i.IPs) > 0 {
			return true
		}
	}
	return false
}

// guestSources collects the VMI's cloud-init user data and the agent
// label of the images behind its disks.
func (s *sim) guestSources(c *vmiContext) guestSources {
	ns := c.u.GetNamespace()
	src := guestSources{Images: map[string]bool{}}
	addUserData := func(vol, inline, b64 string, ref *corev1.LocalObjectReference) {
		switch {
		case inline != "":
			src.UserData = append(src.UserData, []byte(inline))
		case b64 != "":
			data, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				src.Problems = append(src.Problems, fmt.Sprintf("volume %s: userDataBase64: %v", vol, err))
				return
			}
			src.UserData = append(src.UserData, data)
		case ref != nil:
			sec, err := s.kubeInformers.Core().V1().Secrets().Lister().Secrets(ns).Get(ref.Name)
			if err != nil {
				src.Problems = append(src.Problems, fmt.Sprintf("volume %s: user data secret: %v", vol, err))
				return
			}
			data, ok := sec.Data[secretUserDataKey]
			if !ok {
				data, ok = sec.Data[secretUserDataKey2]
			}
			if !ok {
				src.Problems = append(src.Problems, fmt.Sprintf("volume %s: secret %s has no key %s", vol, ref.Name, secretUserDataKey))
				return
			}
			src.UserData = append(src.UserData, data)
		}
	}
	for _, v := range c.vmi.Spec.Volumes {
		if nc := v.CloudInitNoCloud; nc != nil {
			addUserData(v.Name, nc.UserData, nc.UserDataBase64, nc.UserDataSecretRef)
		}
		if cd := v.CloudInitConfigDrive; cd != nil {
			addUserData(v.Name, cd.UserData, cd.UserDataBase64, cd.UserDataSecretRef)
		}
	}
	pvcs := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns)
	for _, claim := range vmiClaimNames(&c.vmi.Spec) {
		pvc, err := pvcs.Get(claim)
		if err != nil {
			continue
		}
		ref := pvc.Annotations[hv.AnnotationImageID]
		imgNS, imgName, err := hv.ParseRef(ref, "")
		if err != nil {
			continue
		}
		if img := getCached(s.images, imgNS, imgName); img != nil {
			src.Images[ref] = img.GetLabels()[LabelImageGuestAgent] == "true"
			display, _, _ := unstructured.NestedString(img.Object, "spec", "displayName")
			src.ImageNames = append(src.ImageNames, imgName+" "+display)
		}
	}
	return src
}

// usedAddresses are the addresses other VMIs report or were given.
func (s *sim) usedAddresses(key string) map[string]bool {
	used := s.state.otherAddrs(key)
	list, _ := s.vmis.List(labels.Everything())
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GetNamespace()+"/"+u.GetName() == key {
			continue
		}
		ifaces, _, _ := unstructured.NestedSlice(u.Object, "status", "interfaces")
		for _, i := range ifaces {
			if m, ok := i.(map[string]any); ok {
				if ip, _ := m["ipAddress"].(string); ip != "" {
					used[ip] = true
				}
			}
		}
	}
	return used
}

// faults reads the fault ConfigMap from the cache.
func (s *sim) faults() fault.Patterns {
	cm, err := s.faultInformers.Core().V1().ConfigMaps().Lister().ConfigMaps(fault.Namespace).Get(fault.ConfigMap)
	if err != nil {
		return fault.ParsePatterns(nil)
	}
	f := fault.ParsePatterns(cm.Data)
	for _, p := range f.Problems() {
		if s.state.once(fault.ConfigMapKey, "problem", p) {
			s.log.Warn("ignoring invalid fault pattern", "configmap", fault.ConfigMapKey, "problem", p)
		}
	}
	return f
}
