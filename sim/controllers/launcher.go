package controllers

import (
	"context"
	"crypto/sha1" //nolint:gosec // KubeVirt's VMI ID label hash, not security
	"encoding/hex"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
	"github.com/harvester-kit/harvester-machine/sim/launcherpod"
)

// The virt-launcher pod's labels and annotations, as KubeVirt v1.7 sets
// them (virt-controller's template.go).
const (
	launcherApp = "virt-launcher" // value of label kubevirt.io
	// annDefaultContainer is kubectl's default-container annotation.
	annDefaultContainer = "kubectl.kubernetes.io/default-container"
	// annEvictOnly is the descheduler's evict-only request.
	annEvictOnly = "descheduler.alpha.kubernetes.io/request-evict-only"
	// defaultArch is what virt-api's VMI defaulting writes into an empty
	// spec.architecture on an amd64 cluster.
	defaultArch = "amd64"
)

// launcherPod is the virt-launcher pod KubeVirt v1.7's virt-controller
// creates for vmi (renderLaunchManifest): the spec is
// launcherpod.LauncherPod's, for the VMI's architecture (amd64 when empty,
// as virt-api defaults it) and the memory overhead ratio; the metadata is
//   - generateName virt-launcher-<vmi>-, in the VMI's namespace;
//   - labels: the VMI's, then kubevirt.io: virt-launcher,
//     kubevirt.io/created-by: <vmi uid>, vm.kubevirt.io/name: <hostname>,
//     vmi.kubevirt.io/id: <vmi name, or its first 54 characters, "-" and
//     8 hex digits of its SHA-1 when longer than 63>;
//   - annotations: the VMI's (but kubectl.kubernetes.io/* and
//     kubevirt.io/{storage,latest}-observed-api-version*), then
//     kubevirt.io/domain: <vmi>, kubectl.kubernetes.io/default-container:
//     compute, kubevirt.io/migrationTransportUnix: "true" and
//     descheduler.alpha.kubernetes.io/request-evict-only: "";
//   - a controller owner reference to the VMI (blockOwnerDeletion);
//   - hostname: spec.hostname, else the VMI name up to its first dot, at
//     most 63 characters.
//
// The migration target pod is this pod too (RenderMigrationManifest renders
// the same manifest); the migration controller then adds its own labels
// and affinity.
func launcherPod(vmi *kubevirtv1.VirtualMachineInstance, ratio string) *corev1.Pod {
	spec := vmi.Spec.DeepCopy()
	if spec.Architecture == "" {
		spec.Architecture = defaultArch
	}
	pod := launcherpod.LauncherPod(spec, spec.Architecture, ratio)
	host := launcherHostname(vmi)
	pod.Spec.Hostname = host
	pod.Namespace = vmi.Namespace
	pod.GenerateName = "virt-launcher-" + vmi.Name + "-"
	pod.Labels = maps.Clone(vmi.Labels)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[kubevirtv1.AppLabel] = launcherApp
	pod.Labels[kubevirtv1.CreatedByLabel] = string(vmi.UID)
	pod.Labels[kubevirtv1.DeprecatedVirtualMachineNameLabel] = host
	pod.Labels[kubevirtv1.VirtualMachineInstanceIDLabel] = vmiID(vmi.Name)
	pod.Annotations = map[string]string{}
	for k, v := range vmi.Annotations {
		if strings.HasPrefix(k, "kubectl.kubernetes.io") || strings.HasPrefix(k, "kubevirt.io/storage-observed-api-version") ||
			strings.HasPrefix(k, "kubevirt.io/latest-observed-api-version") {
			continue
		}
		pod.Annotations[k] = v
	}
	pod.Annotations[kubevirtv1.DomainAnnotation] = vmi.Name
	pod.Annotations[annDefaultContainer] = launcherpod.LauncherContainer
	pod.Annotations[kubevirtv1.MigrationTransportUnixAnnotation] = "true"
	pod.Annotations[annEvictOnly] = ""
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(vmi, kubevirtv1.VirtualMachineInstanceGroupVersionKind)}
	return pod
}

// migrationTargetPod is the target launcher pod of a live migration, as
// KubeVirt v1.7's migration controller makes it (createTargetPod, not
// decentralized): the VMI's launcher pod (launcherPod), plus a required
// pod anti-affinity term against pods labelled kubevirt.io/created-by:
// <vmi uid> on the same kubernetes.io/hostname (so kube-scheduler places
// it away from the source pod's host), the migration's
// spec.addedNodeSelector under the pod's own nodeSelector, label
// kubevirt.io/migrationJobUID: <migration uid> and annotation
// kubevirt.io/migrationJobName: <migration name>. (The host-model CPU
// node selector copied from the source host is not rendered: the
// simulated hosts carry no CPU model labels.)
func migrationTargetPod(vmi *kubevirtv1.VirtualMachineInstance, migration *kubevirtv1.VirtualMachineInstanceMigration, ratio string) *corev1.Pod {
	pod := launcherPod(vmi, ratio)
	term := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{kubevirtv1.CreatedByLabel: string(vmi.UID)}},
		TopologyKey:   corev1.LabelHostname,
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.PodAntiAffinity == nil {
		pod.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	anti := pod.Spec.Affinity.PodAntiAffinity
	anti.RequiredDuringSchedulingIgnoredDuringExecution = append(anti.RequiredDuringSchedulingIgnoredDuringExecution, term)
	sel := maps.Clone(migration.Spec.AddedNodeSelector)
	if sel == nil {
		sel = map[string]string{}
	}
	maps.Copy(sel, pod.Spec.NodeSelector)
	pod.Spec.NodeSelector = sel
	pod.Labels[kubevirtv1.MigrationJobLabel] = string(migration.UID)
	pod.Annotations[kubevirtv1.MigrationJobNameAnnotation] = migration.Name
	return pod
}

// launcherHostname is KubeVirt's SanitizeHostname.
func launcherHostname(vmi *kubevirtv1.VirtualMachineInstance) string {
	if vmi.Spec.Hostname != "" {
		return vmi.Spec.Hostname
	}
	host, _, _ := strings.Cut(vmi.Name, ".")
	if len(host) > validation.DNS1123LabelMaxLength {
		host = host[:validation.DNS1123LabelMaxLength]
	}
	return host
}

// vmiID is KubeVirt's CalculateVirtualMachineInstanceID.
func vmiID(name string) string {
	if len(name) <= validation.DNS1035LabelMaxLength {
		return name
	}
	const hashLen = 8
	sum := sha1.Sum([]byte(name)) //nolint:gosec // KubeVirt's label hash
	return name[:validation.DNS1035LabelMaxLength-hashLen-1] + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// launcherPods are the VMI's virt-launcher pods (label created-by = its
// UID), oldest first.
func (s *sim) launcherPods(ns string, uid types.UID) []*corev1.Pod {
	sel := labels.SelectorFromSet(labels.Set{kubevirtv1.AppLabel: launcherApp, kubevirtv1.CreatedByLabel: string(uid)})
	pods, err := s.kubeInformers.Core().V1().Pods().Lister().Pods(ns).List(sel)
	if err != nil {
		return nil
	}
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i].CreationTimestamp, pods[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return pods[i].Name < pods[j].Name
	})
	return pods
}

// launcherPodOf is the VMI's first launcher pod not being deleted, or
// nil: the pod a VMI that is not running yet waits on.
func (s *sim) launcherPodOf(c *vmiContext) *corev1.Pod {
	for _, p := range s.launcherPods(c.u.GetNamespace(), c.u.GetUID()) {
		if p.DeletionTimestamp == nil {
			return p
		}
	}
	return nil
}

// currentPod is KubeVirt's CurrentVMIPod (pkg/controller): of a VMI's
// launcher pods (oldest first), the most recent one on node, or the most
// recent one when node is "". After a migration that is the target's pod,
// not the source's, which has Succeeded.
func currentPod(pods []*corev1.Pod, node string) *corev1.Pod {
	for i := len(pods) - 1; i >= 0; i-- {
		if node == "" || pods[i].Spec.NodeName == node {
			return pods[i]
		}
	}
	return nil
}

// activePods is KubeVirt's status.activePods: every pod the VMI owns, by
// UID, with its node.
func activePods(pods []*corev1.Pod) map[types.UID]string {
	if len(pods) == 0 {
		return nil
	}
	out := make(map[types.UID]string, len(pods))
	for _, p := range pods {
		out[p.UID] = p.Spec.NodeName
	}
	return out
}

// createLauncherPod creates the VMI's launcher pod unless the simulator
// already created one that the cache does not show yet.
func (s *sim) createLauncherPod(ctx context.Context, c *vmiContext) error {
	if s.state.podCreated(c.key) {
		return nil
	}
	c.vmi.UID = c.u.GetUID()
	pod := launcherPod(&c.vmi, s.overheadRatio(ctx))
	created, err := s.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.state.markPodCreated(c.key)
	s.event.emit(c.u, corev1.EventTypeNormal, "SuccessfulCreate", "Created virtual machine pod "+created.Name)
	return nil
}

// failedCreate reports a refused launcher pod as KubeVirt does: event
// FailedCreate "Error creating pod: ..." and condition Synchronized False,
// reason FailedCreate; the VMI stays Pending and is retried.
func (s *sim) failedCreate(ctx context.Context, c *vmiContext, err error) (time.Duration, error) {
	if s.state.once(c.key, "failed-create", err.Error()) {
		s.event.emit(c.u, corev1.EventTypeWarning, reasonFailedCreate, "Error creating pod: "+err.Error())
	}
	setVMICondition(c.st, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceSynchronized,
		Status: corev1.ConditionFalse, Reason: reasonFailedCreate, Message: "failed to create virtual machine pod: " + err.Error()}, c.now)
	_, werr := s.writeStatus(ctx, gvrVMI, c.u, c.old, c.st)
	return createRetry, werr
}

const (
	reasonFailedCreate = "FailedCreate"
	// createRetry is how soon a refused launcher pod is tried again.
	createRetry = 2 * time.Second
)

// overheadRatio is the additional-guest-memory-overhead-ratio setting's
// value (its default when unset), which Harvester hands to KubeVirt.
func (s *sim) overheadRatio(ctx context.Context) string {
	u, err := s.dyn.Resource(gvrSetting).Get(ctx, hv.SettingMemoryOverheadRatio, metav1.GetOptions{})
	if err != nil {
		return hv.DefaultMemoryOverheadRatio
	}
	for _, field := range []string{"value", "default"} {
		if v, _ := u.Object[field].(string); v != "" {
			return v
		}
	}
	return hv.DefaultMemoryOverheadRatio
}

// podCondition returns the pod's condition of that type, or nil.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// launcherReady: the pod runs and is Ready.
func launcherReady(pod *corev1.Pod) bool {
	c := podCondition(pod, corev1.PodReady)
	return pod.Status.Phase == corev1.PodRunning && c != nil && c.Status == corev1.ConditionTrue
}

// startLauncher plays kubelet (and virt-handler's unpaused condition) for
// a bound launcher pod: phase Running, the compute container running and
// ready, every condition True. No container really runs.
func (s *sim) startLauncher(ctx context.Context, pod *corev1.Pod) error {
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady, kubevirtv1.VirtualMachineUnpaused} {
		setPodCondition(p, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: launcherpod.LauncherContainer, Image: launcherpod.LauncherImage,
		ImageID: launcherpod.LauncherImage, Ready: true, Started: ptrTo(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	if _, err := s.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("start launcher pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// finishLauncher plays kubelet for a VMI whose guest ended: its launcher
// pods' compute container exits and the pod is Succeeded (Failed for a
// failed VMI), so it no longer holds room on the host.
func (s *sim) finishLauncher(ctx context.Context, c *vmiContext) error {
	phase := corev1.PodSucceeded
	if c.st.Phase == kubevirtv1.Failed {
		phase = corev1.PodFailed
	}
	for _, pod := range s.launcherPods(c.u.GetNamespace(), c.u.GetUID()) {
		if err := s.endLauncherPod(ctx, pod, phase); err != nil {
			return err
		}
	}
	return nil
}

// endLauncherPod plays kubelet for a launcher pod whose compute container
// exited: phase Succeeded or Failed. A pod not bound or already ended is
// left as it is.
func (s *sim) endLauncherPod(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase) error {
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = phase
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(p, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now})
	}
	exit := int32(0)
	if phase == corev1.PodFailed {
		exit = 1
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: launcherpod.LauncherContainer, Image: launcherpod.LauncherImage,
		ImageID: launcherpod.LauncherImage, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exit, FinishedAt: now, Reason: map[bool]string{true: "Completed", false: "Error"}[exit == 0]}}}}
	if _, err := s.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finish launcher pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// deleteLaunchers deletes the VMI's launcher pods, as virt-controller
// does when the VMI is deleted.
func (s *sim) deleteLaunchers(ctx context.Context, ns string, uid types.UID) error {
	for _, pod := range s.launcherPods(ns, uid) {
		if pod.DeletionTimestamp != nil {
			continue
		}
		err := s.kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete launcher pod %s/%s: %w", ns, pod.Name, err)
		}
	}
	return nil
}

func setPodCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			if p.Status.Conditions[i].Status == c.Status {
				return
			}
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func ptrTo[T any](v T) *T { return &v }

// reconcilePod plays kubelet for a pod bound to a host whose kubelet is
// up: a pod being deleted is removed at once (grace period 0) since no
// container runs. A down host's kubelet confirms nothing: its pods stay
// Terminating.
func (s *sim) reconcilePod(ctx context.Context, key string) (time.Duration, error) {
	ns, name, _ := strings.Cut(key, "/")
	pod, err := s.kubeInformers.Core().V1().Pods().Lister().Pods(ns).Get(name)
	if err != nil {
		return 0, nil //nolint:nilerr // gone: nothing to confirm
	}
	if pod.Spec.NodeName == "" || s.kubelets.HostDown(pod.Spec.NodeName) {
		return 0, nil
	}
	if pod.DeletionTimestamp == nil {
		return 0, s.repostPodReady(ctx, pod)
	}
	zero := int64(0)
	err = s.kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return 0, fmt.Errorf("kubelet: remove terminating pod %s: %w", key, err)
	}
	return 0, nil
}
