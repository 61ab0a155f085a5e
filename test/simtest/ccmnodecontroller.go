package simtest

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// CloudNodeController plays k8s.io/cloud-provider's cloud node controller
// (v0.33, the one the Harvester cloud provider v0.2.7 is built with) with
// the Harvester cloud provider's InstancesV2:
//   - a node carrying the taint node.cloudprovider.kubernetes.io/
//     uninitialized (any effect: kubelet's NoSchedule at registration, the
//     VMI controller's PreferNoSchedule after a migration) is initialised
//     (CCMInitializedNode, from the VM named after the node or the VM the
//     guest agent mapped it to) and every taint of that key removed; an
//     error (VM or VMI missing) requeues it;
//   - a node without it gets only its GA zone/region labels reconciled
//     from the beta ones (the beta labels are the source of truth).
//
// Where it simplifies: the periodic address refresh of initialised nodes
// is not played, and a missing VMI fails the initialisation where the
// real provider initialises without zone.
type CloudNodeController struct {
	Guest     kubernetes.Interface
	Harvester dynamic.Interface // the cloud-config's credential
	Namespace string            // the cloud-config's namespace
	// NodeToVM: see TopologyController.
	NodeToVM *sync.Map
	Log      func(format string, args ...any)
	OnError  func(error)
}

// Run starts the controller; it returns once the nodes are listed and
// works until ctx ends.
func (c *CloudNodeController) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(c.Guest, 0)
	inf := f.Core().V1().Nodes().Informer()
	return runKeyed(ctx, "cloud node controller", inf, f.Start, false, func(ctx context.Context, obj any) error {
		return c.syncNode(ctx, obj.(*corev1.Node))
	}, c.fail)
}

func (c *CloudNodeController) fail(err error) {
	if err != nil && c.OnError != nil {
		c.OnError(err)
	}
}

// HasCloudTaint: the node carries the uninitialized taint, of any effect.
func HasCloudTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == harvester.TaintUninitialized {
			return true
		}
	}
	return false
}

func (c *CloudNodeController) syncNode(ctx context.Context, n *corev1.Node) error {
	if !HasCloudTaint(n) {
		return c.reconcileLabels(ctx, n)
	}
	vmName := n.Name
	if c.NodeToVM != nil {
		if v, ok := c.NodeToVM.Load(n.Name); ok {
			vmName = v.(string)
		}
	}
	done, err := ccmInitNode(ctx, c.Guest, c.Harvester, c.Namespace, n.Name, vmName)
	if err != nil {
		return err
	}
	if c.Log != nil {
		c.Log("node %s initialised: providerID %s, zone %q, region %q", done.Name, done.Spec.ProviderID,
			done.Labels[harvester.ZoneKey], done.Labels[harvester.RegionKey])
	}
	return nil
}

// ReconciledLabels is the node controller's label reconciliation (pure):
// for zone and region, when the beta label exists, the GA label gets its
// value. It returns the labels to write (none: nil).
func ReconciledLabels(labels map[string]string) map[string]string {
	var out map[string]string
	for beta, ga := range map[string]string{
		corev1.LabelFailureDomainBetaZone: corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
		corev1.LabelInstanceType: corev1.LabelInstanceTypeStable,
	} {
		v, ok := labels[beta]
		if !ok {
			continue
		}
		if cur, has := labels[ga]; !has || cur != v {
			if out == nil {
				out = map[string]string{}
			}
			out[ga] = v
		}
	}
	return out
}

func (c *CloudNodeController) reconcileLabels(ctx context.Context, n *corev1.Node) error {
	want := ReconciledLabels(n.Labels)
	if want == nil {
		return nil
	}
	nodes := c.Guest.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for k, v := range want {
			cur.Labels[k] = v
		}
		_, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reconcile labels of node %s: %w", n.Name, err)
	}
	return nil
}
