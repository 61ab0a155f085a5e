package controllers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Harvester v1.8's names for the maintain-mode strategy
// (pkg/util/constants.go), written out here: the simulator plays
// Harvester from its source and shares no rule with the tools it tests.
const (
	labelMaintainModeStrategy              = "harvesterhci.io/maintain-mode-strategy"
	annMaintainModeStrategyNodeName        = "harvesterhci.io/maintain-mode-strategy-node-name"
	labelVMName                            = "harvesterhci.io/vmName"
	annVMRunStrategy                       = "harvesterhci.io/vmRunStrategy"
	strategyShutdown                       = "Shutdown"
	strategyShutdownAndRestartAfterEnable  = "ShutdownAndRestartAfterEnable"
	strategyShutdownAndRestartAfterDisable = "ShutdownAndRestartAfterDisable"
)

// shutdownStrategies is constants.go's MaintainModeStrategyShutdownValues.
var shutdownStrategies = []string{strategyShutdownAndRestartAfterEnable, strategyShutdownAndRestartAfterDisable, strategyShutdown}

// maintainModeStrategyFilter is the drain's additional pod filter
// (pkg/util/drainhelper/helper.go): a pod labelled harvesterhci.io/vmName
// whose maintain-mode strategy is a shutdown one is skipped, neither
// evicted nor waited for.
func maintainModeStrategyFilter(pod *corev1.Pod) bool {
	if _, ok := pod.Labels[labelVMName]; !ok {
		return false
	}
	v, ok := pod.Labels[labelMaintainModeStrategy]
	return ok && slices.Contains(shutdownStrategies, v)
}

// drainSkips: the drain of host skips the VMI's launcher pod there (the
// labels of the pod, which KubeVirt copied from the VMI when it made it).
func (s *sim) drainSkips(vmi *kubevirtv1.VirtualMachineInstance, host string) bool {
	pod := currentPod(s.launcherPods(vmi.Namespace, vmi.UID), host)
	return pod != nil && maintainModeStrategyFilter(pod)
}

// maintainWaits tells, as an event on the host, what Harvester's maintain
// controller waits for while maintain-status is running: it sets
// completed only once no VMI is left on the host, and a VMI whose pod
// the drain skipped stays unless something stops its VM (without force
// the nodedrain controller did; with force it does not).
func (s *sim) maintainWaits(ctx context.Context, node *corev1.Node, left []*kubevirtv1.VirtualMachineInstance) {
	var waits []string
	for _, vmi := range left {
		why := "still on the host (phase " + string(vmi.Status.Phase) + ")"
		switch {
		case vmi.DeletionTimestamp != nil || s.vmHalted(vmi):
			why = "being stopped"
		case s.drainSkips(vmi, node.Name):
			why = "the drain skipped its pod (" + labelMaintainModeStrategy + "=" + vmi.Labels[labelMaintainModeStrategy] +
				", maintainModeStrategyFilter) and nothing stops it (forced maintenance stops only non-migratable VMs): it keeps running on the host"
		}
		waits = append(waits, vmi.Namespace+"/"+vmi.Name+": "+why)
	}
	sort.Strings(waits)
	msg := "maintain-status of " + node.Name + " is running; the maintain controller waits for: " + strings.Join(waits, "; ")
	if s.state.once("node/"+node.Name, "maintain", msg) {
		s.nodeEvent(ctx, node, corev1.EventTypeWarning, ReasonDrainWaiting, msg)
	}
}

// vmHalted: the VMI's VM (its controller) has runStrategy Halted.
func (s *sim) vmHalted(vmi *kubevirtv1.VirtualMachineInstance) bool {
	vm := getCached(s.vms, vmi.Namespace, controllerVMNameOf(vmi))
	if vm == nil {
		return false
	}
	rs, _, _ := unstructured.NestedString(vm.Object, "spec", "runStrategy")
	return rs == string(kubevirtv1.RunStrategyHalted)
}

// findVM is the nodedrain controller's findVM: the VMI's owner of kind
// VirtualMachine and apiVersion kubevirt.io/v1 (controller or not), "".
func findVM(vmi *kubevirtv1.VirtualMachineInstance) string {
	for _, o := range vmi.OwnerReferences {
		if o.Kind == "VirtualMachine" && o.APIVersion == "kubevirt.io/v1" {
			return o.Name
		}
	}
	return ""
}

// startAfterDisable is the end of Harvester v1.8's node action
// disableMaintenanceMode (pkg/api/node/formatter.go): for each VM labelled
// ShutdownAndRestartAfterDisable and annotated with the host, as listed,
// a PUT of KubeVirt's start subresource (virt-api patches a Halted VM to
// runStrategy Always), then an update of the listed VM without the
// annotation. That update still carries the resourceVersion from before
// the start, so kube-apiserver refuses it (conflict) and the action ends
// there with the error: the first VM runs again and keeps its
// annotation, any other is not started. (Harvester lists from its cache,
// in no set order; here the API server's order.)
func startAfterDisable(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, host string) error {
	selector := labelMaintainModeStrategy + "=" + strategyShutdownAndRestartAfterDisable
	list, err := dyn.Resource(gvrVM).Namespace("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("failed to list VMs with labels %s: %w", selector, err)
	}
	for i := range list.Items {
		vm := &list.Items[i]
		ann := vm.GetAnnotations()
		if ann[annMaintainModeStrategyNodeName] != host {
			continue
		}
		path := "/apis/subresources.kubevirt.io/v1/namespaces/" + vm.GetNamespace() + "/virtualmachines/" + vm.GetName() + "/start"
		if err := kube.Discovery().RESTClient().Put().AbsPath(path).Do(ctx).Error(); err != nil {
			return fmt.Errorf("failed to start VM %s/%s: %w", vm.GetNamespace(), vm.GetName(), err)
		}
		delete(ann, annMaintainModeStrategyNodeName)
		vm.SetAnnotations(ann)
		if _, err := dyn.Resource(gvrVM).Namespace(vm.GetNamespace()).Update(ctx, vm, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}
