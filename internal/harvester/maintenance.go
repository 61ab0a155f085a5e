package harvester

// Harvester v1.8's names for host maintenance (pkg/controller/master/node,
// pkg/util/drainhelper, pkg/util/constants.go, pkg/api/node).
const (
	// AnnMaintainStatus is on a host in maintenance mode: running once its
	// drain is done, MaintainCompleted once no VMI is left on it.
	AnnMaintainStatus = "harvesterhci.io/maintain-status"
	MaintainCompleted = "completed"
	// LabelMaintainModeStrategy on a VM(I) asks maintenance to shut it
	// down instead of migrating it (values below); the VM is then
	// annotated AnnMaintainModeStrategyNodeName with the host.
	LabelMaintainModeStrategy       = "harvesterhci.io/maintain-mode-strategy"
	AnnMaintainModeStrategyNodeName = "harvesterhci.io/maintain-mode-strategy-node-name"
	// AnnRunStrategy is the run strategy Harvester's VM mutator saved.
	AnnRunStrategy = "harvesterhci.io/vmRunStrategy"
	// AnnMachine names a host's CAPI Machine (clusterv1.MachineAnnotation;
	// Harvester's upgrade validator refuses an upgrade while a host lacks
	// it, pkg/webhook/resources/upgrade/validator.go).
	AnnMachine = "cluster.x-k8s.io/machine"
	// TaintKubeVirtDrain on a host makes KubeVirt evacuate it.
	TaintKubeVirtDrain = "kubevirt.io/drain"
)

// Values of LabelMaintainModeStrategy.
const (
	MaintainModeMigrate                        = "Migrate"
	MaintainModeShutdownAndRestartAfterEnable  = "ShutdownAndRestartAfterEnable"
	MaintainModeShutdownAndRestartAfterDisable = "ShutdownAndRestartAfterDisable"
	MaintainModeShutdown                       = "Shutdown"
)

// MaintainModeShutdownValues are the strategies that shut the VM down.
var MaintainModeShutdownValues = []string{MaintainModeShutdownAndRestartAfterEnable, MaintainModeShutdownAndRestartAfterDisable, MaintainModeShutdown}
