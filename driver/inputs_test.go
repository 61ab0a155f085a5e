package driver

import (
	"strconv"
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
)

// TestJSONFlagsRejectTrailingData: a JSON flag holds one object; anything
// after it is an error naming the flag (whitespace is fine).
func TestJSONFlagsRejectTrailingData(t *testing.T) {
	valid := map[string]string{
		config.FlagDiskInfo:    `{"disks":[{"imageName":"default/ubuntu-22.04","size":40,"bootOrder":1}]}`,
		config.FlagNetworkInfo: `{"interfaces":[{"networkName":"default/vlan1"}]}`,
		config.FlagVGPUInfo:    `{"vGPURequests":[{"name":"g","deviceName":"nvidia.com/A2-1Q"}]}`,
		config.FlagVMAffinity:  `{}`,
	}
	for flag, v := range valid {
		if err := validateErr(t, map[string]any{flag: v + "\n "}); err != nil {
			t.Errorf("--%s with trailing whitespace: %v", flag, err)
		}
		for _, tail := range []string{"xyz", " []", "{}"} {
			err := validateErr(t, map[string]any{flag: v + tail})
			if err == nil || !strings.Contains(err.Error(), "--"+flag+": invalid JSON: unexpected data after the JSON object (which ends at byte "+strconv.Itoa(len(v))+")") {
				t.Errorf("--%s %q: %v", flag, v+tail, err)
			}
		}
	}
}

// TestSSHUserIsAUserName: --harvester-ssh-user with a newline, a space, a
// colon or 33 characters is refused naming the flag; common users pass.
func TestSSHUserIsAUserName(t *testing.T) {
	for _, ok := range []string{"root", "ubuntu", "ec2-user", "_svc", "a.b", strings.Repeat("u", 32)} {
		if err := validateErr(t, map[string]any{config.FlagSSHUser: ok}); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"ubuntu\nroot", "ubuntu\n", "a b", "a:b", "-x", strings.Repeat("u", 33), "ünï"} {
		err := validateErr(t, map[string]any{config.FlagSSHUser: bad})
		if err == nil || !strings.Contains(err.Error(), "--"+config.FlagSSHUser+": "+strconv.Quote(bad)+" is not a Linux user name") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
