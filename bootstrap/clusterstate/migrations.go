package clusterstate

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// GVRMigration is KubeVirt's VirtualMachineInstanceMigration.
var GVRMigration = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstancemigrations")

// Kinds FetchMigrations lists.
const (
	KindMigration = "VirtualMachineInstanceMigration"
	KindEvent     = "Event"
)

// fetchMigrations lists the VMI migrations of namespace ("" for all) and
// the events about them: what Harvester v1.8's upgrade pre-drain
// reads (upgrade_node.sh check_migrations_phase: `kubectl get vmim`, then
// `kubectl events --for=virtualmachineinstancemigration/NAME
// --types=warning`). Both are optional: a failure is recorded in h.Errors,
// and h.Migrations stays nil (failed evacuations are then not judged).
func (c *Clients) fetchMigrations(ctx context.Context, h *Hosts) {
	migs, err := listDyn[kubevirtv1.VirtualMachineInstanceMigration](ctx, c.Dyn.Resource(GVRMigration).Namespace(h.Namespace), "")
	if err != nil {
		h.Errors[KindMigration] = fmt.Sprintf("list %ss in %q: %v (failed evacuations are not judged)", KindMigration, h.Namespace, err)
		return
	}
	// Every type: kubectl compares the type case-insensitively, the
	// field selector would not.
	sel := fields.OneTermEqualSelector("involvedObject.kind", KindMigration).String()
	events, err := c.Kube.CoreV1().Events(h.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		h.Errors[KindEvent] = fmt.Sprintf("list %ss about %ss in %q: %v (failed evacuations are not judged)", KindEvent, KindMigration, h.Namespace, err)
		return
	}
	h.Migrations = append([]kubevirtv1.VirtualMachineInstanceMigration{}, migs...)
	h.MigrationEvents = events.Items
}
