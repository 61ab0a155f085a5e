package harvester

import (
	"strings"
	"testing"
)

// TestParseVMForceResetPolicy: Harvester v1.8's DecodeVMForceResetPolicy
// rules, worked out from settings_helper.go: period > 0, vmMigrationTimeout
// >= 0 with 0 (or absent: omitempty) meaning 180.
func TestParseVMForceResetPolicy(t *testing.T) {
	good := []struct {
		in   string
		want VMForceResetPolicy
	}{
		// Harvester's InitVMForceResetPolicy: Enable true, Period 15, VMMigrationTimeout 180.
		{`{"enable":true,"period":15,"vmMigrationTimeout":180}`, VMForceResetPolicy{Enable: true, Period: 15, VMMigrationTimeout: 180}},
		{`{"enable":true,"period":2}`, VMForceResetPolicy{Enable: true, Period: 2, VMMigrationTimeout: 180}},
		{`{"enable":false,"period":1,"vmMigrationTimeout":0}`, VMForceResetPolicy{Period: 1, VMMigrationTimeout: 180}},
		{`{"enable":true,"period":1,"vmMigrationTimeout":3}`, VMForceResetPolicy{Enable: true, Period: 1, VMMigrationTimeout: 3}},
	}
	for _, c := range good {
		got, err := ParseVMForceResetPolicy(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := map[string]string{
		`{"enable":true,"period":0}`:                         "period 0",
		`{"enable":true,"period":-1}`:                        "period -1",
		`{"enable":true,"period":5,"vmMigrationTimeout":-2}`: "vmMigrationTimeout -2",
		`not json`: "is not a policy",
		``:         "is not a policy",
	}
	for in, want := range bad {
		_, err := ParseVMForceResetPolicy(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "vm-force-reset-policy") {
			t.Errorf("%q: error %v, want one naming vm-force-reset-policy and %q", in, err, want)
		}
	}
	if def, err := ParseVMForceResetPolicy(DefaultVMForceResetPolicy); err != nil || def != (VMForceResetPolicy{Enable: true, Period: 15, VMMigrationTimeout: 180}) {
		t.Errorf("default: %+v, %v", def, err)
	}
	if SettingValue("", "d") != "d" || SettingValue("v", "d") != "v" {
		t.Error("SettingValue: the value wins, the default fills an empty value")
	}
}
