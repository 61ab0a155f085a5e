package hv

import (
	"encoding/json"
	"fmt"
)

// VMForceResetPolicy is the value of the setting vm-force-reset-policy
// (pkg/settings/settings_helper.go, VMForceResetPolicy): what the
// node-down controller does with a host that stopped reporting.
type VMForceResetPolicy struct {
	Enable bool `json:"enable"`
	// Period: seconds a host may be not Ready before it is tainted
	// kubevirt.io/drain.
	Period int64 `json:"period"`
	// VMMigrationTimeout: seconds after that before it is tainted
	// out-of-service.
	VMMigrationTimeout int64 `json:"vmMigrationTimeout,omitempty"`
}

// DecodeVMForceResetPolicy is settings.DecodeVMForceResetPolicy, with its
// messages: period must be positive, vmMigrationTimeout not negative, and
// a vmMigrationTimeout of 0 means 180 seconds.
func DecodeVMForceResetPolicy(value string) (VMForceResetPolicy, error) {
	var p VMForceResetPolicy
	if err := json.Unmarshal([]byte(value), &p); err != nil {
		return p, fmt.Errorf("unmarshal failed, error: %w, value: %s", err, value)
	}
	if p.Period <= 0 {
		return p, fmt.Errorf("period value should be greater than 0, value: %d", p.Period)
	}
	if p.VMMigrationTimeout < 0 {
		return p, fmt.Errorf("vmMigrationTimeout value should be greater than 0, value: %d", p.VMMigrationTimeout)
	}
	if p.VMMigrationTimeout == 0 {
		p.VMMigrationTimeout = 180
	}
	return p, nil
}

// SettingValue is what Harvester's controllers read of a setting: its
// value, or its default when the value is empty (for example
// settings.go's Setting.Get, pkg/controller/master/node/node_down_controller.go).
func SettingValue(value, def string) string {
	if value == "" {
		return def
	}
	return value
}
