package harvester

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels Harvester and its cloud provider react to, set on a machine's VM,
// VM template, cloud-init Secret and volumes.
const (
	// LabelCreator with CreatorValue makes Harvester copy the host's topology
	// into VMI annotations and the cloud provider act on the VMI.
	LabelCreator      = "harvesterhci.io/creator"
	CreatorValue      = "docker-machine-driver-harvester"
	LabelGuestCluster = "guestcluster.harvesterhci.io/name"
	LabelNodePool     = "nodepool.harvesterhci.io/name"
	LabelMachineSet   = "harvesterhci.io/machineSetName"
	LabelVMName       = "harvesterhci.io/vmName"
)

// Labels the cloud provider puts on the LoadBalancers it creates on
// Harvester for a guest cluster's Services.
const (
	LabelLBCluster          = "cloudprovider.harvesterhci.io/cluster"
	LabelLBServiceNamespace = "cloudprovider.harvesterhci.io/serviceNamespace"
	LabelLBServiceName      = "cloudprovider.harvesterhci.io/serviceName"
)

// Labels of this project's node driver (Harvester does not read them).
const (
	// LabelMachineID marks every object a machine creates (Secret, VM, VM
	// template and so its VMIs, and the PVCs of its volume claim templates)
	// with the random ID the driver recorded for that machine; the driver
	// changes only objects carrying its machine's ID.
	LabelMachineID = DriverLabelDomain + "/machine-id"
	// LabelHotplug marks the PVC of a hot-pluggable disk: like the guest
	// cluster's CSI volumes it survives a normal node delete.
	LabelHotplug = DriverLabelDomain + "/hotplug"
	// LabelVGPUs is the number of vGPUs of a machine's VM, on the VM and
	// its template (so on its VMIs): the vGPU check of a create lists only
	// VMIs where it is not "0" (see driver/vgpu.go).
	LabelVGPUs = DriverLabelDomain + "/vgpus"
)

// DriverLabelDomain is the prefix of this project's node driver's label keys.
const DriverLabelDomain = "node-driver.harvester-kit.io"

// reservedLabelDomains are the label-key prefixes a user's label may not
// use (the domain itself and its subdomains), and who reacts to them.
var reservedLabelDomains = []struct{ domain, owner string }{
	{"harvesterhci.io", "Harvester"},
	{"kubevirt.io", "KubeVirt"},
	{DriverLabelDomain, "the node driver"},
}

// ReservedLabelKey says whose a label key is when its prefix belongs to
// Harvester (harvesterhci.io and its subdomains, such as
// guestcluster.harvesterhci.io), KubeVirt (kubevirt.io, vm.kubevirt.io, ...)
// or the node driver: those labels steer their controllers or the driver's
// ownership, so a user may not set them. "" for any other key.
func ReservedLabelKey(key string) string {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	for _, r := range reservedLabelDomains {
		if prefix == r.domain || strings.HasSuffix(prefix, "."+r.domain) {
			return fmt.Sprintf("keys under %s/ are %s's", r.domain, r.owner)
		}
	}
	return ""
}

// Annotations on VMs and volumes.
const (
	AnnotationVolumeClaimTemplates = "harvesterhci.io/volumeClaimTemplates"
	AnnotationImageID              = "harvesterhci.io/imageId"
	AnnotationRemovedPVCs          = "harvesterhci.io/removedPersistentVolumeClaims"
	AnnotationRemoveAllPVCs        = "harvesterhci.io/removeAllPersistentVolumeClaims"
	AnnotationReservedMemory       = "harvesterhci.io/reservedMemory"
	AnnotationSSHNames             = "harvesterhci.io/sshNames"
	// AnnotationCPUMemoryHotplug "true" lets a VM's CPUs and memory be
	// hot-plugged: the VM mutator keeps its guest memory and sets no
	// maxSockets.
	AnnotationCPUMemoryHotplug = "harvesterhci.io/enableCPUAndMemoryHotplug"
)

// MaxLabelValue is the longest valid label value.
const MaxLabelValue = 63

// MachineLabels are the labels of a machine's VM, VM template, cloud-init
// Secret and volumes. Machine names follow `<cluster>-<pool>-<suffix>`
// (Rancher v2: `<cluster>-<pool>-<set hash>-<suffix>`): the machine set is
// the name without its last dash-separated part, the pool is the machine set
// without the `<cluster>-` prefix. A name without dashes is its own machine
// set. Every value is a valid label value.
func MachineLabels(namespace, machineName, clusterName string) map[string]string {
	set := machineSetOf(machineName)
	pool := set
	if clusterName != "" && strings.HasPrefix(set, clusterName+"-") {
		pool = strings.TrimPrefix(set, clusterName+"-")
	}
	l := map[string]string{
		LabelCreator:    CreatorValue,
		LabelMachineSet: MachineSetValue(namespace, set),
		LabelVMName:     LabelValue(machineName),
	}
	if v, err := GuestClusterValue(clusterName); err == nil && v != "" {
		l[LabelGuestCluster] = v
		l[LabelNodePool] = LabelValue(pool)
	}
	for k, v := range l {
		if v == "" {
			delete(l, k)
		}
	}
	return l
}

// GuestClusterValue is the LabelGuestCluster value of a guest cluster: its
// name, unchanged. A name that is not a valid label value is an error, never
// converted: converting would let distinct names share a value (and so
// each other's VMs and volumes). "" (no cluster) yields "".
func GuestClusterValue(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if msgs := validation.IsValidLabelValue(name); len(msgs) > 0 {
		return "", fmt.Errorf("%q is not a valid label value (it labels the cluster's VMs and volumes as %s): "+
			"at most %d characters, letters, digits, '-', '_' and '.', starting and ending with a letter or digit", name, LabelGuestCluster, MaxLabelValue)
	}
	return name, nil
}

// machineSetOf is a machine name without its last dash-separated part.
func machineSetOf(machineName string) string {
	if i := strings.LastIndex(machineName, "-"); i > 0 {
		return machineName[:i]
	}
	return machineName
}

// MachineSetValue is the LabelMachineSet value of a machine set
// (`<cluster>-<pool>`) in a namespace.
func MachineSetValue(namespace, machineSet string) string {
	return LabelValue(namespace + "-" + machineSet)
}

// PoolMachineSetValue is the LabelMachineSet value the VMs of one node pool
// carry: the pool's machines are named `<cluster>-<pool>-<suffix>`. With
// Rancher v2 provisioning the pool part includes the machine set's hash
// (`pool1-7d9f8`).
func PoolMachineSetValue(namespace, cluster, pool string) string {
	return MachineSetValue(namespace, cluster+"-"+pool)
}

// MachineNameMachineSetValue is the LabelMachineSet value of the machine
// called machineName (and of every machine of its pool).
func MachineNameMachineSetValue(namespace, machineName string) string {
	return MachineSetValue(namespace, machineSetOf(machineName))
}

// LabelValue turns s into a valid label value: characters other than
// letters, digits, '-', '_' and '.' become '-', the value starts and ends
// with a letter or digit, and a value longer than 63 characters is cut and
// ends with 8 hex digits of a hash of s, so distinct long inputs stay
// distinct.
func LabelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			b[i] = '-'
		}
	}
	v := trimNonAlnum(string(b))
	if len(v) <= MaxLabelValue {
		return v
	}
	sum := sha256.Sum256([]byte(s))
	return trimNonAlnum(v[:MaxLabelValue-9]) + "-" + hex.EncodeToString(sum[:])[:8]
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func trimNonAlnum(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r > 127 || !isAlnum(byte(r)) })
}
