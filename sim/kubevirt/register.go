package kubevirt

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

var gvrAPIService = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// RunningAndRunStrategy is the cause KubeVirt v1.7.0's VM admitter gives
// for a VM with both spec.running and spec.runStrategy
// (pkg/virt-api/webhooks/validating-webhook/admitters/vms-admitter.go).
const RunningAndRunStrategy = "Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead"

// Register applies virt-api's webhook configurations and the
// subresources APIServices (once virt-api serves: virt-operator's own
// order), then waits until the APIServices are Available and
// kube-apiserver calls the VM validator.
func (c *ControlPlane) Register(ctx context.Context, probeNamespace string) error {
	objs, err := newApplier(c.kube.Discovery(), c.dyn).applyFiles(ctx, c.path("objects", webhooksFile), c.path("objects", apiServicesFile))
	if err != nil {
		return err
	}
	k := kubeapi.KindOf[*unstructured.UnstructuredList]("APIService", &unstructured.Unstructured{}, c.dyn.Resource(gvrAPIService))
	for _, s := range objs {
		if s.GetKind() != "APIService" {
			continue
		}
		_, err := kubeapi.Wait(ctx, k, "", s.GetName(), 0, func(u *unstructured.Unstructured) (bool, error) {
			return u != nil && kubeapi.ConditionTrue(u, "Available"), nil
		})
		if err != nil {
			return fmt.Errorf("kubevirt: APIService %s not available: %w", s.GetName(), err)
		}
	}
	return c.waitValidator(ctx, probeNamespace)
}

// waitValidator dry-run creates a VM with both spec.running and
// spec.runStrategy until KubeVirt's VM validator refuses it: then
// kube-apiserver has loaded the webhook configurations. Nothing can be
// watched for that, so it polls.
func (c *ControlPlane) waitValidator(ctx context.Context, namespace string) error {
	running, strategy := true, kubevirtv1.RunStrategyAlways
	vm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kubevirtv1.GroupVersion.String(), "kind": "VirtualMachine",
		"metadata": map[string]any{"name": "harvester-sim-kubevirt-probe", "namespace": namespace},
		"spec": map[string]any{"running": running, "runStrategy": string(strategy),
			// A guest memory, so that Harvester's validator (called in
			// parallel, either refusal may come back) has nothing to refuse.
			"template": map[string]any{"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{},
				"memory": map[string]any{"guest": "1Gi"}}}}},
	}}
	vms := c.dyn.Resource(kubevirtv1.GroupVersion.WithResource("virtualmachines")).Namespace(namespace)
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, last = vms.Create(ctx, vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), RunningAndRunStrategy), nil
	})
	if err != nil {
		return fmt.Errorf("kubevirt: KubeVirt's VM validator is not called: %w (last answer: %w)", err, last)
	}
	return nil
}
