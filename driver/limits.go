package driver

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
)

// Largest sizes whose quantities (bytes) still fit in an int64, the range
// of a Kubernetes resource.Quantity's value; anything larger would turn
// into a bogus quantity instead of an error.
const (
	MaxMemoryGiB         = math.MaxInt64 >> 30 // 8589934591 GiB
	MaxDiskGiB           = math.MaxInt64 >> 30 // 8589934591 GiB
	MaxReservedMemoryMiB = math.MaxInt64 >> 20
	// MaxCPUCount is the most cores KubeVirt's CPU spec can hold (uint32).
	MaxCPUCount = math.MaxUint32
	// MaxTimeoutSeconds is the longest timeout a time.Duration can hold.
	MaxTimeoutSeconds = math.MaxInt64 / int64(time.Second)
)

// MaxSecretBytes is the most data a Kubernetes Secret may hold: the sum of
// its values' lengths (the API server's validation, 1 MiB).
const MaxSecretBytes = 1 << 20

// secretReserveBytes is room kept in the cloud-init Secret, at validation
// time, for what is only known at create: the SSH public key (a key pair's
// or a generated one) and the cloud provider's kubeconfig and config files.
const secretReserveBytes = 32 << 10

// validateSizes checks that the memory, disk and reserved memory sizes can
// become quantities, and counts and timeouts fit their types.
func validateSizes(c Config) []error {
	var errs []error
	if c.MemoryGiB > MaxMemoryGiB {
		errs = append(errs, flagProblem(FlagMemorySize, "%d GiB is too large; the largest valid value is %d", c.MemoryGiB, MaxMemoryGiB))
	}
	if c.DiskSizeGiB > MaxDiskGiB {
		errs = append(errs, flagProblem(FlagDiskSize, "%d GiB is too large; the largest valid value is %d", c.DiskSizeGiB, MaxDiskGiB))
	}
	if c.ReservedMemoryMiB > MaxReservedMemoryMiB {
		errs = append(errs, flagProblem(FlagReservedMemorySize, "%d MiB is too large; the largest valid value is %d", c.ReservedMemoryMiB, MaxReservedMemoryMiB))
	}
	if int64(c.CPUCount) > MaxCPUCount {
		errs = append(errs, flagProblem(FlagCPUCount, "%d is too large; the largest valid value is %d", c.CPUCount, int64(MaxCPUCount)))
	}
	for _, t := range []struct {
		flag    string
		seconds int
	}{{FlagWaitTimeout, c.WaitTimeoutSeconds}, {FlagAPITimeout, c.APITimeoutSeconds}} {
		if int64(t.seconds) > MaxTimeoutSeconds {
			errs = append(errs, flagProblem(t.flag, "%d seconds is too long; the largest valid value is %d", t.seconds, MaxTimeoutSeconds))
		}
	}
	return errs
}

// secretPart is one flag's contribution to the cloud-init Secret.
type secretPart struct {
	flag  string
	bytes int
}

// validateUserData merges the parsed user data and cloud-config file with
// what the driver adds (login, an SSH key standing for the machine's,
// password, qemu-guest-agent), as Create will, and checks that they merge
// and that the cloud-init Secret stays within MaxSecretBytes with
// secretReserveBytes to spare (merging overhead counted).
func validateUserData(c Config, in Inputs, sshUser string) error {
	login := sshUser
	if login == "" {
		login = "root" // --harvester-ssh-user reports the empty user
	}
	userData, err := mergeUserData(cloudinit.Input{User: login, SSHAuthorizedKeys: []string{validationKey}, Password: c.SSHPassword,
		InstallQemuGuestAgent: !c.SkipQemuGuestAgent}, in.UserData, in.CloudConfig)
	if err != nil {
		flag := FlagUserData
		if c.UserData == "" {
			flag = FlagCloudConfig
		}
		return flagError(flag, err)
	}
	return checkSecretSize(len(userData)+secretReserveBytes, len(c.NetworkData), secretParts(c))
}

// mergeUserData merges the driver's cloud-init parts with the user's
// parsed ones: once when the flags are validated, once in Create (with the
// machine's SSH key and cloud-provider files). A variable, so tests count
// the merges.
var mergeUserData = cloudinit.Merge

// secretParts are the flags that fill the cloud-init Secret.
func secretParts(c Config) []secretPart {
	return []secretPart{
		{FlagUserData, len(c.UserData)},
		{FlagCloudConfig, len(c.CloudConfig)},
		{FlagNetworkData, len(c.NetworkData)},
		{FlagSSHPassword, len(c.SSHPassword)},
	}
}

// checkSecretSize reports a cloud-init Secret of userData and networkData
// bytes that Kubernetes would refuse, naming the flags that fill it
// (parts, largest first in the message).
func checkSecretSize(userData, networkData int, parts []secretPart) error {
	total := userData + networkData
	if total <= MaxSecretBytes {
		return nil
	}
	var named []string
	largest := secretPart{}
	for _, p := range parts {
		if p.bytes == 0 {
			continue
		}
		named = append(named, fmt.Sprintf("--%s %d bytes", p.flag, p.bytes))
		if p.bytes > largest.bytes {
			largest = p
		}
	}
	if largest.flag == "" {
		largest.flag = FlagUserData
	}
	return flagProblem(largest.flag, "the machine's cloud-init Secret would hold about %d bytes (%s), more than Kubernetes allows in a Secret (%d bytes, 1 MiB); make the user data smaller",
		total, strings.Join(named, ", "), MaxSecretBytes)
}
