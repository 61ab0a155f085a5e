package config

import (
	"fmt"
	"math"
	"strings"
	"time"
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

// SecretReserveBytes is room kept in the cloud-init Secret, at validation
// time, for what is only known at create: the SSH public key (a key pair's
// or a generated one) and the cloud provider's kubeconfig and config files.
const SecretReserveBytes = 32 << 10

// ValidateSizes checks that the memory, disk and reserved memory sizes can
// become quantities, and counts and timeouts fit their types.
func ValidateSizes(c Config) []error {
	var errs []error
	if c.MemoryGiB > MaxMemoryGiB {
		errs = append(errs, FlagProblem(FlagMemorySize, "%d GiB is too large; the largest valid value is %d", c.MemoryGiB, MaxMemoryGiB))
	}
	if c.DiskSizeGiB > MaxDiskGiB {
		errs = append(errs, FlagProblem(FlagDiskSize, "%d GiB is too large; the largest valid value is %d", c.DiskSizeGiB, MaxDiskGiB))
	}
	if c.ReservedMemoryMiB > MaxReservedMemoryMiB {
		errs = append(errs, FlagProblem(FlagReservedMemorySize, "%d MiB is too large; the largest valid value is %d", c.ReservedMemoryMiB, MaxReservedMemoryMiB))
	}
	if int64(c.CPUCount) > MaxCPUCount {
		errs = append(errs, FlagProblem(FlagCPUCount, "%d is too large; the largest valid value is %d", c.CPUCount, int64(MaxCPUCount)))
	}
	for _, t := range []struct {
		flag    string
		seconds int
	}{{FlagWaitTimeout, c.WaitTimeoutSeconds}, {FlagAPITimeout, c.APITimeoutSeconds}} {
		if int64(t.seconds) > MaxTimeoutSeconds {
			errs = append(errs, FlagProblem(t.flag, "%d seconds is too long; the largest valid value is %d", t.seconds, MaxTimeoutSeconds))
		}
	}
	return errs
}

// secretPart is one flag's contribution to the cloud-init Secret.
type secretPart struct {
	flag  string
	bytes int
}

// SecretParts are the flags that fill the cloud-init Secret.
func SecretParts(c Config) []secretPart {
	return []secretPart{
		{FlagUserData, len(c.UserData)},
		{FlagCloudConfig, len(c.CloudConfig)},
		{FlagNetworkData, len(c.NetworkData)},
		{FlagSSHPassword, len(c.SSHPassword)},
	}
}

// CheckSecretSize reports a cloud-init Secret of userData and networkData
// bytes that Kubernetes would refuse, naming the flags that fill it
// (parts, largest first in the message).
func CheckSecretSize(userData, networkData int, parts []secretPart) error {
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
	return FlagProblem(largest.flag, "the machine's cloud-init Secret would hold about %d bytes (%s), more than Kubernetes allows in a Secret (%d bytes, 1 MiB); make the user data smaller",
		total, strings.Join(named, ", "), MaxSecretBytes)
}
