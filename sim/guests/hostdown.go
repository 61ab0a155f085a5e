package guests

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// A guest whose VMI runs on a host that is down (`harvester-sim fault
// host-down`) is down with it: its kubelet stops posting, so its Node
// turns NotReady, until its VM runs again on another host.

// watchHostFaults follows the fault ConfigMap and looks at every guest
// cluster again when it changes.
func (c *controller) watchHostFaults(kube kubernetes.Interface) error {
	c.faults = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(fault.Namespace))
	_, err := c.faults.Core().V1().ConfigMaps().Informer().AddEventHandler(handlerFuncs(func(any) {
		for _, name := range c.clustersIn("") {
			c.queue.Add(name)
		}
	}))
	if err != nil {
		return fmt.Errorf("start guest clusters: watch the fault ConfigMap: %w", err)
	}
	return nil
}

// onDownHost reports whether vmi runs on a host that is down.
func (c *controller) onDownHost(vmi *unstructured.Unstructured) bool {
	if vmi == nil || c.faults == nil {
		return false
	}
	node, _, _ := unstructured.NestedString(vmi.Object, "status", "nodeName")
	cm, err := c.faults.Core().V1().ConfigMaps().Lister().ConfigMaps(fault.Namespace).Get(fault.ConfigMap)
	if node == "" || err != nil {
		return false
	}
	return fault.ParsePatterns(cm.Data).MatchName(fault.HostDown, node) != ""
}
