// Package hv holds the Harvester v1.8.1 names and rules the simulator's
// own code needs beside Harvester's running processes (its hosts,
// fixtures, stand-ins and day-2 commands), each written from Harvester's
// source in the module cache
// (github.com/harvester/harvester@v1.8.1; Rancher's planner for the
// upgrade order) and naming the file it reads. Harvester's packages that
// hold them (pkg/util, pkg/settings, pkg/controller/...) are not imported:
// they pin their own k8s.io versions (REFERENCE.md, dependency facts).
// The product never imports this package: the simulator is nobody's
// oracle but Harvester's (docs/layout.md).
package hv

// Host maintenance, what `harvester-sim maintenance` waits for
// (pkg/controller/master/node/maintain_controller.go,
// pkg/util/drainhelper/helper.go).
const (
	AnnMaintainStatus = "harvesterhci.io/maintain-status" // MaintainStatusAnnotationKey
	MaintainCompleted = "completed"
	AnnDrainRequested = "harvesterhci.io/drain-requested" // drainhelper.DrainAnnotation
)

// TaintKubeVirtDrain is KubeVirt's drain taint, which Harvester's upgrade
// pre-drain and node-down controller put on a host
// (pkg/controller/master/upgrade/common.go, node_down_controller.go).
const TaintKubeVirtDrain = "kubevirt.io/drain"

// Settings and their defaults (pkg/settings/settings.go,
// pkg/settings/settings_helper.go).
const (
	SettingVMForceResetPolicy  = "vm-force-reset-policy"
	DefaultVMForceResetPolicy  = `{"enable":true,"period":15,"vmMigrationTimeout":180}` // InitVMForceResetPolicy
	SettingOvercommit          = "overcommit-config"
	DefaultOvercommit          = `{"cpu":1000,"memory":150,"storage":100}`
	SettingMemoryOverheadRatio = "additional-guest-memory-overhead-ratio"
	DefaultMemoryOverheadRatio = "1.5" // AdditionalGuestMemoryOverheadRatioDefault
)

// A volume's image and a host's role labels (pkg/util/constants.go).
const (
	// AnnotationImageID on a volume names the image it is made from
	// (AnnotationImageID).
	AnnotationImageID = "harvesterhci.io/imageId"
	// LabelWitnessHost marks a witness host (HarvesterWitnessNodeLabelKey).
	LabelWitnessHost = "node-role.harvesterhci.io/witness"
	// LabelWorkerHost marks a host installed with the worker role
	// (HarvesterWorkerNodeLabelKey): the promote controller never makes
	// it a management host.
	LabelWorkerHost = "node-role.harvesterhci.io/worker"
	// LabelManagedHost is on every host Harvester installed
	// (HarvesterManagedNodeLabelKey); the upgrade validator refuses an
	// upgrade while a host lacks it.
	LabelManagedHost = "harvesterhci.io/managed"
)

// LabelGuestCluster is the node driver's label on a guest cluster's VMs
// and volumes, by which the simulator plays the guest clusters
// (REFERENCE.md, "Harvester objects the driver touches"); Harvester
// v1.8.1's source does not hold it.
const LabelGuestCluster = "guestcluster.harvesterhci.io/name"

// Role labels of a host (RKE2's; Rancher's planner orders the upgrade by
// them, util.KubeControlPlaneNodeLabelKey and KubeEtcdNodeLabelKey).
const (
	LabelRoleControlPlane = "node-role.kubernetes.io/control-plane"
	LabelRoleEtcd         = "node-role.kubernetes.io/etcd"
)
