package harvesterapi

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// KindClaim is a static address's claim (a ConfigMap), as messages name it.
const KindClaim = "address claim"

// ConfigMaps is the ConfigMaps of namespace ns, for watches.
func (a *API) ConfigMaps(ns string) kubeapi.Kind {
	return kubeapi.KindOf[*corev1.ConfigMapList](KindClaim, &corev1.ConfigMap{}, a.kube.ConfigMaps(ns))
}

// ListConfigMaps lists the ConfigMaps of ns matching a label selector.
func (a *API) ListConfigMaps(ctx context.Context, ns, selector string) ([]corev1.ConfigMap, error) {
	list, err := do(ctx, a, "list ConfigMaps in "+ns+" labelled "+selector, func(c context.Context) (*corev1.ConfigMapList, error) {
		return a.kube.ConfigMaps(ns).List(c, metav1.ListOptions{LabelSelector: selector})
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// GetConfigMap reads one ConfigMap.
func (a *API) GetConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return do(ctx, a, "get ConfigMap "+ref(ns, name), func(c context.Context) (*corev1.ConfigMap, error) {
		return a.kube.ConfigMaps(ns).Get(c, name, metav1.GetOptions{})
	})
}

// CreateConfigMap creates one ConfigMap (AlreadyExists: the name is taken).
func (a *API) CreateConfigMap(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	a.seen.created(KindClaim, cm.Namespace, cm.Name)
	return do(ctx, a, "create ConfigMap "+ref(cm.Namespace, cm.Name), func(c context.Context) (*corev1.ConfigMap, error) {
		return a.kube.ConfigMaps(cm.Namespace).Create(c, cm, metav1.CreateOptions{})
	})
}

// ListVMIs lists the VM instances of a namespace matching a label
// selector.
func (a *API) ListVMIs(ctx context.Context, ns, selector string) ([]kubevirtv1.VirtualMachineInstance, error) {
	list, err := do(ctx, a, "list VMIs in "+ns+" labelled "+selector, func(c context.Context) (*kubevirtv1.VirtualMachineInstanceList, error) {
		return a.kube.VirtualMachineInstances(ns).List(c, metav1.ListOptions{LabelSelector: selector})
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// StartVM sets spec.runStrategy (and annotations, when given) of the VM of
// that UID with one merge patch.
func (a *API) StartVM(ctx context.Context, ns, name string, uid types.UID, rs kubevirtv1.VirtualMachineRunStrategy, annotations map[string]string) error {
	a.seen.forgetMachine()
	meta := map[string]any{"uid": uid}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta, "spec": map[string]any{"runStrategy": rs}})
	if err != nil {
		return fmt.Errorf("encode patch: %w", err)
	}
	_, err = do(ctx, a, "start VM "+ref(ns, name), func(c context.Context) (*kubevirtv1.VirtualMachine, error) {
		return a.kube.VirtualMachines(ns).Patch(c, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
	return err
}

// GetDHCPPool reads a managed-DHCP IPPool.
func (a *API) GetDHCPPool(ctx context.Context, ns, name string) (*dhcpapi.IPPool, error) {
	return getDynamic[dhcpapi.IPPool](ctx, a, "get managed-DHCP IPPool "+ref(ns, name), dhcpapi.GVRIPPool, ns, name)
}

// GetNetworkConfig reads the managed-DHCP VirtualMachineNetworkConfig of a VM.
func (a *API) GetNetworkConfig(ctx context.Context, ns, vm string) (*dhcpapi.VirtualMachineNetworkConfig, error) {
	return getDynamic[dhcpapi.VirtualMachineNetworkConfig](ctx, a, "get managed-DHCP network config "+ref(ns, vm), dhcpapi.GVRNetworkConfig, ns, vm)
}
