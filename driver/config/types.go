package config

import "github.com/harvester-kit/harvester-machine/internal/harvester"

// DiskInfo is the JSON form of --harvester-disk-info.
type DiskInfo struct {
	Disks []Disk `json:"disks"`
}

// Disk is one entry of DiskInfo.
type Disk struct {
	ImageName        string `json:"imageName,omitempty"`
	StorageClassName string `json:"storageClassName,omitempty"`
	Size             int    `json:"size,omitempty"`
	BootOrder        int    `json:"bootOrder,omitempty"`
	Bus              string `json:"bus,omitempty"`
	Type             string `json:"type,omitempty"`
	HotPlugAble      bool   `json:"hotPlugAble,omitempty"`
}

// NetworkInfo is the JSON form of --harvester-network-info.
type NetworkInfo struct {
	Interfaces []NetworkInterface `json:"interfaces"`
}

// NetworkInterface is one entry of NetworkInfo.
type NetworkInterface struct {
	NetworkName string `json:"networkName"`
	MACAddress  string `json:"macAddress,omitempty"`
	Model       string `json:"model,omitempty"`
	Type        string `json:"type,omitempty"`
}

// VGPUInfo is the JSON form of --harvester-vgpu-info.
type VGPUInfo struct {
	VGPURequests []VGPURequest `json:"vGPURequests"`
}

// VGPURequest is one vGPU of VGPUInfo.
type VGPURequest struct {
	Name       string `json:"name"`
	DeviceName string `json:"deviceName"`
}

// Disk types and interface bindings.
const (
	DiskTypeDisk  = "disk"
	DiskTypeCDRom = "cd-rom"

	InterfaceTypeBridge     = "bridge"
	InterfaceTypeMasquerade = "masquerade"
)

// ObjectRef names a namespaced object.
type ObjectRef struct{ Namespace, Name string }

// String is "<namespace>/<name>".
func (r ObjectRef) String() string { return r.Namespace + "/" + r.Name }

// ParseRef parses "<namespace>/<name>" or "<name>" (in defaultNS).
func ParseRef(v, defaultNS string) (ObjectRef, error) {
	ns, name, err := harvester.SplitNamespacedName(v, defaultNS)
	return ObjectRef{Namespace: ns, Name: name}, err
}
