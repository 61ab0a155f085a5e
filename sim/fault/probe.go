package fault

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Admission policies reach kube-apiserver's policy cache asynchronously and
// nothing reports when they have. So that `fault reject-create` and `fault
// clear` return only once they are in effect, they probe with server-side
// dry-run creates of an empty object (validating admission runs for dry runs
// too). Kinds whose empty object is invalid cannot be probed; for those the
// commands return at once.

type probeResult int

// probeSpecs are the least specs that pass the schema of kinds whose empty
// object does not (KubeVirt's CRDs require spec.template.spec.domain.devices):
// the schema is checked before admission, so an empty one would never reach
// the fault's policy. (ValidatingAdmissionPolicies run before validating
// webhooks, so KubeVirt's own admitters do not hide the fault either.)
var probeSpecs = map[schema.GroupResource]func() map[string]any{
	{Group: "kubevirt.io", Resource: "virtualmachines"}: func() map[string]any {
		return map[string]any{"runStrategy": "Halted", "template": map[string]any{"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{}}}}}
	},
}

const (
	probeAccepted probeResult = iota
	probeRejected
	probeUnknown
)

// probeCreate dry-runs a create of an empty object of group/resource.
func probeCreate(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, group, resource string) probeResult {
	gvr, kind, namespaced, ok := discoverResource(kube, group, resource)
	if !ok {
		return probeUnknown
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"generateName": "harvester-sim-fault-probe-"},
	}}
	if spec, ok := probeSpecs[gvr.GroupResource()]; ok {
		obj.Object["spec"] = spec()
	}
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if namespaced {
		ri = dyn.Resource(gvr).Namespace(probeNamespace)
	}
	_, err := ri.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil:
		return probeAccepted
	case strings.Contains(err.Error(), "harvester-sim fault"):
		return probeRejected
	case strings.Contains(err.Error(), "admission webhook"):
		return probeAccepted // a webhook (KubeVirt's admitter) runs after the policies: the fault let it through
	default:
		return probeUnknown
	}
}

func discoverResource(kube kubernetes.Interface, group, resource string) (gvr schema.GroupVersionResource, kind string, namespaced, ok bool) {
	lists, err := kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return gvr, "", false, false
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil || gv.Group != group {
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == resource {
				return gv.WithResource(resource), r.Kind, r.Namespaced, true
			}
		}
	}
	return gvr, "", false, false
}

// waitProbe waits until creates of group/resource are rejected (or, with
// want probeAccepted, accepted); it gives up quietly on kinds it cannot probe.
func waitProbe(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, group, resource string, want probeResult) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got := probeCreate(ctx, kube, dyn, group, resource)
		return got == want || got == probeUnknown, nil
	})
	if err != nil {
		return fmt.Errorf("fault on creates of %s not in effect after 30s: %w", strings.Trim(resource+"."+group, "."), err)
	}
	return nil
}
