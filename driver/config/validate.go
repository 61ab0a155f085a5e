package config

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

var (
	validDiskBuses     = []string{"virtio", "sata", "scsi"}
	validDiskTypes     = []string{DiskTypeDisk, DiskTypeCDRom}
	validNICModels     = []string{"virtio", "e1000", "e1000e", "ne2k_pci", "pcnet", "rtl8139"}
	validInterfaceType = []string{InterfaceTypeBridge, InterfaceTypeMasquerade}
)

// Validate checks a Config and returns every problem found (nil entries
// are no problem; an entry may join several), and the parsed JSON flags,
// and the user data merged with the driver's parts when it is valid. Each
// message names the flag and says what would be valid. It does no I/O.
// staticNetworkData checks that the user's network data takes the static
// NIC (staticaddr.CheckNetworkData: it renders that network data; nil:
// not checked).
func Validate(c Config, machineName, sshUser string, sshPort int, staticNetworkData func(Config, *StaticAddressing) []error) (Inputs, []error) {
	in, parseErrs := ParseInputsByFlag(c)
	var (
		errs []error
		err  error
	)
	add := func(flag, format string, args ...any) {
		errs = append(errs, FlagProblem(flag, format, args...))
	}

	if machineName != "" {
		for _, m := range validation.IsDNS1123Label(machineName) {
			errs = append(errs, fmt.Errorf("machine name %q cannot be a VM name: %s", machineName, m))
		}
	}
	if strings.TrimSpace(c.KubeconfigContent) == "" {
		add(FlagKubeconfigContent, "is required (or %s): the kubeconfig of the Harvester cluster, plain or base64", EnvVar(FlagKubeconfigContent))
	} else if in.Harvester, err = ParseKubeconfig(c.KubeconfigContent); err != nil {
		add(FlagKubeconfigContent, "%v", err)
	}
	if _, err := harvester.GuestClusterValue(c.ClusterName); err != nil {
		add(FlagClusterName, "%v", err)
	}
	for _, m := range validation.IsDNS1123Label(c.VMNamespace) {
		add(FlagVMNamespace, "%q is not a namespace name: %s", c.VMNamespace, m)
	}
	if c.CPUCount < 1 {
		add(FlagCPUCount, "must be at least 1, got %d", c.CPUCount)
	}
	if c.MemoryGiB < 1 {
		add(FlagMemorySize, "must be at least 1 (GiB), got %d", c.MemoryGiB)
	}
	if c.ReservedMemoryMiB < -1 {
		add(FlagReservedMemorySize, "must be -1 (unset) or a number of MiB >= 0, got %d", c.ReservedMemoryMiB)
	} else if c.MemoryGiB >= 1 && c.MemoryGiB <= MaxMemoryGiB && c.ReservedMemoryMiB >= c.MemoryGiB*1024 {
		add(FlagReservedMemorySize, "%d MiB must be less than --%s (%d GiB)", c.ReservedMemoryMiB, FlagMemorySize, c.MemoryGiB)
	}
	if c.DiskSizeGiB < 0 {
		add(FlagDiskSize, "must be 0 (image size) or a positive number of GiB, got %d", c.DiskSizeGiB)
	}
	if c.DiskBus != "" && !slices.Contains(validDiskBuses, c.DiskBus) {
		add(FlagDiskBus, "%q is not a disk bus; valid: %s", c.DiskBus, strings.Join(validDiskBuses, ", "))
	}
	if c.NetworkModel != "" && !slices.Contains(validNICModels, c.NetworkModel) {
		add(FlagNetworkModel, "%q is not a NIC model; valid: %s", c.NetworkModel, strings.Join(validNICModels, ", "))
	}
	if sshUser == "" {
		add(FlagSSHUser, "must not be empty")
	} else if !linuxUserName.MatchString(sshUser) {
		add(FlagSSHUser, "%q is not a Linux user name: a letter or '_', then letters, digits, '.', '_' or '-', at most 32 characters", sshUser)
	}
	if sshPort < 1 || sshPort > 65535 {
		add(FlagSSHPort, "must be a port between 1 and 65535, got %d", sshPort)
	}
	if c.WaitTimeoutSeconds < 1 {
		add(FlagWaitTimeout, "must be at least 1 (seconds), got %d", c.WaitTimeoutSeconds)
	}
	if c.APITimeoutSeconds < 1 {
		add(FlagAPITimeout, "must be at least 1 (seconds), got %d", c.APITimeoutSeconds)
	}

	errs = append(errs, ValidateSizes(c)...)
	errs = append(errs, validateDisks(c, in.Disks, parseErrs.Disks)...)
	errs = append(errs, validateNetworks(c, in.NICs, parseErrs.NICs)...)
	errs = append(errs, validateCloudProvider(c, in.Harvester)...)
	errs = append(errs, parseErrs.Static)
	errs = append(errs, validateStaticNIC(in.Static, in.NICs)...)
	if staticNetworkData != nil {
		errs = append(errs, staticNetworkData(c, in.Static)...)
	}

	errs = append(errs, parseErrs.VGPUs)
	errs = append(errs, ValidateVGPUs(in.VGPUs)...)
	errs = append(errs, parseErrs.Affinity, parseErrs.Labels)
	if c.NetworkData != "" && c.StaticAddressRange == "" {
		if err := ValidateNetworkData(c.NetworkData); err != nil {
			add(FlagNetworkData, "%v", err)
		}
	}
	errs = append(errs, parseErrs.UserData, parseErrs.CloudConfig)
	if parseErrs.UserData == nil && parseErrs.CloudConfig == nil {
		in.Cloudinit, err = validateUserData(c, in, sshUser)
		errs = append(errs, err)
		errs = append(errs, validateGuestNames(c, in, machineName)...)
	}
	if c.EnableSecureBoot && !c.EnableEFI {
		add(FlagEnableSecureBoot, "needs --%s", FlagEnableEFI)
	}
	if c.IsolateEmulatorThread && !c.CPUPinning {
		add(FlagIsolateEmulatorThread, "needs --%s (KubeVirt isolates the emulator thread only with dedicated CPUs)", FlagCPUPinning)
	}
	if c.KeyPairName != "" {
		if _, _, err := harvester.SplitNamespacedName(c.KeyPairName, c.VMNamespace); err != nil {
			add(FlagKeyPairName, "%v", err)
		}
		if c.SSHPrivateKeyPath == "" {
			add(FlagKeyPairName, "needs --%s: the private key of key pair %q", FlagSSHPrivateKeyPath, c.KeyPairName)
		}
	}
	return in, errs
}

// validateDisks checks the disks; parseErr is --harvester-disk-info's.
func validateDisks(c Config, disks []Disk, parseErr error) []error {
	var errs []error
	if c.DiskInfo == "" {
		if c.ImageName == "" {
			return []error{FlagProblem(FlagImageName, "no disk: set --%s (or --%s)", FlagImageName, FlagDiskInfo)}
		}
		if _, _, err := harvester.SplitNamespacedName(c.ImageName, c.VMNamespace); err != nil {
			errs = append(errs, FlagError(FlagImageName, err))
		}
		return errs
	}
	if parseErr != nil {
		return []error{parseErr}
	}
	if len(disks) == 0 {
		return []error{FlagProblem(FlagDiskInfo, `"disks" is empty; give at least one disk`)}
	}
	boot := map[int]int{}
	for i, d := range disks {
		at := func(format string, args ...any) {
			errs = append(errs, FlagProblem(FlagDiskInfo, "disks[%d]: "+format, append([]any{i}, args...)...))
		}
		switch {
		case d.ImageName == "" && d.StorageClassName == "":
			at("needs imageName or storageClassName")
		case d.ImageName != "":
			if _, _, err := harvester.SplitNamespacedName(d.ImageName, c.VMNamespace); err != nil {
				at("imageName: %v", err)
			}
		}
		if d.Size < 0 || (d.ImageName == "" && d.Size == 0) {
			at("size must be a positive number of GiB (0 is allowed only for image disks), got %d", d.Size)
		} else if d.Size > MaxDiskGiB {
			at("size %d GiB is too large; the largest valid value is %d", d.Size, MaxDiskGiB)
		}
		if d.Bus != "" && !slices.Contains(validDiskBuses, d.Bus) {
			at("bus %q is not valid; valid: %s", d.Bus, strings.Join(validDiskBuses, ", "))
		}
		if d.Type != "" && !slices.Contains(validDiskTypes, d.Type) {
			at("type %q is not valid; valid: %s", d.Type, strings.Join(validDiskTypes, ", "))
		}
		if d.BootOrder < 0 {
			at("bootOrder must be >= 0, got %d", d.BootOrder)
		} else if d.BootOrder > 0 {
			if j, dup := boot[d.BootOrder]; dup {
				at("bootOrder %d is already used by disks[%d]", d.BootOrder, j)
			}
			boot[d.BootOrder] = i
		}
	}
	return errs
}

// validateNetworks checks the interfaces; parseErr is --harvester-network-info's.
func validateNetworks(c Config, nics []NetworkInterface, parseErr error) []error {
	var errs []error
	if c.NetworkInfo == "" {
		if c.NetworkName == "" {
			return []error{FlagProblem(FlagNetworkName, "no network: set --%s (<namespace>/<name>) or --%s", FlagNetworkName, FlagNetworkInfo)}
		}
		if _, _, err := harvester.SplitNamespacedName(c.NetworkName, c.VMNamespace); err != nil {
			errs = append(errs, FlagError(FlagNetworkName, err))
		}
		return errs
	}
	if parseErr != nil {
		return []error{parseErr}
	}
	if len(nics) == 0 {
		return []error{FlagProblem(FlagNetworkInfo, `"interfaces" is empty; give at least one interface`)}
	}
	for i, n := range nics {
		at := func(format string, args ...any) {
			errs = append(errs, FlagProblem(FlagNetworkInfo, "interfaces[%d]: "+format, append([]any{i}, args...)...))
		}
		if n.NetworkName == "" {
			at("needs networkName (<namespace>/<name>)")
		} else if _, _, err := harvester.SplitNamespacedName(n.NetworkName, c.VMNamespace); err != nil {
			at("networkName: %v", err)
		}
		if n.MACAddress != "" {
			if _, err := net.ParseMAC(n.MACAddress); err != nil {
				at("macAddress %q is not a MAC address like 52:54:00:12:34:56", n.MACAddress)
			}
		}
		if n.Model != "" && !slices.Contains(validNICModels, n.Model) {
			at("model %q is not valid; valid: %s", n.Model, strings.Join(validNICModels, ", "))
		}
		if n.Type != "" && !slices.Contains(validInterfaceType, n.Type) {
			at("type %q is not valid; valid: %s", n.Type, strings.Join(validInterfaceType, ", "))
		}
	}
	return errs
}

// linuxUserName is a user name useradd and cloud-init accept everywhere
// (no whitespace, control characters or passwd separators).
var linuxUserName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9._-]{0,30}[A-Za-z0-9._$-]?$`)
