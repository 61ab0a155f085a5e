package harvester

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// What Harvester v1.8's VM mutating webhook
// (pkg/webhook/resources/virtualmachine) does to a VM's resources when it
// is created: requests derived from the limits and the overcommit-config
// setting, the guest memory less the memory reserved for QEMU, and one
// CPU socket at most. The UI sends only limits; this is what every VM on
// Harvester ends up with.
const (
	// SettingOvercommit is the setting the mutator reads.
	SettingOvercommit = "overcommit-config"
	// DefaultOvercommit is its default value.
	DefaultOvercommit = `{"cpu":1000,"memory":150,"storage":100}`

	defaultReservedMemory = 100 * mi // for QEMU, when nothing else says
	minGuestMemory        = 10 * mi
)

// Overcommit is the overcommit-config setting: the percentage of each
// resource's limit that may be promised beyond what is requested.
type Overcommit struct {
	CPU     int64 `json:"cpu"`
	Memory  int64 `json:"memory"`
	Storage int64 `json:"storage"`
}

// ParseOvercommit reads the setting's value (the default when "").
func ParseOvercommit(value string) (Overcommit, error) {
	if value == "" {
		value = DefaultOvercommit
	}
	var o Overcommit
	if err := json.Unmarshal([]byte(value), &o); err != nil {
		return o, fmt.Errorf("setting %s: %w", SettingOvercommit, err)
	}
	if o.CPU <= 0 || o.Memory <= 0 {
		return o, fmt.Errorf("setting %s: cpu and memory must be positive percentages, got %s", SettingOvercommit, value)
	}
	return o, nil
}

// MutatorSettings is what the mutator reads besides the VM.
type MutatorSettings struct {
	// Overcommit nil: the setting is absent and the mutator leaves the
	// resources as they are.
	Overcommit *Overcommit
	// OverheadRatio is additional-guest-memory-overhead-ratio's current
	// value: a valid ratio means no memory is reserved by default.
	OverheadRatio string
	// ARM: the VM or KubeVirt's default architecture is arm64 (no
	// maxSockets there).
	ARM bool
}

// MutateVMResources applies the mutator's resource rule to vm in place.
// Its errors are the webhook's refusals, worded as Harvester words them.
func MutateVMResources(vm *kubevirtv1.VirtualMachine, s MutatorSettings) error {
	if vm.Spec.Template == nil || s.Overcommit == nil {
		return nil
	}
	d := &vm.Spec.Template.Spec.Domain
	dedicated := d.CPU != nil && d.CPU.DedicatedCPUPlacement
	if d.Resources.Requests == nil {
		d.Resources.Requests = corev1.ResourceList{}
	}
	if cpu := d.Resources.Limits.Cpu(); !cpu.IsZero() {
		req := cpu.MilliValue()
		if !dedicated {
			req = req * 100 / s.Overcommit.CPU
		}
		d.Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(req, cpu.Format)
	}
	mem := d.Resources.Limits.Memory()
	if mem.IsZero() {
		return nil
	}
	hotplug := strings.EqualFold(vm.Annotations[AnnotationCPUMemoryHotplug], "true")
	guest, err := guestMemory(vm, *mem, s.OverheadRatio, hotplug)
	if err != nil {
		return err
	}
	req := *resource.NewQuantity(mem.Value()*100/s.Overcommit.Memory/mi*mi, mem.Format)
	switch {
	case dedicated:
		req = mem.DeepCopy()
	case len(d.Devices.GPUs) > 0 || len(d.Devices.HostDevices) > 0:
		// GPUs and host devices pin all guest memory: no overcommit.
		req = guest.DeepCopy()
	}
	d.Resources.Requests[corev1.ResourceMemory] = req
	switch {
	case d.Memory == nil:
		d.Memory = &kubevirtv1.Memory{Guest: &guest}
	case !hotplug:
		d.Memory.Guest = &guest
	}
	if !hotplug && !s.ARM {
		if d.CPU == nil {
			d.CPU = &kubevirtv1.CPU{}
		}
		d.CPU.MaxSockets = 1
	}
	return nil
}

// guestMemory is the limit (with CPU and memory hot-plug, the guest memory
// the VM asks for) less the reserved memory: the VM's reservedMemory
// annotation, else none when the overhead ratio is set, else 100Mi.
func guestMemory(vm *kubevirtv1.VirtualMachine, limit resource.Quantity, ratio string, hotplug bool) (resource.Quantity, error) {
	guest := limit.DeepCopy()
	if m := vm.Spec.Template.Spec.Domain.Memory; hotplug && m != nil && m.Guest != nil {
		guest = m.Guest.DeepCopy()
	}
	reserved := *resource.NewQuantity(defaultReservedMemory, resource.BinarySI)
	if a := vm.Annotations[AnnotationReservedMemory]; a != "" {
		q, err := resource.ParseQuantity(a)
		if err != nil {
			return guest, fmt.Errorf("annotation %v can't be converted to memory unit", a)
		}
		if q.Value() >= limit.Value() {
			return guest, fmt.Errorf("reservedMemory can't be equal or greater than limits.memory  %v %v", q.Value(), limit.Value())
		}
		reserved = q
	} else if overheadRatioSet(ratio) {
		reserved = resource.Quantity{}
	}
	guest.Sub(reserved)
	if guest.Value() < minGuestMemory {
		return guest, fmt.Errorf("guest memory is under the minimum requirement (10 Mi), original: %v, final: %v", limit.Value(), guest.Value())
	}
	return guest, nil
}

// LauncherResources is what the virt-launcher pod of a VMI with this spec
// asks of the namespace's quotas (its compute container, as KubeVirt
// renders it): the VMI's CPU, or whole vCPUs when dedicated (one more for
// an isolated emulator thread, and the memory limit equal to the request),
// and its memory plus the overhead.
func LauncherResources(spec *kubevirtv1.VirtualMachineInstanceSpec, arch, ratio string) (requests, limits corev1.ResourceList) {
	r := spec.Domain.Resources
	requests, limits = corev1.ResourceList{}, corev1.ResourceList{}
	if c, ok := r.Requests[corev1.ResourceCPU]; ok {
		requests[corev1.ResourceCPU] = c
	}
	if c, ok := r.Limits[corev1.ResourceCPU]; ok {
		limits[corev1.ResourceCPU] = c
	}
	overhead := LauncherMemoryOverhead(spec, arch, ratio)
	req := r.Requests.Memory().DeepCopy()
	req.Add(overhead)
	requests[corev1.ResourceMemory] = req
	if l, ok := r.Limits[corev1.ResourceMemory]; ok {
		l = l.DeepCopy()
		l.Add(overhead)
		limits[corev1.ResourceMemory] = l
	}
	if cpu := spec.Domain.CPU; cpu != nil && cpu.DedicatedCPUPlacement {
		n := vcpusOf(spec)
		if cpu.IsolateEmulatorThread {
			n++
		}
		requests[corev1.ResourceCPU] = *resource.NewQuantity(n, resource.DecimalSI)
		limits[corev1.ResourceCPU] = *resource.NewQuantity(n, resource.DecimalSI)
		limits[corev1.ResourceMemory] = req // KubeVirt aligns the memory limit with the request
	}
	return requests, limits
}
