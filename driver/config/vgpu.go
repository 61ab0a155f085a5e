package config

import (
	"strings"
)

// ValidateVGPUs checks the vGPU requests as the VM they become needs
// them. KubeVirt (v1.7) admits any GPU name, but virt-launcher names each
// GPU's libvirt device alias after it ("ua-gpu-<name>"), and libvirt
// refuses an alias that is not unique in the domain or has characters
// other than letters, digits, '_' and '-': such a VM is created and never
// starts. So names must be unique and of those characters.
func ValidateVGPUs(vgpus []VGPURequest) []error {
	var errs []error
	seen := map[string]int{}
	for i, r := range vgpus {
		at := func(format string, args ...any) {
			errs = append(errs, FlagProblem(FlagVGPUInfo, "vGPURequests[%d]: "+format, append([]any{i}, args...)...))
		}
		if r.Name == "" || r.DeviceName == "" {
			at("needs both name and deviceName")
		}
		if r.Name == "" {
			continue
		}
		if strings.Trim(r.Name, vgpuNameChars) != "" {
			at("name %q may only have letters, digits, '_' and '-' (it names the GPU's device in the VM)", r.Name)
		}
		if j, dup := seen[r.Name]; dup {
			at("name %q is already the name of vGPURequests[%d]; give each vGPU its own name", r.Name, j)
			continue
		}
		seen[r.Name] = i
	}
	return errs
}

// vgpuNameChars are the characters of a vGPU name (see validateVGPUs).
const vgpuNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
