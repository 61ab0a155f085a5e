package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Labels and annotations the driver sets or reads.
const (
	LabelCreator      = "harvesterhci.io/creator"
	CreatorValue      = "docker-machine-driver-harvester"
	LabelGuestCluster = "guestcluster.harvesterhci.io/name"
	LabelNodePool     = "nodepool.harvesterhci.io/name"
	LabelMachineSet   = "harvesterhci.io/machineSetName"
	LabelVMName       = "harvesterhci.io/vmName"

	// LabelMachineID marks every object a machine creates (Secret, VM, VM
	// template and so its VMIs, and the PVCs of its volume claim templates)
	// with the random ID the driver recorded for that machine; the driver
	// changes only objects carrying its machine's ID.
	LabelMachineID = "node-driver.harvester-kit.io/machine-id"
	// LabelHotplug marks the PVC of a hot-pluggable disk: like the guest
	// cluster's CSI volumes it survives a normal node delete.
	LabelHotplug = "node-driver.harvester-kit.io/hotplug"

	AnnotationVolumeClaimTemplates = "harvesterhci.io/volumeClaimTemplates"
	AnnotationImageID              = "harvesterhci.io/imageId"
	AnnotationRemovedPVCs          = "harvesterhci.io/removedPersistentVolumeClaims"
	AnnotationRemoveAllPVCs        = "harvesterhci.io/removeAllPersistentVolumeClaims"
	AnnotationReservedMemory       = "harvesterhci.io/reservedMemory"
	AnnotationSSHNames             = "harvesterhci.io/sshNames"

	maxLabelValue = 63
)

// MachineLabels are the labels of a machine's VM, VM template, cloud-init
// Secret and volumes. Machine names follow `<cluster>-<pool>-<suffix>`
// (Rancher v2: `<cluster>-<pool>-<set hash>-<suffix>`): the machine set is
// the name without its last dash-separated part, the pool is the machine set
// without the `<cluster>-` prefix. A name without dashes is its own machine
// set. Every value is a valid label value.
func MachineLabels(namespace, machineName, clusterName string) map[string]string {
	set := machineName
	if i := strings.LastIndex(machineName, "-"); i > 0 {
		set = machineName[:i]
	}
	pool := set
	if clusterName != "" && strings.HasPrefix(set, clusterName+"-") {
		pool = strings.TrimPrefix(set, clusterName+"-")
	}
	l := map[string]string{
		LabelCreator:    CreatorValue,
		LabelMachineSet: LabelValue(namespace + "-" + set),
		LabelVMName:     LabelValue(machineName),
	}
	if clusterName != "" {
		l[LabelGuestCluster] = LabelValue(clusterName)
		l[LabelNodePool] = LabelValue(pool)
	}
	for k, v := range l {
		if v == "" {
			delete(l, k)
		}
	}
	return l
}

// LabelValue turns s into a valid label value: characters other than
// letters, digits, '-', '_' and '.' become '-', the value starts and ends
// with a letter or digit, and a value longer than 63 characters is cut and
// ends with 8 hex digits of a hash of s, so distinct long inputs stay
// distinct.
func LabelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(isAlnum(c) || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	v := trimNonAlnum(string(b))
	if len(v) <= maxLabelValue {
		return v
	}
	sum := sha256.Sum256([]byte(s))
	return trimNonAlnum(v[:maxLabelValue-9]) + "-" + hex.EncodeToString(sum[:])[:8]
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func trimNonAlnum(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r > 127 || !isAlnum(byte(r)) })
}
