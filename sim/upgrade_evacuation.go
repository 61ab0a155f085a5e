// Stand-in for Harvester's upgrade of its hosts, Harvester v1.8.1: what
// the pre-drain does with a failed evacuation. It follows
// https://github.com/harvester/harvester/blob/v1.8.1/package/upgrade/upgrade_node.sh.

package sim

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/controllers"
)

// checkFailedMigrations is upgrade_node.sh's
// check_migrations_phase "Failed" (upgrade_node.sh:226-258) for one VMI ns/name in phase Running on
// the host: `kubectl get vmim -n NS -lkubevirt.io/vmi-name=NAME` in phase
// Failed; a name not starting "kubevirt-evacuation" is skipped ("skipping
// non-upgrade related vmim"); for the others the reasons of `kubectl -n
// NS events --for=virtualmachineinstancemigration/VMIM --types=warning`,
// and when they contain "failedmigration" (grep -i) `virtctl stop NAME ||
// true` (KubeVirt's stop subresource, through virt-api). The migration's age is not looked at. A failing kubectl lists
// nothing (the script's arrays stay empty); a failing stop is ignored.
// (Phases Scheduling and Pending are only printed by the script.)
func checkFailedMigrations(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, key string) {
	ns, name, _ := strings.Cut(key, "/")
	list, err := dyn.Resource(controllers.GVRMigration).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: controllers.LabelMigrationVMI + "=" + name})
	if err != nil {
		return
	}
	for _, m := range list.Items {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		if phase != string(kubevirtv1.MigrationFailed) || !strings.HasPrefix(m.GetName(), "kubevirt-evacuation") {
			continue
		}
		warnings := migrationWarnings(ctx, kube, ns, m.GetName())
		if warnings != "" && strings.Contains(strings.ToLower(warnings), "failedmigration") {
			_ = vmSubresource(ctx, kube, ns, name, "stop")
		}
	}
}

// migrationWarnings is what `kubectl -n NS events
// --for=virtualmachineinstancemigration/NAME --types=warning
// -ojsonpath='{.items[*].reason}'` prints: the events whose involved
// object is that migration, of type warning (compared case-insensitively),
// their reasons joined by spaces. "" when they cannot be listed (2>/dev/null).
func migrationWarnings(ctx context.Context, kube kubernetes.Interface, ns, name string) string {
	sel := fields.Set{"involvedObject.kind": "VirtualMachineInstanceMigration", "involvedObject.name": name}.AsSelector().String()
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return ""
	}
	var reasons []string
	for _, e := range events.Items {
		if strings.EqualFold(e.Type, "warning") {
			reasons = append(reasons, e.Reason)
		}
	}
	return strings.Join(reasons, " ")
}

// vmSubresource is virtctl's PUT of a VM's subresource (start, stop)
// through virt-api, as `virtctl stop` does.
func vmSubresource(ctx context.Context, kube kubernetes.Interface, ns, name, verb string) error {
	err := kube.CoreV1().RESTClient().Put().AbsPath("/apis/subresources.kubevirt.io/v1/namespaces", ns, "virtualmachines", name, verb).
		Body([]byte("{}")).SetHeader("Content-Type", "application/json").Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("%s vm %s/%s: %w", verb, ns, name, err)
	}
	return nil
}
