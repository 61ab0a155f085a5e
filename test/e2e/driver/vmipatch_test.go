package driver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// checkVMIPatchesConfined attacks with the driver credential kc's right
// to patch VM instances (rm releases Harvester's finalizer of an orphaned
// one with it): a VM instance of another namespace is refused by RBAC,
// and in its machine namespace KubeVirt's admission (virt-api's VMI update
// admitter, pkg/virt-api/webhooks/validating-webhook/admitters/
// vmi-update-admitter.go) refuses a change of the running instance vmi's
// spec or of its reserved kubevirt.io/ labels; the instance is unchanged.
func checkVMIPatchesConfined(t *testing.T, kc, vmi string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drv := clientOf(t, kc).CoreV1().RESTClient()
	patch := func(ns, name, body string) error {
		return drv.Patch(types.MergePatchType).AbsPath("/apis/kubevirt.io/v1/namespaces", ns, "virtualmachineinstances", name).Body([]byte(body)).Do(ctx).Error()
	}
	refused(t, "patch a VM instance in harvester-system", patch("harvester-system", vmi, `{"metadata":{"finalizers":null}}`))

	before := getVMI(t, vmi)
	if before == nil {
		t.Fatalf("no VM instance %s to attack", vmi)
	}
	for what, c := range map[string]struct{ body, says string }{
		"the spec of " + vmi:                 {`{"spec":{"terminationGracePeriodSeconds":1}}`, "update of VMI object is restricted"},
		"the kubevirt.io/nodeName of " + vmi: {`{"metadata":{"labels":{"kubevirt.io/nodeName":"elsewhere"}}}`, "reserved kubevirt.io/ labels"},
	} {
		err := patch(namespace, vmi, c.body)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("driver credential: patch %s: want KubeVirt's refusal %q, got %v", what, c.says, err)
		}
	}
	if after := getVMI(t, vmi); after == nil || !equality.Semantic.DeepEqual(before.Spec, after.Spec) || after.Labels["kubevirt.io/nodeName"] != before.Labels["kubevirt.io/nodeName"] {
		t.Errorf("the VM instance changed under the refused patches: %+v -> %+v", before, after)
	}
}
