package simctl

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	gvrVM      = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	gvrVMI     = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	gvrImage   = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "virtualmachineimages"}
	gvrKeyPair = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "keypairs"}
)

const fixtureImage = "default/ubuntu-22.04"

// agentCloudConfig installs the guest agent, as the driver's cloud-init does.
const agentCloudConfig = "#cloud-config\npackages:\n  - qemu-guest-agent\nruncmd:\n  - systemctl enable --now qemu-guest-agent\n"

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testNamespace creates a namespace of its own for the test, deleted after.
func testNamespace(t *testing.T) string {
	t.Helper()
	name := "t-" + strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 60 {
		name = name[:60]
	}
	ctx := testContext(t)
	_, err := env.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = env.kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// vmOpts describe a test VM; the zero value is a running VM with one
// interface, no disks and no cloud-init.
type vmOpts struct {
	labels         map[string]string // on the VM and its template
	annotations    map[string]string
	creator        bool
	strategy       kubevirtv1.VirtualMachineRunStrategy
	nodeSelector   map[string]string
	affinity       *corev1.Affinity
	userData       string // inline cloud-init
	userDataSecret string // Secret name holding the cloud-init
	claims         []corev1.PersistentVolumeClaim
	directClaims   []string
	containerDisk  string // image of a containerDisk volume
	interfaces     int
	cpuLimit       string // spec.domain.resources.limits.cpu, "" for none
}

func claimTemplate(name, image string, extraLabels map[string]string) corev1.PersistentVolumeClaim {
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: extraLabels},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			VolumeMode:  ptr.To(corev1.PersistentVolumeBlock),
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	if image != "" {
		pvc.Annotations = map[string]string{harvester.AnnotationImageID: image}
	}
	return pvc
}

func buildVM(ns, name string, o vmOpts) *kubevirtv1.VirtualMachine {
	strategy := o.strategy
	if strategy == "" {
		strategy = kubevirtv1.RunStrategyAlways
	}
	lbls := map[string]string{}
	for k, v := range o.labels {
		lbls[k] = v
	}
	if o.creator {
		lbls[harvester.LabelCreator] = harvester.CreatorValue
	}
	ann := map[string]string{}
	for k, v := range o.annotations {
		ann[k] = v
	}
	if len(o.claims) > 0 {
		data, _ := json.Marshal(o.claims)
		ann[harvester.AnnotationVolumeClaimTemplates] = string(data)
	}
	// Harvester's VMs carry LiveMigrateIfPossible (its VM templates and
	// builder, pkg/data/template.go, pkg/builder/vm.go): Harvester's KubeVirt
	// CR sets no cluster-wide eviction strategy, KubeVirt's default is None.
	evict := kubevirtv1.EvictionStrategyLiveMigrateIfPossible
	spec := kubevirtv1.VirtualMachineInstanceSpec{NodeSelector: o.nodeSelector, Affinity: o.affinity, EvictionStrategy: &evict}
	spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	if o.cpuLimit != "" {
		spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(o.cpuLimit)}
	}
	// Harvester's validator wants a guest memory or a memory limit ("either
	// memory.guest or resources.limits.memory must be set"); KubeVirt gives a
	// VM without one its memory request as guest memory, so this is the same VM.
	guest := resource.MustParse("1Gi")
	spec.Domain.Memory = &kubevirtv1.Memory{Guest: &guest}
	n := max(o.interfaces, 1)
	for i := range n {
		nic := fmt.Sprintf("nic-%d", i)
		spec.Domain.Devices.Interfaces = append(spec.Domain.Devices.Interfaces, kubevirtv1.Interface{Name: nic,
			InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}})
		spec.Networks = append(spec.Networks, kubevirtv1.Network{Name: nic,
			NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "default/vlan1"}}})
	}
	addDisk := func(vol string, src kubevirtv1.VolumeSource) {
		spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: vol,
			DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}})
		spec.Volumes = append(spec.Volumes, kubevirtv1.Volume{Name: vol, VolumeSource: src})
	}
	claimSource := func(claim string) kubevirtv1.VolumeSource {
		return kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	}
	for i, c := range o.claims {
		addDisk(fmt.Sprintf("disk-%d", i), claimSource(c.Name))
	}
	for i, c := range o.directClaims {
		addDisk(fmt.Sprintf("direct-%d", i), claimSource(c))
	}
	if o.containerDisk != "" {
		addDisk("containerdisk", kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: o.containerDisk}})
	}
	switch {
	case o.userData != "":
		addDisk("cloudinitdisk", kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: o.userData}})
	case o.userDataSecret != "":
		addDisk("cloudinitdisk", kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{
			UserDataSecretRef: &corev1.LocalObjectReference{Name: o.userDataSecret}}})
	}
	return &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, Annotations: ann},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &strategy,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec:       spec,
			},
		},
	}
}

// createObject sends a typed object through the dynamic client.
func createObject(t *testing.T, gvr schema.GroupVersionResource, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	u := &unstructured.Unstructured{Object: m}
	res, err := env.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(testContext(t), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	return res
}

func createVM(t *testing.T, ns, name string, o vmOpts) {
	t.Helper()
	createObject(t, gvrVM, buildVM(ns, name, o))
}

func decode[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		t.Fatalf("decode %s: %v", u.GetName(), err)
	}
	return &out
}

// waitFor waits until cond holds for the object (nil = absent) and
// returns the object seen last.
func waitFor[T any](t *testing.T, gvr schema.GroupVersionResource, ns, name, what string, cond func(*T) bool) *T {
	t.Helper()
	var last *unstructured.Unstructured
	err := simtest.WaitObject(testContext(t), env.dyn, gvr, ns, name, func(u *unstructured.Unstructured) bool {
		last = u
		if u == nil {
			return cond(nil)
		}
		var v T
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &v) != nil {
			return false
		}
		return cond(&v)
	})
	if err != nil {
		state := "absent"
		if last != nil {
			st, _ := json.Marshal(last.Object["status"])
			state = string(st)
		}
		t.Fatalf("%s %s/%s: waiting for %s: %v; last status: %s", gvr.Resource, ns, name, what, err, state)
	}
	if last == nil {
		return nil
	}
	return decode[T](t, last)
}

func waitVMI(t *testing.T, ns, name, what string, cond func(*kubevirtv1.VirtualMachineInstance) bool) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	return waitFor(t, gvrVMI, ns, name, what, cond)
}

func waitVM(t *testing.T, ns, name, what string, cond func(*kubevirtv1.VirtualMachine) bool) *kubevirtv1.VirtualMachine {
	t.Helper()
	return waitFor(t, gvrVM, ns, name, what, cond)
}

func running(v *kubevirtv1.VirtualMachineInstance) bool {
	return v != nil && v.Status.Phase == kubevirtv1.Running
}

func hasIP(v *kubevirtv1.VirtualMachineInstance) bool {
	return running(v) && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != ""
}

func printable(p kubevirtv1.VirtualMachinePrintableStatus) func(*kubevirtv1.VirtualMachine) bool {
	return func(vm *kubevirtv1.VirtualMachine) bool { return vm != nil && vm.Status.PrintableStatus == p }
}

func vmiCond(v *kubevirtv1.VirtualMachineInstance, t kubevirtv1.VirtualMachineInstanceConditionType) *kubevirtv1.VirtualMachineInstanceCondition {
	if v == nil {
		return nil
	}
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == t {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

func vmCond(vm *kubevirtv1.VirtualMachine, t kubevirtv1.VirtualMachineConditionType) *kubevirtv1.VirtualMachineCondition {
	if vm == nil {
		return nil
	}
	for i := range vm.Status.Conditions {
		if vm.Status.Conditions[i].Type == t {
			return &vm.Status.Conditions[i]
		}
	}
	return nil
}

const podScheduled = kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled)

func unschedulableWith(substr string) func(*kubevirtv1.VirtualMachineInstance) bool {
	return func(v *kubevirtv1.VirtualMachineInstance) bool {
		c := vmiCond(v, podScheduled)
		return v != nil && v.Status.Phase == kubevirtv1.Scheduling && c != nil && c.Status == corev1.ConditionFalse &&
			c.Reason == corev1.PodReasonUnschedulable && strings.Contains(c.Message, substr)
	}
}

// patchVM merge-patches a VM.
func patchVM(t *testing.T, ns, name string, patch map[string]any) {
	t.Helper()
	data, _ := json.Marshal(patch)
	if _, err := env.dyn.Resource(gvrVM).Namespace(ns).Patch(testContext(t), name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch vm %s/%s: %v", ns, name, err)
	}
}

func deleteObject(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	err := env.dyn.Resource(gvr).Namespace(ns).Delete(testContext(t), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

// waitEvent waits for an event with the reason about the named object and
// returns its message.
func waitEvent(t *testing.T, ns, object, reason string) string {
	t.Helper()
	ctx := testContext(t)
	sel := fields.OneTermEqualSelector("involvedObject.name", object).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return env.kube.CoreV1().Events(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return env.kube.CoreV1().Events(ns).Watch(ctx, o)
		},
	}
	var msg string
	match := func(obj any) bool {
		if ev, ok := obj.(*corev1.Event); ok && ev.Reason == reason {
			msg = ev.Message
			return true
		}
		return false
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Event{}, func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if match(o) {
				return true, nil
			}
		}
		return false, nil
	}, func(e watch.Event) (bool, error) { return match(e.Object), nil })
	if err != nil {
		t.Fatalf("event %s about %s/%s: %v", reason, ns, object, err)
	}
	return msg
}

// waitPodEvent waits for an event of reason about the (first) launcher Pod
// of VMI name and returns its message.
func waitPodEvent(t *testing.T, ns, vmi, reason string) string {
	t.Helper()
	var pod string
	err := simtest.WaitObject(testContext(t), env.dyn, gvrVMI, ns, vmi, func(u *unstructured.Unstructured) bool {
		pods, err := env.kube.CoreV1().Pods(ns).List(testContext(t), metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher,vm.kubevirt.io/name=" + vmi})
		if err != nil || len(pods.Items) == 0 {
			return false
		}
		pod = pods.Items[0].Name
		return true
	})
	if err != nil {
		t.Fatalf("launcher pod of %s/%s: %v", ns, vmi, err)
	}
	return waitEvent(t, ns, pod, reason)
}

// createObjectWith is createObject with a change to the map form first
// (to send fields the Go types do not have).
func createObjectWith(t *testing.T, gvr schema.GroupVersionResource, obj any, edit func(map[string]any)) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	edit(m)
	u := &unstructured.Unstructured{Object: m}
	res, err := env.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(testContext(t), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	return res
}

// aloneOnHosts waits until no VMI of another test's namespace is left
// (namespaces of earlier tests being deleted), for tests whose operation
// takes in every VM of the simulator: maintenance and the upgrade. It runs
// before the parallel tests resume, so only earlier sequential tests'
// VMIs can be in the way.
func aloneOnHosts(t *testing.T, ns string) {
	t.Helper()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return env.dyn.Resource(gvrVMI).Namespace("").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return env.dyn.Resource(gvrVMI).Namespace("").Watch(ctx, o)
		},
	}
	others := func(store cache.Store) []string {
		var out []string
		for _, o := range store.List() {
			if u, ok := o.(*unstructured.Unstructured); ok && u.GetNamespace() != ns && strings.HasPrefix(u.GetNamespace(), "t-") {
				out = append(out, u.GetNamespace()+"/"+u.GetName())
			}
		}
		return out
	}
	var left []string
	var synced cache.Store
	_, err := watchtools.UntilWithSync(testContext(t), lw, &unstructured.Unstructured{}, func(store cache.Store) (bool, error) {
		synced = store
		left = others(store)
		return len(left) == 0, nil
	}, func(watch.Event) (bool, error) {
		left = others(synced) // the informer's store holds the event already
		return len(left) == 0, nil
	})
	if err != nil {
		t.Fatalf("VMIs of other tests still on the hosts: %v (%v)", left, err)
	}
}
