package config

import (
	"strings"

	"github.com/rancher/machine/libmachine/drivers"
)

// Read reads every flag into a Config (decoding base64 where the flag
// allows it) and the SSH user and port into base. Reading the cloud-config
// file and checking the SSH key files are the only I/O; a failure is
// returned as a problem of that flag.
func Read(opts drivers.DriverOptions, base *drivers.BaseDriver) (Config, []error) {
	var problems []error
	c := Config{
		KubeconfigContent: DecodePlainOrBase64(opts.String(FlagKubeconfigContent), IsKubeconfig),
		ClusterType:       opts.String(FlagClusterType),
		ClusterID:         opts.String(FlagClusterID),
		ClusterName:       opts.String(FlagClusterName),
		VMNamespace:       opts.String(FlagVMNamespace),

		CPUCount:          opts.Int(FlagCPUCount),
		CPUModel:          opts.String(FlagCPUModel),
		MemoryGiB:         opts.Int(FlagMemorySize),
		ReservedMemoryMiB: opts.Int(FlagReservedMemorySize),

		DiskSizeGiB: opts.Int(FlagDiskSize),
		DiskBus:     opts.String(FlagDiskBus),
		ImageName:   opts.String(FlagImageName),
		DiskInfo:    DecodePlainOrBase64(opts.String(FlagDiskInfo), IsJSONObject),

		KeyPairName:       opts.String(FlagKeyPairName),
		SSHPrivateKeyPath: opts.String(FlagSSHPrivateKeyPath),
		SSHPassword:       opts.String(FlagSSHPassword),

		NetworkType:  opts.String(FlagNetworkType),
		NetworkName:  opts.String(FlagNetworkName),
		NetworkModel: opts.String(FlagNetworkModel),
		NetworkInfo:  DecodePlainOrBase64(opts.String(FlagNetworkInfo), IsJSONObject),

		CloudConfigPath: opts.String(FlagCloudConfig),
		UserData:        DecodePlainOrBase64(opts.String(FlagUserData), IsUserData),
		NetworkData:     DecodePlainOrBase64(opts.String(FlagNetworkData), IsYAMLMapping),

		VMAffinity:            DecodePlainOrBase64(opts.String(FlagVMAffinity), IsJSONObject),
		EnableEFI:             opts.Bool(FlagEnableEFI),
		EnableSecureBoot:      opts.Bool(FlagEnableSecureBoot),
		EnableTPM:             opts.Bool(FlagEnableTPM),
		VGPUInfo:              DecodePlainOrBase64(opts.String(FlagVGPUInfo), IsJSONObject),
		CPUPinning:            opts.Bool(FlagCPUPinning),
		IsolateEmulatorThread: opts.Bool(FlagIsolateEmulatorThread),

		SkipQemuGuestAgent: opts.Bool(FlagSkipQemuGuestAgent),
		WaitTimeoutSeconds: opts.Int(FlagWaitTimeout),
		APITimeoutSeconds:  opts.Int(FlagAPITimeout),
		VMLabels:           opts.String(FlagVMLabels),

		CloudProvider:       strings.TrimSpace(opts.String(FlagCloudProvider)),
		CloudProviderServer: strings.TrimSpace(opts.String(FlagCloudProviderServer)),

		StaticAddressRange: strings.TrimSpace(opts.String(FlagStaticAddressRange)),
		StaticGateway:      strings.TrimSpace(opts.String(FlagStaticGateway)),
		StaticDNS:          opts.StringSlice(FlagStaticDNS),
		StaticInterface:    strings.TrimSpace(opts.String(FlagStaticInterface)),
	}
	if c.CloudConfigPath != "" {
		b, err := ReadUserFile("the cloud-config file", c.CloudConfigPath, MaxSecretBytes)
		if err != nil {
			problems = append(problems, FlagError(FlagCloudConfig, err))
		}
		c.CloudConfig = string(b)
	}
	problems = append(problems, checkSSHKeyFiles(c)...)
	base.SSHUser = opts.String(FlagSSHUser)
	base.SSHPort = opts.Int(FlagSSHPort)
	return c, problems
}
