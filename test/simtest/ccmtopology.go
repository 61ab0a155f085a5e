package simtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Names the cloud provider v0.2.7 uses for its NAD mapping (pkg/utils).
const (
	// DefaultCCMClusterName is what the cloud-provider framework passes as
	// --cluster-name when none is given.
	DefaultCCMClusterName = "kubernetes"
	// ConfigMapNADMapping (namespace kube-system of the guest) holds the
	// NAD -> interface mapping common to the cluster's VMIs.
	ConfigMapNADMapping    = "harvester-nad-mapping"
	ConfigMapKeyNADMapping = "interface-nad-mapping"
)

var gvrGuestOSInfo = schema.GroupVersionResource{Group: "subresources.kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}

// TopologyController plays the VMI controller of the Harvester cloud
// provider v0.2.7 (pkg/controller/virtualmachineinstance,
// "harvester-cloudprovider-resync-topology"), by its rules and never
// kinder. For every change of a VMI of its namespace (OnVMIChanged):
//   - a VMI being deleted, without annotations or labels, of another
//     namespace, or whose migration is not completed is skipped; a VMI
//     with no migrationState at all counts as completed (utils.
//     IsMigrationCompleted), so the rule also fires for VMIs never migrated;
//   - a VMI not labelled harvesterhci.io/creator=docker-machine-driver-
//     harvester is skipped;
//   - the guest node is looked up by the hostname the guest agent reports
//     (virt-api's guestosinfo), else by the VMI's name; no such node: the
//     VMI is another cluster's, skipped;
//   - when the VMI's zone or region annotation differs from the node's
//     label, the taint node.cloudprovider.kubernetes.io/uninitialized=
//     true:PreferNoSchedule is added to (or updated on) the node named
//     after the VMI (not the hostname the lookup used), which makes the
//     cloud node controller (CloudNodeController) initialise it again;
//   - then the NAD mapping ConfigMap kube-system/harvester-nad-mapping is
//     written from the cluster's VMIs; with --cluster-name empty or
//     "kubernetes" that fails and the VMI is requeued (after the taint).
//
// An error requeues the VMI with the rate limit wrangler's controllers use.
type TopologyController struct {
	Harvester dynamic.Interface    // the cloud-config's credential
	Namespace string               // the cloud-config's namespace
	Cluster   string               // the CCM's --cluster-name
	Guest     kubernetes.Interface // the guest cluster
	// NodeToVM remembers the VM name of a node the guest agent named
	// (the cloud provider's nodeToVMName); share it with CloudNodeController.
	NodeToVM *sync.Map
	// GuestOSInfo, when set, replaces the guestosinfo call (unit tests);
	// it returns the hostname the guest agent reports.
	GuestOSInfo func(ctx context.Context, namespace, name string) (string, error)
	Log         func(format string, args ...any)
	OnError     func(error)

	listVMIs func() ([]*kubevirtv1.VirtualMachineInstance, error)
}

// Run starts the controller; it returns once the VMIs are listed and works
// until ctx ends.
func (c *TopologyController) Run(ctx context.Context) error {
	if c.NodeToVM == nil {
		c.NodeToVM = &sync.Map{}
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Harvester, 0, c.Namespace, nil)
	inf := f.ForResource(gvrVMI).Informer()
	c.listVMIs = func() ([]*kubevirtv1.VirtualMachineInstance, error) {
		var out []*kubevirtv1.VirtualMachineInstance
		for _, o := range inf.GetStore().List() {
			vmi, err := toVMI(o)
			if err != nil {
				return nil, err
			}
			if vmi.Labels[harvester.LabelGuestCluster] == c.Cluster {
				out = append(out, vmi)
			}
		}
		return out, nil
	}
	return runKeyed(ctx, "cloud provider VMI controller", inf, f.Start, true, func(ctx context.Context, obj any) error {
		vmi, err := toVMI(obj)
		if err != nil {
			return err
		}
		return c.OnVMIChanged(ctx, vmi)
	}, c.fail)
}

func toVMI(obj any) (*kubevirtv1.VirtualMachineInstance, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("decode VMI: unexpected %T", obj)
	}
	var vmi kubevirtv1.VirtualMachineInstance
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vmi); err != nil {
		return nil, fmt.Errorf("decode VMI %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &vmi, nil
}

func (c *TopologyController) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

func (c *TopologyController) fail(err error) {
	if err != nil && c.OnError != nil {
		c.OnError(err)
	}
}

// MigrationCompleted is the cloud provider's rule: no migration state at
// all, or a migration marked completed.
func MigrationCompleted(vmi *kubevirtv1.VirtualMachineInstance) bool {
	return vmi.Status.MigrationState == nil || vmi.Status.MigrationState.Completed
}

// SameTopology compares the zone and region of a VMI's annotations with a
// node's labels (a missing key is "").
func SameTopology(vmiAnnotations, nodeLabels map[string]string) bool {
	return vmiAnnotations[harvester.RegionKey] == nodeLabels[harvester.RegionKey] &&
		vmiAnnotations[harvester.ZoneKey] == nodeLabels[harvester.ZoneKey]
}

// OnVMIChanged is one run of the cloud provider's handler for vmi.
func (c *TopologyController) OnVMIChanged(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) error {
	if vmi == nil || vmi.DeletionTimestamp != nil {
		return nil
	}
	if vmi.Annotations == nil || vmi.Labels == nil || vmi.Namespace != c.Namespace || !MigrationCompleted(vmi) {
		return nil
	}
	if vmi.Labels[harvester.LabelCreator] != harvester.CreatorValue {
		return nil
	}
	nodeName := vmi.Name
	if host, err := c.guestHostname(ctx, vmi.Namespace, vmi.Name); err == nil {
		nodeName = host
		if c.NodeToVM != nil {
			c.NodeToVM.Store(nodeName, vmi.Name)
		}
	}
	node, err := c.Guest.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // another cluster's VM
	}
	if err != nil {
		return fmt.Errorf("get guest node %s: %w", nodeName, err)
	}
	if !SameTopology(vmi.Annotations, node.Labels) {
		added, err := c.taintUninitialized(ctx, vmi.Name)
		if err != nil {
			return fmt.Errorf("taint guest node %s: %w", vmi.Name, err)
		}
		if added {
			c.logf("VMI %s/%s on %s: zone %q region %q, guest node %s has zone %q region %q: tainted %s=true:PreferNoSchedule for re-initialisation",
				vmi.Namespace, vmi.Name, vmi.Status.NodeName, vmi.Annotations[harvester.ZoneKey], vmi.Annotations[harvester.RegionKey],
				node.Name, node.Labels[harvester.ZoneKey], node.Labels[harvester.RegionKey], harvester.TaintUninitialized)
		}
	}
	if err := c.syncNADMapping(ctx); err != nil {
		return fmt.Errorf("failed to sync NAD mapping ConfigMap: %w", err)
	}
	return nil
}

// guestHostname asks virt-api for what the guest agent reports.
func (c *TopologyController) guestHostname(ctx context.Context, namespace, name string) (string, error) {
	if c.GuestOSInfo != nil {
		return c.GuestOSInfo(ctx, namespace, name)
	}
	u, err := c.Harvester.Resource(gvrGuestOSInfo).Namespace(namespace).Get(ctx, name, metav1.GetOptions{}, "guestosinfo")
	if err != nil {
		return "", err
	}
	host, _, _ := unstructured.NestedString(u.Object, "hostname")
	return host, nil
}

// ReSyncTaint is the taint the cloud provider puts back on a guest node
// whose VM's topology changed.
func ReSyncTaint() corev1.Taint {
	return corev1.Taint{Key: harvester.TaintUninitialized, Value: "true", Effect: corev1.TaintEffectPreferNoSchedule}
}

// WithTaint is k8s.io/cloud-provider's addOrUpdateTaint (pure): a taint of
// the same key and effect is replaced unless equal; otherwise it is
// appended. It reports whether anything changed.
func WithTaint(taints []corev1.Taint, t corev1.Taint) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	updated := false
	for i := range taints {
		if t.MatchTaint(&taints[i]) {
			if equality.Semantic.DeepEqual(t, taints[i]) {
				return taints, false
			}
			out = append(out, t)
			updated = true
			continue
		}
		out = append(out, taints[i])
	}
	if !updated {
		out = append(out, t)
	}
	return out, true
}

// taintUninitialized is AddOrUpdateTaintOnNode: a strategic merge patch of
// the node's taints, retried on conflict.
func (c *TopologyController) taintUninitialized(ctx context.Context, nodeName string) (bool, error) {
	added := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Guest.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		taints, changed := WithTaint(n.Spec.Taints, ReSyncTaint())
		if !changed {
			return nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return err
		}
		_, err = c.Guest.CoreV1().Nodes().Patch(ctx, nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		added = err == nil
		return err
	})
	return added, err
}

// syncNADMapping writes the NAD -> interface mapping common to the
// cluster's VMIs into kube-system/harvester-nad-mapping of the guest.
func (c *TopologyController) syncNADMapping(ctx context.Context) error {
	if c.Cluster == "" || c.Cluster == DefaultCCMClusterName {
		return errors.New("guest cluster name configuration is empty/default, we cannot identify the cluster")
	}
	var vmis []*kubevirtv1.VirtualMachineInstance
	if c.listVMIs != nil {
		var err error
		if vmis, err = c.listVMIs(); err != nil {
			return err
		}
	}
	value := ""
	if m := CommonVMINADs(vmis); len(m) > 0 {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		value = string(b)
	}
	cms := c.Guest.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := cms.Get(ctx, ConfigMapNADMapping, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: ConfigMapNADMapping, Namespace: metav1.NamespaceSystem},
				Data:       map[string]string{ConfigMapKeyNADMapping: value},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if cur.Data[ConfigMapKeyNADMapping] == value {
			return nil
		}
		if cur.Data == nil {
			cur.Data = map[string]string{}
		}
		cur.Data[ConfigMapKeyNADMapping] = value
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// CommonVMINADs is the cloud provider's GetCommonVMINADs: over the VMIs
// that are Running, not mid-migration and report interfaces, the Multus
// network -> guest interface pairs every one of them has; nil when no VMI
// qualifies.
func CommonVMINADs(vmis []*kubevirtv1.VirtualMachineInstance) map[string]string {
	var result map[string]string
	first := true
	for _, vmi := range vmis {
		if vmi == nil || vmi.Status.Phase != kubevirtv1.Running || !MigrationCompleted(vmi) || len(vmi.Status.Interfaces) == 0 {
			continue
		}
		m := nadInterfaces(vmi)
		if first {
			result, first = m, false
			continue
		}
		for nad, iface := range result {
			if m[nad] != iface {
				delete(result, nad)
			}
		}
	}
	return result
}

func nadInterfaces(vmi *kubevirtv1.VirtualMachineInstance) map[string]string {
	nad := map[string]string{}
	for _, n := range vmi.Spec.Networks {
		if n.Multus != nil {
			nad[n.Name] = n.Multus.NetworkName
		}
	}
	out := map[string]string{}
	for _, i := range vmi.Status.Interfaces {
		if i.InterfaceName == "" || i.Name == "" {
			continue
		}
		if n, ok := nad[i.Name]; ok {
			out[n] = i.InterfaceName
		}
	}
	return out
}
