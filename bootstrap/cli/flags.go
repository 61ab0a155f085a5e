package cli

import (
	"github.com/harvester-kit/harvester-machine/bootstrap/affinity"
	"github.com/harvester-kit/harvester-machine/bootstrap/drivercred"
	"github.com/harvester-kit/harvester-machine/bootstrap/guest"
	"github.com/harvester-kit/harvester-machine/bootstrap/loadbalancer"
	"github.com/harvester-kit/harvester-machine/bootstrap/nodedriver"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
)

// Flag names of harvester-bootstrap (only this package knows them).
const (
	FlagKubeconfig        = "kubeconfig"
	FlagOutput            = "output"
	FlagClusterName       = "cluster-name"
	FlagNamespace         = "namespace"
	FlagServiceAccount    = "service-account"
	FlagServer            = "server"
	FlagFormat            = "format"
	FlagTTL               = "ttl"
	FlagTimeout           = "timeout"
	FlagCloudConfig       = "cloud-config"
	FlagCSI               = "csi"
	FlagCCM               = "ccm"
	FlagImageRegistry     = "image-registry"
	FlagCCMVersion        = "ccm-version"
	FlagCSIVersion        = "csi-version"
	FlagHostStorageClass  = "host-storage-class"
	FlagNodeCloudInit     = "node-cloud-init"
	FlagGuestKubeconfig   = "guest-kubeconfig"
	FlagDryRun            = "dry-run"
	FlagNoPrune           = "no-prune"
	FlagZone              = "zone"
	FlagRegion            = "region"
	FlagPool              = "pool"
	FlagMachineName       = "machine-name"
	FlagRequired          = "required"
	FlagService           = "service"
	FlagAnnotation        = "annotation"
	FlagRange             = "range"
	FlagNetwork           = "network"
	FlagPoolName          = "name"
	FlagPriority          = "priority"
	FlagScopeProject      = "scope-project"
	FlagScopeNamespace    = "scope-namespace"
	FlagScopeGuestCluster = "scope-guest-cluster"
	FlagExisting          = "existing"
	FlagURL               = "url"
	FlagUIURL             = "ui-url"
	FlagDriverName        = "name"
	FlagWhitelistDomain   = "whitelist-domain"
	FlagUserData          = "user-data"
	FlagInstallScript     = "install-script"
	FlagSSHUser           = "ssh-user"
	FlagSSHPublicKey      = "ssh-public-key"
	FlagDistribution      = "distribution"
	FlagDelete            = "delete"
	// Load balancing: kube-vip and the cloud provider's network flags.
	FlagKubeVIP             = "kube-vip"
	FlagVIPInterface        = "vip-interface"
	FlagTrafficPolicyLocal  = "external-traffic-policy-local"
	FlagManagementNetwork   = "management-network"
	FlagNodeIPCIDR          = "node-ip-cidr"
	FlagNodeExcludeIPRanges = "node-exclude-ip-ranges"
	// The driver's credential.
	FlagMachineNamespace = "machine-namespace"
	// FlagCloudProviderRights grants the driver credential what the
	// driver's --harvester-cloud-provider needs.
	FlagCloudProviderRights = "cloud-provider"
	FlagDriverKubeconfig    = "driver-kubeconfig"
	// FlagStaticAddressRights grants the driver credential what the
	// driver's --harvester-static-address-range needs.
	FlagStaticAddressRights = "static-addresses"
	// FlagCSIClusterWide binds the guest's CSI role cluster-wide, as
	// Harvester's own kubeconfig endpoint does.
	FlagCSIClusterWide = "csi-cluster-wide"
	// FlagNoRWX leaves shared (RWX) volumes out of the namespace grant.
	FlagNoRWX = "no-rwx"
)

// noRWXUsage says what --no-rwx leaves out and why one would.
const noRWXUsage = "leave shared (ReadWriteMany) volumes out of the VM namespace's grant: no right on Harvester's networkfilesystems in harvester-system. " +
	"Harvester grants the CSI driver those rights on EVERY networkfilesystem, so with them any ServiceAccount of a granted namespace may disable, delete or create " +
	"another tenant's; without them the CSI driver v0.2.9 offers ReadWriteOnce volumes only. The grant is the namespace's: the last command that grants it decides"

// Values of doctor's and gc's --output.
const (
	OutputTable = "table"
	OutputJSON  = "json"
)

// EnvPrefix prefixes the environment variable of every flag:
// --cluster-name -> HARVESTER_BOOTSTRAP_CLUSTER_NAME.
const EnvPrefix = "HARVESTER_BOOTSTRAP_"

// fieldFlags names, for each input field of the pure packages, the flag
// that sets it; errors name fields, Run shows the user the flag.
var fieldFlags = map[string]string{
	credentials.FieldClusterName:      FlagClusterName,
	credentials.FieldNamespace:        FlagNamespace,
	credentials.FieldServiceAccount:   FlagServiceAccount,
	credentials.FieldServer:           FlagServer,
	credentials.FieldFormat:           FlagFormat,
	credentials.FieldCSIClusterWide:   FlagCSIClusterWide,
	guest.FieldKubeconfig:             FlagCloudConfig,
	addons.FieldCCM:                   FlagCCM,
	drivercred.FieldServiceAccount:    FlagServiceAccount,
	drivercred.FieldNamespace:         FlagNamespace,
	drivercred.FieldMachineNamespaces: FlagMachineNamespace,
	addons.FieldCSI:                   FlagCSI,
	addons.FieldImageRegistry:         FlagImageRegistry,
	addons.FieldCCMVersion:            FlagCCMVersion,
	addons.FieldCSIVersion:            FlagCSIVersion,
	loadbalancer.FieldRange:           FlagRange,
	loadbalancer.FieldPoolName:        FlagPoolName,
	loadbalancer.FieldNetwork:         FlagNetwork,
	loadbalancer.FieldScopeNamespace:  FlagScopeNamespace,
	loadbalancer.FieldScopeProject:    FlagScopeProject,
	loadbalancer.FieldScopeCluster:    FlagScopeGuestCluster,
	addons.FieldHostStorageClass:      FlagHostStorageClass,
	addons.FieldKubeVIP:               FlagKubeVIP,
	addons.FieldVIPInterface:          FlagVIPInterface,
	addons.FieldTrafficPolicy:         FlagTrafficPolicyLocal,
	addons.FieldManagementNetwork:     FlagManagementNetwork,
	addons.FieldNodeIPCIDR:            FlagNodeIPCIDR,
	addons.FieldNodeExcludeIPRanges:   FlagNodeExcludeIPRanges,
	cloudinit.FieldUserData:           FlagUserData,
	cloudinit.FieldCloudConfig:        FlagInstallScript,
	loadbalancer.FieldExisting:        FlagExisting,
	loadbalancer.FieldPriority:        FlagPriority,
	nodedriver.FieldName:              FlagDriverName,
	nodedriver.FieldURL:               FlagURL,
	nodedriver.FieldUIURL:             FlagUIURL,
	affinity.FieldZone:                FlagZone,
	affinity.FieldRegion:              FlagRegion,
	affinity.FieldPool:                FlagPool,
	affinity.FieldMachineName:         FlagMachineName,
	affinity.FieldRequired:            FlagRequired,
}

// flagOf is how the user typed the flag of a field ("--cluster-name");
// a field no flag sets keeps its name.
func flagOf(f string) string {
	if flag, ok := fieldFlags[f]; ok {
		return "--" + flag
	}
	return f
}
