package vmspec

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// ImageFacts is what the driver learned about a VirtualMachineImage.
type ImageFacts struct {
	StorageClassName string
	VirtualSizeBytes int64
}

// VMPlan is everything needed to build a machine's VM, resolved.
type VMPlan struct {
	Name, Namespace       string
	CPU                   int
	CPUModel              string
	MemoryGiB             int
	ReservedMemoryMiB     int // -1: unset
	Disks                 []DiskPlan
	NICs                  []NICPlan
	VGPUs                 []config.VGPURequest
	EFI, SecureBoot, TPM  bool
	CPUPinning            bool
	IsolateEmulatorThread bool
	Labels                map[string]string
	UserLabels            map[string]string // the VM's and its template's only
	CheckLabels           map[string]string // the VM's and its template's: what a create's checks select VMIs by
	Affinity              *corev1.Affinity
	UserDataSecret        string
	HasNetworkData        bool
	KeyPair               *config.ObjectRef // nil: none
	RunStrategy           kubevirtv1.VirtualMachineRunStrategy
}

// DiskPlan is one disk of the VM, backed by its own PVC.
type DiskPlan struct {
	Name             string // disk and volume name
	ClaimName        string
	ImageID          string // <namespace>/<name>, or empty
	StorageClassName string
	SizeGiB          int
	BootOrder        int
	Bus              string
	Type             string
	HotPlug          bool
}

// NICPlan is one network interface of the VM.
type NICPlan struct {
	Name    string
	Network config.ObjectRef
	Model   string
	MAC     string
	Type    string
	// DHCPPool is the managed-DHCP IPPool serving the network (nil: none),
	// from the network's labels.
	DHCPPool *config.ObjectRef
}

const cloudInitDiskName = "cloudinitdisk"

// UserDataSecretName is the name of a machine's cloud-init Secret.
func UserDataSecretName(machineName string) string {
	return machineName + "-cloudinit"
}

// DiskClaimName is the name of the PVC of a machine's i-th disk.
func DiskClaimName(machineName string, i int) string {
	return machineName + "-disk-" + strconv.Itoa(i)
}

// OwnedBy returns the plan with the machine's ID among the labels of
// everything built from it (VM, template, volume claims, Secret).
func (p VMPlan) OwnedBy(machineID string) VMPlan {
	if machineID == "" {
		return p
	}
	p.Labels = maps.Clone(p.Labels)
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[harvester.LabelMachineID] = machineID
	return p
}

const defaultImageDiskGiB = 40

// PlanFromConfig resolves a validated Config and its parsed JSON flags into
// a VMPlan. images maps <namespace>/<name> to what is known about each
// image the config uses.
func PlanFromConfig(c config.Config, in config.Inputs, machineName string, images map[string]ImageFacts) (VMPlan, error) {
	labels := harvester.MachineLabels(c.VMNamespace, machineName, c.ClusterName)
	p := VMPlan{
		Name: machineName, Namespace: c.VMNamespace,
		CPU: c.CPUCount, CPUModel: c.CPUModel,
		MemoryGiB: c.MemoryGiB, ReservedMemoryMiB: c.ReservedMemoryMiB,
		EFI: c.EnableEFI, SecureBoot: c.EnableSecureBoot, TPM: c.EnableTPM,
		CPUPinning: c.CPUPinning, IsolateEmulatorThread: c.IsolateEmulatorThread,
		Labels:         labels,
		UserLabels:     in.Labels,
		UserDataSecret: UserDataSecretName(machineName),
		HasNetworkData: c.NetworkData != "" || in.Static != nil,
		RunStrategy:    kubevirtv1.RunStrategyRerunOnFailure,
		VGPUs:          in.VGPUs,
		Affinity:       harvester.MergeAffinity(in.Affinity, labels[harvester.LabelMachineSet]),
	}
	var err error
	if p.KeyPair, err = KeyPairRef(c); err != nil {
		return p, err
	}
	if p.NICs, err = PlanNICs(c, in); err != nil {
		return p, err
	}
	p.CheckLabels = checkLabels(p, in.Static)
	for i := range p.NICs {
		if p.NICs[i].MAC == "" {
			p.NICs[i].MAC = staticip.MAC(c.VMNamespace, machineName, p.NICs[i].Name)
		}
	}
	sizes := make(map[string]int64, len(images))
	for id, f := range images {
		sizes[id] = f.VirtualSizeBytes
	}
	if errs := DisksFitImages(c, in, sizes); len(errs) > 0 {
		return p, errors.Join(errs...)
	}
	for i, d := range in.Disks {
		dp := DiskPlan{
			Name: "disk-" + strconv.Itoa(i), ClaimName: DiskClaimName(machineName, i),
			StorageClassName: d.StorageClassName, SizeGiB: d.Size, BootOrder: d.BootOrder,
			Bus: orDefault(d.Bus, config.DefaultDiskBus), Type: orDefault(d.Type, config.DiskTypeDisk), HotPlug: d.HotPlugAble,
		}
		if d.ImageName != "" {
			ns, name, err := harvester.SplitNamespacedName(d.ImageName, c.VMNamespace)
			if err != nil {
				return p, fmt.Errorf("disk %d image: %w", i, err)
			}
			dp.ImageID = ns + "/" + name
			facts, ok := images[dp.ImageID]
			if !ok || facts.StorageClassName == "" {
				return p, fmt.Errorf("image %s: no storage class known (is the image imported?)", dp.ImageID)
			}
			dp.StorageClassName = facts.StorageClassName
			if dp.SizeGiB == 0 {
				dp.SizeGiB = defaultImageDiskGiB
				if facts.VirtualSizeBytes > 0 {
					dp.SizeGiB = int((facts.VirtualSizeBytes + (1<<30 - 1)) >> 30)
				}
			}
		}
		p.Disks = append(p.Disks, dp)
	}
	return p, nil
}

// DisksFitImages refuses an explicit disk size smaller than its image's
// virtual size (virtualSizes: <namespace>/<name> -> bytes; 0 or absent:
// unknown, not judged): the VM would not boot from a truncated volume, or
// Longhorn refuses the volume only after the VM exists (harvester#4905).
func DisksFitImages(c config.Config, in config.Inputs, virtualSizes map[string]int64) []error {
	var errs []error
	for i, d := range in.Disks {
		if d.ImageName == "" || d.Size <= 0 {
			continue
		}
		ref, err := config.ParseRef(d.ImageName, c.VMNamespace)
		if err != nil {
			continue // validation reports it
		}
		virtual := virtualSizes[ref.String()]
		if virtual <= 0 || int64(d.Size)<<30 >= virtual {
			continue
		}
		flag, at := config.FlagDiskSize, ""
		if c.DiskInfo != "" {
			flag, at = config.FlagDiskInfo, fmt.Sprintf("disks[%d]: size: ", i)
		}
		errs = append(errs, config.FlagProblem(flag, "%s%d GiB is smaller than image %s's virtual size %s; give at least %d GiB, or 0 for the image's size",
			at, d.Size, ref, formatGiB(virtual), (virtual+(1<<30-1))>>30))
	}
	return errs
}

// formatGiB shows a byte count in GiB with two decimals ("2.20 GiB").
func formatGiB(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<30), 'f', 2, 64) + " GiB"
}

// KeyPairRef is --harvester-key-pair-name's key pair (nil: none).
func KeyPairRef(c config.Config) (*config.ObjectRef, error) {
	if c.KeyPairName == "" {
		return nil, nil
	}
	r, err := config.ParseRef(c.KeyPairName, c.VMNamespace)
	if err != nil {
		return nil, config.FlagError(config.FlagKeyPairName, err)
	}
	return &r, nil
}

// PlanNICs resolves the machine's interfaces (networks as <namespace>/<name>).
func PlanNICs(c config.Config, in config.Inputs) ([]NICPlan, error) {
	var nics []NICPlan
	for i, n := range in.NICs {
		network, err := config.ParseRef(n.NetworkName, c.VMNamespace)
		if err != nil {
			return nil, fmt.Errorf("interface %d network: %w", i, err)
		}
		nics = append(nics, NICPlan{
			Name: config.NICName(i), Network: network,
			Model: orDefault(n.Model, config.DefaultNetworkModel), MAC: n.MACAddress,
			Type: orDefault(n.Type, config.InterfaceTypeBridge),
		})
	}
	return nics, nil
}

// checkLabels are the labels the checks of later creates select this
// machine's VMIs by (harvester.LabelVGPUs, staticip.LabelRange), so that
// they do not read every VMI of the namespace.
func checkLabels(p VMPlan, s *config.StaticAddressing) map[string]string {
	l := map[string]string{harvester.LabelVGPUs: strconv.Itoa(len(p.VGPUs))}
	if s != nil && s.NIC < len(p.NICs) {
		l[staticip.LabelRange] = staticip.RangeValue(p.NICs[s.NIC].Network.String(), s.Range.String())
	}
	return l
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
