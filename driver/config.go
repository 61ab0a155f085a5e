package driver

import (
	"strings"

	"github.com/rancher/machine/libmachine/drivers"
)

// Config is the machine configuration read from the flags. Fields without a
// JSON name are persisted by rancher-machine in the machine's config.json
// (mode 0600); secrets needed only while creating are not persisted.
type Config struct {
	KubeconfigContent string
	ClusterType       string
	ClusterID         string
	ClusterName       string
	VMNamespace       string

	CPUCount          int
	CPUModel          string
	MemoryGiB         int
	ReservedMemoryMiB int

	DiskSizeGiB int
	DiskBus     string
	ImageName   string
	DiskInfo    string

	KeyPairName       string
	SSHPrivateKeyPath string
	SSHPassword       string `json:"-"`

	NetworkType  string
	NetworkName  string
	NetworkModel string
	NetworkInfo  string

	CloudConfigPath string
	CloudConfig     string `json:"-"`
	UserData        string `json:"-"`
	NetworkData     string `json:"-"`

	VMAffinity            string
	EnableEFI             bool
	EnableSecureBoot      bool
	EnableTPM             bool
	VGPUInfo              string
	CPUPinning            bool
	IsolateEmulatorThread bool

	SkipQemuGuestAgent bool
	WaitTimeoutSeconds int
	APITimeoutSeconds  int
	VMLabels           string

	CloudProvider       string
	CloudProviderServer string

	StaticAddressRange string
	StaticGateway      string
	StaticDNS          []string
	StaticInterface    string
}

// readConfig reads every flag into a Config (decoding base64 where the flag
// allows it) and the SSH user and port into base. Reading the cloud-config
// file and checking the SSH key files are the only I/O; a failure is
// returned as a problem of that flag.
func readConfig(opts drivers.DriverOptions, base *drivers.BaseDriver) (Config, []error) {
	var problems []error
	c := Config{
		KubeconfigContent: decodePlainOrBase64(opts.String(FlagKubeconfigContent), isKubeconfig),
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
		DiskInfo:    decodePlainOrBase64(opts.String(FlagDiskInfo), isJSONObject),

		KeyPairName:       opts.String(FlagKeyPairName),
		SSHPrivateKeyPath: opts.String(FlagSSHPrivateKeyPath),
		SSHPassword:       opts.String(FlagSSHPassword),

		NetworkType:  opts.String(FlagNetworkType),
		NetworkName:  opts.String(FlagNetworkName),
		NetworkModel: opts.String(FlagNetworkModel),
		NetworkInfo:  decodePlainOrBase64(opts.String(FlagNetworkInfo), isJSONObject),

		CloudConfigPath: opts.String(FlagCloudConfig),
		UserData:        decodePlainOrBase64(opts.String(FlagUserData), isUserData),
		NetworkData:     decodePlainOrBase64(opts.String(FlagNetworkData), isYAMLMapping),

		VMAffinity:            decodePlainOrBase64(opts.String(FlagVMAffinity), isJSONObject),
		EnableEFI:             opts.Bool(FlagEnableEFI),
		EnableSecureBoot:      opts.Bool(FlagEnableSecureBoot),
		EnableTPM:             opts.Bool(FlagEnableTPM),
		VGPUInfo:              decodePlainOrBase64(opts.String(FlagVGPUInfo), isJSONObject),
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
		b, err := readUserFile("the cloud-config file", c.CloudConfigPath, MaxSecretBytes)
		if err != nil {
			problems = append(problems, flagError(FlagCloudConfig, err))
		}
		c.CloudConfig = string(b)
	}
	problems = append(problems, checkSSHKeyFiles(c)...)
	base.SSHUser = opts.String(FlagSSHUser)
	base.SSHPort = opts.Int(FlagSSHPort)
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
		id, err := newMachineID()
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
