package harvester

import (
	"encoding/json"
	"fmt"
)

// What Harvester v1.8 does when a host stops reporting
// (pkg/controller/master/node/node_down_controller.go and
// pkg/settings/settings_helper.go): once the host's Node has been Ready
// Unknown for the setting's period it taints the Node kubevirt.io/drain,
// and vmMigrationTimeout seconds after that node.kubernetes.io/out-of-service,
// after which Kubernetes force-deletes the host's pods and the VMs restart
// elsewhere. The simulator plays it; the driver names it in its errors.
const (
	// SettingVMForceResetPolicy is the Harvester setting of the rule.
	SettingVMForceResetPolicy = "vm-force-reset-policy"
	// DefaultVMForceResetPolicy is the setting's default, as Harvester
	// encodes it.
	DefaultVMForceResetPolicy = `{"enable":true,"period":15,"vmMigrationTimeout":180}`
	// defaultVMMigrationTimeout replaces a vmMigrationTimeout of 0.
	defaultVMMigrationTimeout = 180

	// TaintKubevirtDrain (effect NoSchedule, no value) is KubeVirt's
	// node-drain taint, which Harvester adds first.
	TaintKubevirtDrain = "kubevirt.io/drain"
	// NodeConditionDrained is the Node condition Harvester keeps while it
	// handles a down host: False (ReasonDraining) once it added the drain
	// taint, True (ReasonDrained) once it added the out-of-service taint.
	NodeConditionDrained = "Drained"
	ReasonDraining       = "HarvesterNodeIsDraining"
	ReasonDrained        = "HarvesterNodeIsDrained"
	MessageDrained       = "Node is draining due to kubelet/node not ready."
)

// VMForceResetPolicy is the value of the setting vm-force-reset-policy.
type VMForceResetPolicy struct {
	Enable bool `json:"enable"`
	// Period is how many seconds a host may be Ready Unknown before it
	// gets the drain taint.
	Period int64 `json:"period"`
	// VMMigrationTimeout is how many seconds after the drain taint the
	// out-of-service taint follows.
	VMMigrationTimeout int64 `json:"vmMigrationTimeout,omitempty"`
}

// ParseVMForceResetPolicy reads the setting's effective value (its value,
// or its default when the value is empty) by Harvester's rules: period
// must be positive, vmMigrationTimeout not negative, and 0 means 180.
func ParseVMForceResetPolicy(value string) (VMForceResetPolicy, error) {
	var p VMForceResetPolicy
	if err := json.Unmarshal([]byte(value), &p); err != nil {
		return p, fmt.Errorf("setting %s: %q is not a policy such as %s: %w", SettingVMForceResetPolicy, value, DefaultVMForceResetPolicy, err)
	}
	if p.Period <= 0 {
		return p, fmt.Errorf("setting %s: period %d: must be greater than 0", SettingVMForceResetPolicy, p.Period)
	}
	if p.VMMigrationTimeout < 0 {
		return p, fmt.Errorf("setting %s: vmMigrationTimeout %d: must not be negative", SettingVMForceResetPolicy, p.VMMigrationTimeout)
	}
	if p.VMMigrationTimeout == 0 {
		p.VMMigrationTimeout = defaultVMMigrationTimeout
	}
	return p, nil
}

// SettingValue is what Harvester reads of a setting: its value, or its
// default when the value is empty.
func SettingValue(value, def string) string {
	if value == "" {
		return def
	}
	return value
}
