package hv

import (
	"testing"
)

// TestDecodeVMForceResetPolicy: expected values and messages from
// Harvester v1.8.0's settings.DecodeVMForceResetPolicy
// (pkg/settings/settings_helper.go).
func TestDecodeVMForceResetPolicy(t *testing.T) {
	cases := []struct {
		value   string
		want    VMForceResetPolicy
		wantErr string
	}{
		{DefaultVMForceResetPolicy, VMForceResetPolicy{Enable: true, Period: 15, VMMigrationTimeout: 180}, ""},
		{`{"enable":true,"period":5}`, VMForceResetPolicy{Enable: true, Period: 5, VMMigrationTimeout: 180}, ""},
		{`{"enable":false,"period":0}`, VMForceResetPolicy{}, "period value should be greater than 0, value: 0"},
		{`{"enable":true,"period":1,"vmMigrationTimeout":-1}`, VMForceResetPolicy{}, "vmMigrationTimeout value should be greater than 0, value: -1"},
		{`{`, VMForceResetPolicy{}, "unmarshal failed, error: unexpected end of JSON input, value: {"},
	}
	for _, c := range cases {
		got, err := DecodeVMForceResetPolicy(c.value)
		switch {
		case c.wantErr != "":
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("%s: error %v, want %q", c.value, err, c.wantErr)
			}
		case err != nil || got != c.want:
			t.Errorf("%s: %+v, %v; want %+v", c.value, got, err, c.want)
		}
	}
}
