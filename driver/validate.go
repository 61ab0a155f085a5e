package driver

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/driver/capacity"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/staticaddr"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

var (
	validDiskBuses     = []string{"virtio", "sata", "scsi"}
	validDiskTypes     = []string{config.DiskTypeDisk, config.DiskTypeCDRom}
	validNICModels     = []string{"virtio", "e1000", "e1000e", "ne2k_pci", "pcnet", "rtl8139"}
	validInterfaceType = []string{config.InterfaceTypeBridge, config.InterfaceTypeMasquerade}
)

// Validate checks a Config and returns every problem found, joined. Each
// message names the flag and says what would be valid. It does no I/O.
func Validate(c config.Config, machineName, sshUser string, sshPort int) error {
	_, err := validate(c, machineName, sshUser, sshPort)
	return err
}

// validate is Validate that also returns the parsed JSON flags, and the
// user data merged with the driver's parts when it is valid.
func validate(c config.Config, machineName, sshUser string, sshPort int) (vmspec.Inputs, error) {
	in, parseErrs := vmspec.ParseInputsByFlag(c)
	var (
		errs []error
		err  error
	)
	add := func(flag, format string, args ...any) {
		errs = append(errs, config.FlagProblem(flag, format, args...))
	}

	if machineName != "" {
		for _, m := range validation.IsDNS1123Label(machineName) {
			errs = append(errs, fmt.Errorf("machine name %q cannot be a VM name: %s", machineName, m))
		}
	}
	if strings.TrimSpace(c.KubeconfigContent) == "" {
		add(config.FlagKubeconfigContent, "is required (or %s): the kubeconfig of the Harvester cluster, plain or base64", config.EnvVar(config.FlagKubeconfigContent))
	} else if in.Harvester, err = parseKubeconfig(c.KubeconfigContent); err != nil {
		add(config.FlagKubeconfigContent, "%v", err)
	}
	if _, err := harvester.GuestClusterValue(c.ClusterName); err != nil {
		add(config.FlagClusterName, "%v", err)
	}
	for _, m := range validation.IsDNS1123Label(c.VMNamespace) {
		add(config.FlagVMNamespace, "%q is not a namespace name: %s", c.VMNamespace, m)
	}
	if c.CPUCount < 1 {
		add(config.FlagCPUCount, "must be at least 1, got %d", c.CPUCount)
	}
	if c.MemoryGiB < 1 {
		add(config.FlagMemorySize, "must be at least 1 (GiB), got %d", c.MemoryGiB)
	}
	if c.ReservedMemoryMiB < -1 {
		add(config.FlagReservedMemorySize, "must be -1 (unset) or a number of MiB >= 0, got %d", c.ReservedMemoryMiB)
	} else if c.MemoryGiB >= 1 && c.MemoryGiB <= capacity.MaxMemoryGiB && c.ReservedMemoryMiB >= c.MemoryGiB*1024 {
		add(config.FlagReservedMemorySize, "%d MiB must be less than --%s (%d GiB)", c.ReservedMemoryMiB, config.FlagMemorySize, c.MemoryGiB)
	}
	if c.DiskSizeGiB < 0 {
		add(config.FlagDiskSize, "must be 0 (image size) or a positive number of GiB, got %d", c.DiskSizeGiB)
	}
	if c.DiskBus != "" && !slices.Contains(validDiskBuses, c.DiskBus) {
		add(config.FlagDiskBus, "%q is not a disk bus; valid: %s", c.DiskBus, strings.Join(validDiskBuses, ", "))
	}
	if c.NetworkModel != "" && !slices.Contains(validNICModels, c.NetworkModel) {
		add(config.FlagNetworkModel, "%q is not a NIC model; valid: %s", c.NetworkModel, strings.Join(validNICModels, ", "))
	}
	if sshUser == "" {
		add(config.FlagSSHUser, "must not be empty")
	} else if !linuxUserName.MatchString(sshUser) {
		add(config.FlagSSHUser, "%q is not a Linux user name: a letter or '_', then letters, digits, '.', '_' or '-', at most 32 characters", sshUser)
	}
	if sshPort < 1 || sshPort > 65535 {
		add(config.FlagSSHPort, "must be a port between 1 and 65535, got %d", sshPort)
	}
	if c.WaitTimeoutSeconds < 1 {
		add(config.FlagWaitTimeout, "must be at least 1 (seconds), got %d", c.WaitTimeoutSeconds)
	}
	if c.APITimeoutSeconds < 1 {
		add(config.FlagAPITimeout, "must be at least 1 (seconds), got %d", c.APITimeoutSeconds)
	}

	errs = append(errs, capacity.ValidateSizes(c)...)
	errs = append(errs, validateDisks(c, in.Disks, parseErrs.Disks)...)
	errs = append(errs, validateNetworks(c, in.NICs, parseErrs.NICs)...)
	errs = append(errs, validateCloudProvider(c, in.Harvester)...)
	errs = append(errs, parseErrs.Static)
	errs = append(errs, staticaddr.ValidateStatic(c, in.Static, in.NICs)...)

	errs = append(errs, parseErrs.VGPUs)
	errs = append(errs, capacity.ValidateVGPUs(in.VGPUs)...)
	errs = append(errs, parseErrs.Affinity, parseErrs.Labels)
	if c.NetworkData != "" && c.StaticAddressRange == "" {
		if err := staticaddr.ValidateNetworkData(c.NetworkData); err != nil {
			add(config.FlagNetworkData, "%v", err)
		}
	}
	errs = append(errs, parseErrs.UserData, parseErrs.CloudConfig)
	if parseErrs.UserData == nil && parseErrs.CloudConfig == nil {
		in.Cloudinit, err = validateUserData(c, in, sshUser)
		errs = append(errs, err)
		errs = append(errs, validateGuestNames(c, in, machineName)...)
	}
	if c.EnableSecureBoot && !c.EnableEFI {
		add(config.FlagEnableSecureBoot, "needs --%s", config.FlagEnableEFI)
	}
	if c.IsolateEmulatorThread && !c.CPUPinning {
		add(config.FlagIsolateEmulatorThread, "needs --%s (KubeVirt isolates the emulator thread only with dedicated CPUs)", config.FlagCPUPinning)
	}
	if c.KeyPairName != "" {
		if _, _, err := harvester.SplitNamespacedName(c.KeyPairName, c.VMNamespace); err != nil {
			add(config.FlagKeyPairName, "%v", err)
		}
		if c.SSHPrivateKeyPath == "" {
			add(config.FlagKeyPairName, "needs --%s: the private key of key pair %q", config.FlagSSHPrivateKeyPath, c.KeyPairName)
		}
	}
	return in, errors.Join(errs...)
}

// validateDisks checks the disks; parseErr is --harvester-disk-info's.
func validateDisks(c config.Config, disks []config.Disk, parseErr error) []error {
	var errs []error
	if c.DiskInfo == "" {
		if c.ImageName == "" {
			return []error{config.FlagProblem(config.FlagImageName, "no disk: set --%s (or --%s)", config.FlagImageName, config.FlagDiskInfo)}
		}
		if _, _, err := harvester.SplitNamespacedName(c.ImageName, c.VMNamespace); err != nil {
			errs = append(errs, config.FlagError(config.FlagImageName, err))
		}
		return errs
	}
	if parseErr != nil {
		return []error{parseErr}
	}
	if len(disks) == 0 {
		return []error{config.FlagProblem(config.FlagDiskInfo, `"disks" is empty; give at least one disk`)}
	}
	boot := map[int]int{}
	for i, d := range disks {
		at := func(format string, args ...any) {
			errs = append(errs, config.FlagProblem(config.FlagDiskInfo, "disks[%d]: "+format, append([]any{i}, args...)...))
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
		} else if d.Size > capacity.MaxDiskGiB {
			at("size %d GiB is too large; the largest valid value is %d", d.Size, capacity.MaxDiskGiB)
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
func validateNetworks(c config.Config, nics []config.NetworkInterface, parseErr error) []error {
	var errs []error
	if c.NetworkInfo == "" {
		if c.NetworkName == "" {
			return []error{config.FlagProblem(config.FlagNetworkName, "no network: set --%s (<namespace>/<name>) or --%s", config.FlagNetworkName, config.FlagNetworkInfo)}
		}
		if _, _, err := harvester.SplitNamespacedName(c.NetworkName, c.VMNamespace); err != nil {
			errs = append(errs, config.FlagError(config.FlagNetworkName, err))
		}
		return errs
	}
	if parseErr != nil {
		return []error{parseErr}
	}
	if len(nics) == 0 {
		return []error{config.FlagProblem(config.FlagNetworkInfo, `"interfaces" is empty; give at least one interface`)}
	}
	for i, n := range nics {
		at := func(format string, args ...any) {
			errs = append(errs, config.FlagProblem(config.FlagNetworkInfo, "interfaces[%d]: "+format, append([]any{i}, args...)...))
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

// strictJSON decodes the one JSON value s holds into v: unknown fields and
// anything after the value (`{...}xyz`, `{} []`) are errors.
// linuxUserName is a user name useradd and cloud-init accept everywhere
// (no whitespace, control characters or passwd separators).
var linuxUserName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9._-]{0,30}[A-Za-z0-9._$-]?$`)

// joinProblems joins non-nil errors under a heading, or returns nil.
func joinProblems(heading string, problems []error) error {
	var errs []error
	for _, p := range problems {
		if p == nil {
			continue
		}
		if j, ok := p.(interface{ Unwrap() []error }); ok {
			errs = append(errs, j.Unwrap()...)
			continue
		}
		errs = append(errs, p)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s (%d problems):\n%w", heading, len(errs), errors.Join(errs...))
}
