package driver

import (
	"strings"

	"github.com/rancher/machine/libmachine/drivers"

	"github.com/harvester-kit/harvester-machine/driver/capacity"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
)

// readConfig reads every flag into a Config (decoding base64 where the flag
// allows it) and the SSH user and port into base. Reading the cloud-config
// file and checking the SSH key files are the only I/O; a failure is
// returned as a problem of that flag.
func readConfig(opts drivers.DriverOptions, base *drivers.BaseDriver) (config.Config, []error) {
	var problems []error
	c := config.Config{
		KubeconfigContent: config.DecodePlainOrBase64(opts.String(config.FlagKubeconfigContent), config.IsKubeconfig),
		ClusterType:       opts.String(config.FlagClusterType),
		ClusterID:         opts.String(config.FlagClusterID),
		ClusterName:       opts.String(config.FlagClusterName),
		VMNamespace:       opts.String(config.FlagVMNamespace),

		CPUCount:          opts.Int(config.FlagCPUCount),
		CPUModel:          opts.String(config.FlagCPUModel),
		MemoryGiB:         opts.Int(config.FlagMemorySize),
		ReservedMemoryMiB: opts.Int(config.FlagReservedMemorySize),

		DiskSizeGiB: opts.Int(config.FlagDiskSize),
		DiskBus:     opts.String(config.FlagDiskBus),
		ImageName:   opts.String(config.FlagImageName),
		DiskInfo:    config.DecodePlainOrBase64(opts.String(config.FlagDiskInfo), config.IsJSONObject),

		KeyPairName:       opts.String(config.FlagKeyPairName),
		SSHPrivateKeyPath: opts.String(config.FlagSSHPrivateKeyPath),
		SSHPassword:       opts.String(config.FlagSSHPassword),

		NetworkType:  opts.String(config.FlagNetworkType),
		NetworkName:  opts.String(config.FlagNetworkName),
		NetworkModel: opts.String(config.FlagNetworkModel),
		NetworkInfo:  config.DecodePlainOrBase64(opts.String(config.FlagNetworkInfo), config.IsJSONObject),

		CloudConfigPath: opts.String(config.FlagCloudConfig),
		UserData:        config.DecodePlainOrBase64(opts.String(config.FlagUserData), config.IsUserData),
		NetworkData:     config.DecodePlainOrBase64(opts.String(config.FlagNetworkData), config.IsYAMLMapping),

		VMAffinity:            config.DecodePlainOrBase64(opts.String(config.FlagVMAffinity), config.IsJSONObject),
		EnableEFI:             opts.Bool(config.FlagEnableEFI),
		EnableSecureBoot:      opts.Bool(config.FlagEnableSecureBoot),
		EnableTPM:             opts.Bool(config.FlagEnableTPM),
		VGPUInfo:              config.DecodePlainOrBase64(opts.String(config.FlagVGPUInfo), config.IsJSONObject),
		CPUPinning:            opts.Bool(config.FlagCPUPinning),
		IsolateEmulatorThread: opts.Bool(config.FlagIsolateEmulatorThread),

		SkipQemuGuestAgent: opts.Bool(config.FlagSkipQemuGuestAgent),
		WaitTimeoutSeconds: opts.Int(config.FlagWaitTimeout),
		APITimeoutSeconds:  opts.Int(config.FlagAPITimeout),
		VMLabels:           opts.String(config.FlagVMLabels),

		CloudProvider:       strings.TrimSpace(opts.String(config.FlagCloudProvider)),
		CloudProviderServer: strings.TrimSpace(opts.String(config.FlagCloudProviderServer)),

		StaticAddressRange: strings.TrimSpace(opts.String(config.FlagStaticAddressRange)),
		StaticGateway:      strings.TrimSpace(opts.String(config.FlagStaticGateway)),
		StaticDNS:          opts.StringSlice(config.FlagStaticDNS),
		StaticInterface:    strings.TrimSpace(opts.String(config.FlagStaticInterface)),
	}
	if c.CloudConfigPath != "" {
		b, err := config.ReadUserFile("the cloud-config file", c.CloudConfigPath, capacity.MaxSecretBytes)
		if err != nil {
			problems = append(problems, config.FlagError(config.FlagCloudConfig, err))
		}
		c.CloudConfig = string(b)
	}
	problems = append(problems, checkSSHKeyFiles(c)...)
	base.SSHUser = opts.String(config.FlagSSHUser)
	base.SSHPort = opts.Int(config.FlagSSHPort)
	return c, problems
}

// SetConfigFromFlags reads and validates the flags; every problem is
// reported at once.
func (d *Driver) SetConfigFromFlags(opts drivers.DriverOptions) error {
	c, problems := readConfig(opts, d.BaseDriver)
	d.Config = c
	// On create the flags are the credential to use and to store.
	d.api, d.clusterConfirmed, d.sessionKubeconfig, d.storeOnConfirm = nil, false, "", ""
	if d.MachineID == "" {
		id, err := machine.NewMachineID()
		if err != nil {
			return err
		}
		d.MachineID = id
	}
	d.SetSwarmConfigFromFlags(opts)
	in, err := validate(c, d.MachineName, d.SSHUser, d.SSHPort)
	d.parsed = &in
	problems = append(problems, err)
	return joinProblems("invalid machine configuration", problems)
}

// inputs returns the machine's parsed JSON flags: those SetConfigFromFlags
// parsed, or, for a machine loaded from its stored config, parsed once on
// first use.
func (d *Driver) inputs() (vmspec.Inputs, error) {
	if d.parsed == nil {
		in, err := vmspec.ParseInputs(d.Config)
		if err != nil {
			return vmspec.Inputs{}, err
		}
		d.parsed = &in
	}
	return *d.parsed, nil
}
