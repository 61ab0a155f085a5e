package config

import (
	"github.com/rancher/machine/libmachine/drivers"
	"github.com/rancher/machine/libmachine/mcnflag"
)

// Flag names. The first block is the flag set of the upstream driver v1.0.6
// and must stay unchanged: Rancher stores machine configs under these names.
const (
	FlagKubeconfigContent     = "harvester-kubeconfig-content"
	FlagClusterType           = "harvester-cluster-type"
	FlagClusterID             = "harvester-cluster-id"
	FlagClusterName           = "harvester-cluster-name"
	FlagVMNamespace           = "harvester-vm-namespace"
	FlagCPUCount              = "harvester-cpu-count"
	FlagMemorySize            = "harvester-memory-size"
	FlagDiskSize              = "harvester-disk-size"
	FlagDiskBus               = "harvester-disk-bus"
	FlagImageName             = "harvester-image-name"
	FlagDiskInfo              = "harvester-disk-info"
	FlagSSHUser               = "harvester-ssh-user"
	FlagSSHPort               = "harvester-ssh-port"
	FlagSSHPassword           = "harvester-ssh-password"
	FlagKeyPairName           = "harvester-key-pair-name"
	FlagSSHPrivateKeyPath     = "harvester-ssh-private-key-path"
	FlagNetworkType           = "harvester-network-type"
	FlagNetworkName           = "harvester-network-name"
	FlagNetworkModel          = "harvester-network-model"
	FlagNetworkInfo           = "harvester-network-info"
	FlagCloudConfig           = "harvester-cloud-config"
	FlagUserData              = "harvester-user-data"
	FlagNetworkData           = "harvester-network-data"
	FlagVMAffinity            = "harvester-vm-affinity"
	FlagEnableEFI             = "harvester-enable-efi"
	FlagEnableSecureBoot      = "harvester-enable-secure-boot"
	FlagVGPUInfo              = "harvester-vgpu-info"
	FlagCPUPinning            = "harvester-cpu-pinning"
	FlagIsolateEmulatorThread = "harvester-isolate-emulator-thread"
	FlagEnableTPM             = "harvester-enable-tpm"
	FlagReservedMemorySize    = "harvester-reserved-memory-size"
	FlagCPUModel              = "harvester-cpu-model"

	// New flags of this driver.
	FlagSkipQemuGuestAgent = "harvester-skip-qemu-guest-agent"
	FlagWaitTimeout        = "harvester-wait-timeout"
	FlagAPITimeout         = "harvester-api-timeout"
	FlagVMLabels           = "harvester-vm-labels"

	// The cloud provider dropped into the nodes. None of these names may
	// contain user-data, userdata, custom-data or cloud-config: the first
	// flag that does carries rancher-machine's install script.
	FlagCloudProvider       = "harvester-cloud-provider"
	FlagCloudProviderServer = "harvester-cloud-provider-server"

	// Per-machine static addresses (see staticnet.go).
	FlagStaticAddressRange = "harvester-static-address-range"
	FlagStaticGateway      = "harvester-static-gateway"
	FlagStaticDNS          = "harvester-static-dns"
	FlagStaticInterface    = "harvester-static-interface"
)

// Defaults.
const (
	DefaultNamespace          = "default"
	DefaultCPUCount           = 2
	DefaultMemoryGiB          = 4
	DefaultReservedMemoryMiB  = -1 // unset
	DefaultDiskBus            = "virtio"
	DefaultNetworkModel       = "virtio"
	DefaultWaitTimeoutSeconds = 600
	DefaultAPITimeoutSeconds  = 30
)

// EnvVar is the environment variable of a flag: HARVESTER_<SNAKE_CASE>.
func EnvVar(flag string) string {
	b := []byte(flag)
	for i, c := range b {
		switch {
		case c == '-':
			b[i] = '_'
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func str(name, usage, value string) mcnflag.Flag {
	return mcnflag.StringFlag{Name: name, EnvVar: EnvVar(name), Usage: usage, Value: value}
}

func num(name, usage string, value int) mcnflag.Flag {
	return mcnflag.IntFlag{Name: name, EnvVar: EnvVar(name), Usage: usage, Value: value}
}

func strList(name, usage string) mcnflag.Flag {
	return mcnflag.StringSliceFlag{Name: name, EnvVar: EnvVar(name), Usage: usage}
}

func boolean(name, usage string) mcnflag.Flag {
	return mcnflag.BoolFlag{Name: name, EnvVar: EnvVar(name), Usage: usage}
}

// CreateFlags is the flag list in its fixed order: harvester-cloud-config is
// the first flag whose name contains user-data, userdata, custom-data or
// cloud-config, because rancher-machine passes its install script through
// the first such flag.
func CreateFlags() []mcnflag.Flag {
	return []mcnflag.Flag{
		str(FlagKubeconfigContent, "contents of the kubeconfig of the Harvester cluster (plain or base64)", ""),
		str(FlagClusterType, "type of the Harvester cluster (informational)", ""),
		str(FlagClusterID, "ID of the Harvester cluster (informational)", ""),
		str(FlagClusterName, "name of the guest cluster this machine belongs to (labels the VM and its volumes)", ""),
		str(FlagVMNamespace, "Harvester namespace of the VM", DefaultNamespace),
		num(FlagCPUCount, "number of CPUs of the VM", DefaultCPUCount),
		num(FlagMemorySize, "memory of the VM in GiB", DefaultMemoryGiB),
		num(FlagDiskSize, "size of the root disk in GiB (0: the image's virtual size, 40 if unknown)", 0),
		str(FlagDiskBus, "bus of the root disk: virtio, sata or scsi", ""),
		str(FlagImageName, "image of the root disk: <namespace>/<name> or <name> in the VM namespace", ""),
		str(FlagDiskInfo, `disks as JSON (plain or base64): {"disks":[{"imageName","storageClassName","size","bootOrder","bus","type","hotPlugAble"}]}`, ""),
		str(FlagSSHUser, "SSH user of the guest", drivers.DefaultSSHUser),
		num(FlagSSHPort, "SSH port of the guest", drivers.DefaultSSHPort),
		str(FlagSSHPassword, "password of the SSH user (stored only in the cloud-init Secret)", ""),
		str(FlagKeyPairName, "Harvester KeyPair whose public key is authorized: <namespace>/<name> or <name>", ""),
		str(FlagSSHPrivateKeyPath, "private key matching the key pair (required with --harvester-key-pair-name)", ""),
		str(FlagNetworkType, "network type (informational; interfaces use bridge binding)", ""),
		str(FlagNetworkName, "network of the VM: <namespace>/<name> of a NetworkAttachmentDefinition", ""),
		str(FlagNetworkModel, "model of the network interface: virtio, e1000, e1000e, ne2k_pci, pcnet, rtl8139", ""),
		str(FlagNetworkInfo, `interfaces as JSON (plain or base64): {"interfaces":[{"networkName","macAddress","model","type"}]}`, ""),
		str(FlagCloudConfig, "path of a cloud-config file (rancher-machine fills it with the install script)", ""),
		str(FlagUserData, "cloud-init user data (plain or base64): #cloud-config YAML or a #! script", ""),
		str(FlagNetworkData, "cloud-init network data, version 1 or 2 (plain or base64)", ""),
		str(FlagVMAffinity, "core/v1 Affinity of the VM as JSON (plain or base64)", ""),
		boolean(FlagEnableEFI, "boot the VM with EFI firmware"),
		boolean(FlagEnableSecureBoot, "enable secure boot (needs --harvester-enable-efi)"),
		str(FlagVGPUInfo, `vGPUs as JSON (plain or base64): {"vGPURequests":[{"name","deviceName"}]}`, ""),
		boolean(FlagCPUPinning, "dedicated CPU placement (needs the CPU manager on a Harvester host)"),
		boolean(FlagIsolateEmulatorThread, "isolate the emulator thread on its own CPU (needs --harvester-cpu-pinning)"),
		boolean(FlagEnableTPM, "add a TPM device"),
		num(FlagReservedMemorySize, "memory reserved for the VM's overhead in MiB (-1: Harvester's default)", DefaultReservedMemoryMiB),
		str(FlagCPUModel, "CPU model of the VM (for example host-passthrough)", ""),

		boolean(FlagSkipQemuGuestAgent, "do not install and enable qemu-guest-agent through cloud-init (the image must run it: it reports the VM's IP)"),
		num(FlagWaitTimeout, "seconds to wait for the VM to be running with an address, and for stop/remove to finish", DefaultWaitTimeoutSeconds),
		num(FlagAPITimeout, "seconds allowed for each single Harvester API call", DefaultAPITimeoutSeconds),
		str(FlagVMLabels, "labels of the VM and its VMI template: key=value,... (keys under harvesterhci.io/, kubevirt.io/ and the driver's own are refused)", ""),
		str(FlagCloudProvider, "put the Harvester cloud provider's credential and config into the node for this distribution: rke2, k3s or rke1 (empty: off; needs --harvester-cluster-name)", ""),
		str(FlagCloudProviderServer, "Harvester API URL the guest nodes reach, e.g. https://<VIP>:6443 (default: the server of the driver's kubeconfig; required when that is a Rancher proxy URL)", ""),
		str(FlagStaticAddressRange, "give each machine of the pool its own address from FIRST-LAST/PREFIX (e.g. 10.0.0.10-10.0.0.59/24), the lowest free one, on its first NIC (or --harvester-static-interface)", ""),
		str(FlagStaticGateway, "default gateway of the static addresses (in the range's subnet, outside the range)", ""),
		strList(FlagStaticDNS, "name servers of the static addresses (repeat the flag or separate with commas)"),
		str(FlagStaticInterface, "NIC that gets the static address: nic-<i>, the i-th interface (default nic-0)", ""),
	}
}

// DriverName is the name rancher-machine knows the driver by.
const DriverName = "harvester"

// BinaryName is the plugin binary's name: rancher-machine looks for
// docker-machine-driver-<DriverName> on PATH.
const BinaryName = "docker-machine-driver-" + DriverName
