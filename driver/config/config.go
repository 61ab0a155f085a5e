// Package config is the driver's flags and every check of them: their
// names, defaults and environment variables, the Config read from them,
// the JSON flags' types and their one parse (Inputs), the parsed
// static-address flags, their bounds, Validate (each problem naming its
// flag), the kubeconfig's one parse, the user data's merge, and the errors
// that name a flag. It makes no API call; the checks that need the
// cluster are precheck's and capacity's.
package config

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

// Defaults is the Config of the flag defaults.
func Defaults() Config {
	return Config{
		VMNamespace: DefaultNamespace, CPUCount: DefaultCPUCount, MemoryGiB: DefaultMemoryGiB,
		ReservedMemoryMiB:  DefaultReservedMemoryMiB,
		WaitTimeoutSeconds: DefaultWaitTimeoutSeconds, APITimeoutSeconds: DefaultAPITimeoutSeconds,
	}
}
