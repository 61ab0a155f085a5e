package simtest

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

var (
	gvrVM  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	gvrVMI = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
)

// CCMInitializedNode is n as the Harvester cloud provider initialises it
// from its VM's UID and VMI (pure): providerID harvester://<VM UID>; zone
// and region labels (and their beta failure-domain twins, as k8s.io/cloud-
// provider's node controller writes both) from the VMI's topology
// annotations, the providerID only when the node has none; addresses only
// when kubelet gave the provided-node-ip annotation (the VMI's IPv4 equal
// to it InternalIP, its other IPv4s ExternalIP, the Hostname kept); the
// uninitialized taint removed.
func CCMInitializedNode(n corev1.Node, vmUID string, vmi *kubevirtv1.VirtualMachineInstance) corev1.Node {
	n = *n.DeepCopy()
	if n.Spec.ProviderID == "" {
		n.Spec.ProviderID = harvester.ProviderIDPrefix + vmUID
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for k, beta := range map[string]string{harvester.ZoneKey: corev1.LabelFailureDomainBetaZone, harvester.RegionKey: corev1.LabelFailureDomainBetaRegion} {
		if v := vmi.Annotations[k]; v != "" {
			n.Labels[k], n.Labels[beta] = v, v
		}
	}
	if provided := n.Annotations[harvester.AnnProvidedNodeIP]; provided != "" {
		n.Status.Addresses = vmiAddresses(provided, n.Status.Addresses, vmi)
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != harvester.TaintUninitialized {
			taints = append(taints, t)
		}
	}
	n.Spec.Taints = taints
	return n
}

// vmiAddresses are the node addresses the cloud provider reports: the
// VMI's IPv4 addresses (InternalIP for the provided node IP, ExternalIP
// for the others) and the node's Hostname address.
func vmiAddresses(provided string, current []corev1.NodeAddress, vmi *kubevirtv1.VirtualMachineInstance) []corev1.NodeAddress {
	var out []corev1.NodeAddress
	seen := map[string]bool{}
	for _, iface := range vmi.Status.Interfaces {
		for _, ip := range append([]string{iface.IP}, iface.IPs...) {
			a, err := netip.ParseAddr(ip)
			if err != nil || !a.Is4() || seen[ip] {
				continue
			}
			seen[ip] = true
			typ := corev1.NodeExternalIP
			if ip == provided {
				typ = corev1.NodeInternalIP
			}
			out = append(out, corev1.NodeAddress{Type: typ, Address: ip})
		}
	}
	for _, a := range current {
		if a.Type == corev1.NodeHostName {
			out = append(out, a)
		}
	}
	return out
}

// CCMInitNodes does to every node of a guest cluster what the cloud
// provider does once it runs (CCMInitializedNode), reading each node's VM
// and VMI (node name = VM name) in namespace with its Harvester client.
// It returns the initialised nodes.
func CCMInitNodes(ctx context.Context, guest kubernetes.Interface, harvester dynamic.Interface, namespace string) ([]corev1.Node, error) {
	nodes, err := guest.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list guest nodes: %w", err)
	}
	out := make([]corev1.Node, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		got, err := ccmInitNode(ctx, guest, harvester, namespace, n.Name, n.Name)
		if err != nil {
			return out, err
		}
		out = append(out, got)
	}
	return out, nil
}

// ccmInitNode initialises guest node name from VM (and VMI) vmName.
func ccmInitNode(ctx context.Context, guest kubernetes.Interface, harvester dynamic.Interface, namespace, name, vmName string) (corev1.Node, error) {
	vm, err := harvester.Resource(gvrVM).Namespace(namespace).Get(ctx, vmName, metav1.GetOptions{})
	if err != nil {
		return corev1.Node{}, fmt.Errorf("initialise node %s: get its VM: %w", name, err)
	}
	u, err := harvester.Resource(gvrVMI).Namespace(namespace).Get(ctx, vmName, metav1.GetOptions{})
	if err != nil {
		return corev1.Node{}, fmt.Errorf("initialise node %s: get its VMI: %w", name, err)
	}
	var vmi kubevirtv1.VirtualMachineInstance
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vmi); err != nil {
		return corev1.Node{}, fmt.Errorf("initialise node %s: decode its VMI: %w", name, err)
	}
	nodes := guest.CoreV1().Nodes()
	var done corev1.Node
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := CCMInitializedNode(*cur, string(vm.GetUID()), &vmi)
		upd, err := nodes.Update(ctx, &want, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		upd.Status.Addresses = want.Status.Addresses
		done = *upd
		st, err := nodes.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err == nil {
			done = *st
		}
		return err
	})
	if err != nil {
		return corev1.Node{}, fmt.Errorf("initialise node %s: %w", name, err)
	}
	return done, nil
}
