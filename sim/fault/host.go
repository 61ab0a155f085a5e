package fault

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SetHostDown takes host node down (with remove, up again): the simulated
// kubelet of a down host stops renewing its node Lease and posting its
// status, its guests stop answering, and the real kube-controller-manager
// and the simulated Harvester react as they would to a dead host. It
// returns once the controllers act on it (the Lease is no longer renewed);
// the Node turns Ready Unknown only after kube-controller-manager's
// --node-monitor-grace-period.
func SetHostDown(ctx context.Context, kube kubernetes.Interface, node string, remove bool) error {
	if node == "" || strings.ContainsAny(node, "/ *?[") {
		return fmt.Errorf("fault %s: %q is not a host name: use a Node name such as harvester-node-1", HostDown, node)
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("fault %s %s: %w", HostDown, node, err)
		}
		hosts := []string{}
		if list, lerr := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); lerr == nil {
			for _, n := range list.Items {
				hosts = append(hosts, n.Name)
			}
		}
		return fmt.Errorf("fault %s: no host %q: the hosts are %s", HostDown, node, strings.Join(hosts, ", "))
	}
	return SetLine(ctx, kube, HostDown, node, remove)
}
