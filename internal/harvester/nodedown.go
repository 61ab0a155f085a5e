package harvester

// What Harvester v1.8 does when a host stops reporting
// (pkg/controller/master/node/node_down_controller.go and
// pkg/settings/settings_helper.go): once the host's Node has been Ready
// Unknown for the setting's period it taints the Node kubevirt.io/drain,
// and vmMigrationTimeout seconds after that node.kubernetes.io/out-of-service,
// after which Kubernetes force-deletes the host's pods and the VMs restart
// elsewhere. The driver names it in its errors.
const (
	// SettingVMForceResetPolicy is the Harvester setting of the rule.
	SettingVMForceResetPolicy = "vm-force-reset-policy"
	// DefaultVMForceResetPolicy is the setting's default, as Harvester
	// encodes it.
	DefaultVMForceResetPolicy = `{"enable":true,"period":15,"vmMigrationTimeout":180}`

	// TaintKubevirtDrain (effect NoSchedule, no value) is KubeVirt's
	// node-drain taint, which Harvester adds first.
	TaintKubevirtDrain = "kubevirt.io/drain"
	// NodeConditionDrained is the Node condition Harvester keeps while it
	// handles a down host: False once it added the drain taint, True once
	// it added the out-of-service taint.
	NodeConditionDrained = "Drained"
)
