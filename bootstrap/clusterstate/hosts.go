package clusterstate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// GVRKubeVirt is KubeVirt's own configuration object.
var GVRKubeVirt = kubevirtv1.SchemeGroupVersion.WithResource("kubevirts")

// Kinds only Hosts lists.
const (
	KindKubeVirt      = "KubeVirt"
	KindResourceQuota = "ResourceQuota"
	KindNamespace     = "Namespace"
)

// Hosts is what `maintenance-check` looks at: Harvester's hosts and every
// VM, VMI and pod placed on them, the VMI migrations and the events about
// them (seven list calls and one get).
type Hosts struct {
	// Namespace the VMs and VMIs were listed in; "" for all namespaces.
	Namespace string
	Nodes     []corev1.Node
	VMs       []kubevirtv1.VirtualMachine
	VMIs      []kubevirtv1.VirtualMachineInstance
	// Pods of every namespace (virt-launcher pods among them): what takes
	// room on each host. Nil when they could not be listed (Errors says
	// why); room is then judged from the VMIs alone.
	Pods []corev1.Pod
	// KubeVirt is KubeVirt's configuration, nil when there is none.
	KubeVirt *kubevirtv1.KubeVirt
	// OverheadRatio is the setting additional-guest-memory-overhead-ratio
	// ("" when unset or unreadable: Harvester's default applies).
	OverheadRatio string
	// UpgradeConfig is the setting upgrade-config (its restoreVM), "" when
	// unset or unreadable.
	UpgradeConfig string
	// GuestNodes are the guest cluster's Nodes (--guest-kubeconfig), nil
	// without it; GuestCluster names that cluster.
	GuestNodes   []corev1.Node
	GuestCluster string
	// Migrations are the VMI migrations, nil when they could not be read
	// (Errors says why); MigrationEvents the events about them.
	Migrations      []kubevirtv1.VirtualMachineInstanceMigration
	MigrationEvents []corev1.Event
	// Quotas are the ResourceQuotas of the namespace ("" for all), nil
	// when they could not be listed (Errors says why); ProjectQuotas the
	// Rancher project limits of each namespace that has any
	// (harvester.AnnotationRancherResourceQuota).
	Quotas        []corev1.ResourceQuota
	ProjectQuotas map[string]string
	Errors        map[string]string
}

// FetchHosts lists the hosts, the VMs and VMIs of namespace ("" for all)
// and every pod. Only a failure to list hosts, VMs or VMIs is an error; the
// pods and the KubeVirt object are optional (recorded in Errors).
func (c *Clients) FetchHosts(ctx context.Context, namespace string) (Hosts, error) {
	h := Hosts{Namespace: namespace, Errors: map[string]string{}}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return h, fmt.Errorf("list hosts (Nodes): %w", err)
	}
	h.Nodes = nodes.Items
	if h.VMs, err = listDyn[kubevirtv1.VirtualMachine](ctx, c.Dyn.Resource(GVRVM).Namespace(namespace), ""); err != nil {
		return h, fmt.Errorf("list %ss in %q: %w", KindVM, namespace, err)
	}
	if h.VMIs, err = listDyn[kubevirtv1.VirtualMachineInstance](ctx, c.Dyn.Resource(GVRVMI).Namespace(namespace), ""); err != nil {
		return h, fmt.Errorf("list %ss in %q: %w", KindVMI, namespace, err)
	}
	pods, err := c.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		record(h.Errors, KindPod, "", err)
	} else {
		h.Pods = append([]corev1.Pod{}, pods.Items...) // listed: not nil, even when empty
	}
	kvs, err := listDyn[kubevirtv1.KubeVirt](ctx, c.Dyn.Resource(GVRKubeVirt), "")
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		record(h.Errors, KindKubeVirt, "", err)
	case len(kvs) > 0:
		h.KubeVirt = &kvs[0]
	}
	h.OverheadRatio = c.settingValue(ctx, harvester.SettingMemoryOverheadRatio, h.Errors)
	h.UpgradeConfig = c.settingValue(ctx, harvester.SettingUpgradeConfig, h.Errors)
	c.fetchMigrations(ctx, &h)
	c.fetchQuotas(ctx, &h)
	return h, nil
}

// fetchQuotas lists the namespace's ResourceQuotas and reads the project
// limits of the namespaces that have any; a failure is recorded in
// h.Errors (the quotas then stay nil: not judged).
func (c *Clients) fetchQuotas(ctx context.Context, h *Hosts) {
	quotas, err := c.Kube.CoreV1().ResourceQuotas(h.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		record(h.Errors, KindResourceQuota, h.Namespace, err)
		return
	}
	h.Quotas, h.ProjectQuotas = append([]corev1.ResourceQuota{}, quotas.Items...), map[string]string{}
	for _, q := range quotas.Items {
		if _, done := h.ProjectQuotas[q.Namespace]; done {
			continue
		}
		ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, q.Namespace, metav1.GetOptions{})
		if err != nil {
			h.Errors[KindNamespace+" "+q.Namespace] = fmt.Sprintf("get namespace %s (its project quota): %v", q.Namespace, err)
			continue
		}
		h.ProjectQuotas[q.Namespace] = ns.Annotations[harvester.AnnotationRancherResourceQuota]
	}
}

// GVRSetting is Harvester's settings (cluster-scoped).
var GVRSetting = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}

// settingValue is a Harvester setting's value, else its default; ""
// when it cannot be read (recorded in errs).
func (c *Clients) settingValue(ctx context.Context, name string, errs map[string]string) string {
	u, err := c.Dyn.Resource(GVRSetting).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			errs["Setting "+name] = fmt.Sprintf("get setting %s: %v", name, err)
		}
		return ""
	}
	if v, _, _ := unstructured.NestedString(u.Object, "value"); v != "" {
		return v
	}
	v, _, _ := unstructured.NestedString(u.Object, "default")
	return v
}

// FetchGuestNodes lists the guest cluster's Nodes (for their roles).
func FetchGuestNodes(ctx context.Context, guest kubernetes.Interface) ([]corev1.Node, error) {
	nodes, err := guest.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the guest cluster's Nodes: %w", err)
	}
	return nodes.Items, nil
}
