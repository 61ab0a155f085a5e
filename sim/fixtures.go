package sim

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"strconv"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/controllers"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// Names of the fixtures, documented in docs/sim.md.
const (
	simLabel           = "sim.harvesterhci.io/fixture"
	FixtureNamespace   = "default"
	SystemNamespace    = "harvester-system"
	LonghornNamespace  = "longhorn-system"
	FixtureImage       = "ubuntu-22.04"
	FixtureNetwork     = "vlan1"
	FixtureKeyPair     = "sim-key"
	DefaultStorageName = "harvester-longhorn"
	ServerVersion      = "v1.8.1"
	Region             = "sim-region"
)

// mgmtNetworkLabel is the label harvester-network-controller puts on every
// host of the cluster network mgmt (network.harvesterhci.io/<name>).
const mgmtNetworkLabel = "network.harvesterhci.io/mgmt"

// hostName and zoneName give the i-th simulated host and zone.
func hostName(i int) string { return "harvester-node-" + strconv.Itoa(i) }
func zoneName(i int) string { return "sim-zone-" + string(rune('a'+i%26)) }

// kubeVirtDevices are what virt-handler's device plugins advertise on
// each host (--max-devices, default 1000, each): every virt-launcher Pod
// KubeVirt renders asks for one of each.
var kubeVirtDevices = []corev1.ResourceName{"devices.kubevirt.io/kvm", "devices.kubevirt.io/tun", "devices.kubevirt.io/vhost-net"}

// buildHosts are the Harvester hosts as Nodes, spread round-robin over zones.
func buildHosts(hosts, zones int) []*corev1.Node {
	nodes := make([]*corev1.Node, 0, hosts)
	for i := range hosts {
		name := hostName(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				corev1.LabelHostname: name, corev1.LabelTopologyRegion: Region, corev1.LabelTopologyZone: zoneName(i % zones),
				"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", simLabel: "true",
				// virt-handler's node labeller: the host runs VMs, and the
				// machine type the driver's VMs ask for.
				kubevirtv1.NodeSchedulable: "true", kubevirtv1.SupportedMachineTypeLabel + "q35": "true",
				// Harvester's network controller: every host is on the
				// management cluster network (ensureMgmtLabels); Harvester's
				// VM mutator gives each VM on mgmt a required affinity to it.
				mgmtNetworkLabel: "true",
				// Harvester's installer: a host it installed, with the
				// worker role (the hosts carry no control-plane role,
				// and Harvester's promote controller would otherwise
				// promote three of them).
				hv.LabelManagedHost: "true", hv.LabelWorkerHost: "true",
			},
				// CAPI: the host's Machine (installRancherFixtures).
				Annotations: map[string]string{hv.AnnMachine: machineName(name)}},
			Status: corev1.NodeStatus{
				Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
					corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("200Gi")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("62Gi"),
					corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("180Gi")},
				Conditions: []corev1.NodeCondition{{
					Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "simulated host is ready",
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
				}},
			},
		}
		for _, d := range kubeVirtDevices {
			node.Status.Capacity[d] = resource.MustParse("1k")
			node.Status.Allocatable[d] = resource.MustParse("1k")
		}
		nodes = append(nodes, node)
	}
	return nodes
}

func buildDefaultStorageClass() *storagev1.StorageClass {
	expand := true
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultStorageName, Labels: map[string]string{simLabel: "true"},
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "driver.longhorn.io", AllowVolumeExpansion: &expand,
		ReclaimPolicy: &reclaim, VolumeBindingMode: &binding,
		Parameters: map[string]string{"numberOfReplicas": "3", "staleReplicaTimeout": "30"},
	}
}

// fixtureGuestOS is what qemu-guest-agent reports in an Ubuntu 22.04 cloud
// image guest (virtualmachineinstances/guestosinfo).
const fixtureGuestOS = `{"guestAgentVersion":"6.2.0","os":{"name":"Ubuntu","id":"ubuntu","prettyName":"Ubuntu 22.04.5 LTS",` +
	`"version":"22.04.5 LTS (Jammy Jellyfish)","versionId":"22.04","kernelRelease":"5.15.0-124-generic",` +
	`"kernelVersion":"#134-Ubuntu SMP Fri Sep 27 20:20:17 UTC 2024","machine":"x86_64"},"timezone":"UTC, 0"}`

// buildHarvesterFixtures are the custom objects every simulated Harvester
// starts with: an image, a VLAN network, a key pair, the server version and
// the settings of the VM mutator.
func buildHarvesterFixtures(publicKey string) ([]*unstructured.Unstructured, error) {
	fixture := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{simLabel: "true"}}
	}
	image := &harvesterv1.VirtualMachineImage{
		TypeMeta:   metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "VirtualMachineImage"},
		ObjectMeta: fixture(FixtureImage, FixtureNamespace),
		Spec: harvesterv1.VirtualMachineImageSpec{
			Backend: "backingimage", DisplayName: FixtureImage, SourceType: "download",
			URL: "https://cloud-images.ubuntu.com/releases/22.04/release/ubuntu-22.04-server-cloudimg-amd64.img",
		},
	}
	image.Labels[controllers.LabelOSType] = "ubuntu"
	image.Annotations = map[string]string{controllers.AnnotationGuestOS: fixtureGuestOS}
	keyPair := &harvesterv1.KeyPair{
		TypeMeta:   metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "KeyPair"},
		ObjectMeta: fixture(FixtureKeyPair, FixtureNamespace),
		Spec:       harvesterv1.KeyPairSpec{PublicKey: publicKey},
	}
	setting := &harvesterv1.Setting{
		TypeMeta:   metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "Setting"},
		ObjectMeta: fixture("server-version", ""),
		Value:      ServerVersion, Default: ServerVersion,
	}
	objs := []runtime.Object{image, keyPair, setting}
	// The settings the VM mutator and the node-down controller read, as
	// Harvester ships them: the default set, no value.
	for name, def := range map[string]string{
		hv.SettingOvercommit:          hv.DefaultOvercommit,
		hv.SettingMemoryOverheadRatio: hv.DefaultMemoryOverheadRatio,
		hv.SettingVMForceResetPolicy:  hv.DefaultVMForceResetPolicy,
	} {
		objs = append(objs, &harvesterv1.Setting{
			TypeMeta:   metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "Setting"},
			ObjectMeta: fixture(name, ""), Default: def,
		})
	}
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("convert fixture: %w", err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	network := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{
			"name": FixtureNetwork, "namespace": FixtureNamespace,
			"labels": map[string]any{
				simLabel: "true", "network.harvesterhci.io/type": "L2VlanNetwork",
				"network.harvesterhci.io/clusternetwork": "mgmt", "network.harvesterhci.io/vlan-id": "1",
			},
		},
		"spec": map[string]any{
			"config": `{"cniVersion":"0.3.1","name":"vlan1","type":"bridge","bridge":"mgmt-br","promiscMode":true,"vlan":1,"ipam":{}}`,
		},
	}}
	return append(out, network), nil
}

// newSSHKey makes the fixture key pair: an OpenSSH private key (PEM) and the
// authorized_keys form of its public key.
func newSSHKey() (privatePEM []byte, publicKey string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("generate ssh key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "harvester-sim")
	if err != nil {
		return nil, "", fmt.Errorf("encode ssh key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, "", fmt.Errorf("encode ssh public key: %w", err)
	}
	return pem.EncodeToMemory(block), string(ssh.MarshalAuthorizedKey(sshPub)), nil
}
