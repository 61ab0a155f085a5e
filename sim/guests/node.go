// Stand-in for a guest's kubelet, Kubernetes v1.34.4: the Node it
// registers with --cloud-provider=external. It follows
// https://github.com/kubernetes/kubernetes/blob/v1.34.4/pkg/kubelet/kubelet_node_status.go.

package guests

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// Keys kubelet (with --cloud-provider=external) and the node lifecycle
// controller put on Nodes.
const (
	TaintUnreachable = "node.kubernetes.io/unreachable"
	TaintNotReady    = "node.kubernetes.io/not-ready"
	LabelHostname    = "kubernetes.io/hostname"
	LabelOS          = "kubernetes.io/os"
	LabelArch        = "kubernetes.io/arch"
	LabelBetaOS      = "beta.kubernetes.io/os"
	LabelBetaArch    = "beta.kubernetes.io/arch"
	LabelZone        = "topology.kubernetes.io/zone"
	LabelRegion      = "topology.kubernetes.io/region"

	// The role labels a K3s or RKE2 server puts on its node (every
	// simulated node is a server: control plane and etcd).
	LabelRoleControlPlane = "node-role.kubernetes.io/control-plane"
	LabelRoleMaster       = "node-role.kubernetes.io/master"
	LabelRoleEtcd         = "node-role.kubernetes.io/etcd"

	// KubeletVersion is what the simulated kubelets report (the guest API
	// server's version, as K3s would).
	KubeletVersion = "v1.34.4+k3s1"
)

// NodeName is the name kubelet registers: the lower-cased hostname of the
// VMI (spec.hostname, else the VM's name).
func NodeName(vm, vmi *unstructured.Unstructured) string {
	host := ""
	if vmi != nil {
		host, _, _ = unstructured.NestedString(vmi.Object, "spec", "hostname")
	}
	if host == "" {
		host, _, _ = unstructured.NestedString(vm.Object, "spec", "template", "spec", "hostname")
	}
	if host == "" {
		host = vm.GetName()
	}
	return strings.ToLower(host)
}

// RunningIP is the VMI's first IPv4 address while it runs, else "".
func RunningIP(vmi *unstructured.Unstructured) string {
	if vmi == nil || vmi.GetDeletionTimestamp() != nil {
		return ""
	}
	if phase, _, _ := unstructured.NestedString(vmi.Object, "status", "phase"); phase != "Running" {
		return ""
	}
	ifaces, _, _ := unstructured.NestedSlice(vmi.Object, "status", "interfaces")
	for _, i := range ifaces {
		m, ok := i.(map[string]any)
		if !ok {
			continue
		}
		ip, _ := m["ipAddress"].(string)
		if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
			return ip
		}
	}
	return ""
}

// BuildNode is the Node kubelet registers for a VM with address ip: taint
// uninitialized (the cloud provider removes it), the provided node IP, the
// hostname/os/arch labels and a K3s/RKE2 server's role labels.
func BuildNode(name, ip string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				LabelHostname: name, LabelOS: "linux", LabelArch: "amd64", LabelBetaOS: "linux", LabelBetaArch: "amd64",
				LabelRoleControlPlane: "true", LabelRoleMaster: "true", LabelRoleEtcd: "true",
			},
			Annotations: map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: ip},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
	}
}

// readyCondition is the Ready condition kubelet posts while running, or
// the one the node lifecycle controller sets once it stops posting.
func readyCondition(running bool, now time.Time) corev1.NodeCondition {
	t := metav1.NewTime(now)
	if running {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastHeartbeatTime: t, LastTransitionTime: t}
}

// NodeStatus updates node for its VM being running with ip (or not) and
// reports whether its status or its spec changed. Addresses and the
// provided node IP follow the VM's address; a node whose VM stopped or
// went away turns NotReady (Ready Unknown) and gets the unreachable taints.
func NodeStatus(node *corev1.Node, running bool, ip string, now time.Time) (statusChanged, specChanged bool) {
	cond := readyCondition(running, now)
	found := false
	for i, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		found = true
		if c.Status != cond.Status {
			node.Status.Conditions[i] = cond
			statusChanged = true
		}
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, cond)
		statusChanged = true
	}
	if running {
		addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: node.Name}}
		if !slices.Equal(node.Status.Addresses, addrs) {
			node.Status.Addresses, statusChanged = addrs, true
		}
		if node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr] != ip {
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			node.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr], specChanged = ip, true
		}
		if node.Status.NodeInfo.KubeletVersion == "" {
			node.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: KubeletVersion, OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "containerd://2.0.0-k3s1", OSImage: "Ubuntu 22.04 LTS"}
			statusChanged = true
		}
	}
	specChanged = setUnreachable(node, !running) || specChanged
	return statusChanged, specChanged
}

// setUnreachable plays the node lifecycle controller: it removes the
// not-ready taint the API server adds at registration once the node is
// Ready, and adds (or removes) the unreachable taints (NoSchedule and
// NoExecute). It reports whether the taints changed.
func setUnreachable(node *corev1.Node, unreachable bool) bool {
	var kept []corev1.Taint
	had, notReady := false, false
	for _, t := range node.Spec.Taints {
		switch t.Key {
		case TaintUnreachable:
			had = true
			continue
		case TaintNotReady:
			notReady = true
			continue
		}
		kept = append(kept, t)
	}
	if unreachable == had && !notReady {
		return false
	}
	if unreachable {
		kept = append(kept,
			corev1.Taint{Key: TaintUnreachable, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute})
	}
	node.Spec.Taints = kept
	return true
}
