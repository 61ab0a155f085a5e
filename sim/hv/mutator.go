package hv

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Overcommit is settings.Overcommit (pkg/settings/settings_helper.go):
// the percentages of overcommit-config.
type Overcommit struct {
	CPU     int64 `json:"cpu"`
	Memory  int64 `json:"memory"`
	Storage int64 `json:"storage"`
}

// DecodeOvercommit is the VM mutator's getOvercommit on a setting's
// effective value (pkg/webhook/resources/virtualmachine/mutator.go): nil
// for an empty value, no resource mutation then.
func DecodeOvercommit(value string) (*Overcommit, error) {
	if value == "" {
		return nil, nil
	}
	o := &Overcommit{}
	if err := json.Unmarshal([]byte(value), o); err != nil {
		return o, err
	}
	return o, nil
}

// MutatorInput is what the VM mutator reads besides the VM: the
// overcommit (nil: no resource mutation), the effective value of
// additional-guest-memory-overhead-ratio, and whether the VM or KubeVirt's
// default architecture is arm64 (isARMArchitecture).
type MutatorInput struct {
	Overcommit    *Overcommit
	OverheadRatio string
	ARM           bool
}

const (
	memory10M  = 10 * 1024 * 1024
	memory100M = 100 * 1024 * 1024
	mib        = 1024 * 1024
)

// MutateResources is the VM mutator's patchResourceOvercommit with
// generateMemoryPatch (pkg/webhook/resources/virtualmachine/mutator.go),
// applied to vm in place instead of as patch operations. Its errors are
// the mutator's, worded as Harvester words them.
func MutateResources(vm *kubevirtv1.VirtualMachine, in MutatorInput) error {
	if in.Overcommit == nil {
		return nil
	}
	d := &vm.Spec.Template.Spec.Domain
	if d.Resources.Requests == nil {
		d.Resources.Requests = corev1.ResourceList{}
	}
	if cpu := d.Resources.Limits.Cpu(); !cpu.IsZero() {
		req := cpu.MilliValue()
		if !dedicatedCPU(vm) {
			req = req * 100 / in.Overcommit.CPU
		}
		d.Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(req, cpu.Format)
	}
	if mem := d.Resources.Limits.Memory(); !mem.IsZero() {
		return mutateMemory(vm, mem, in)
	}
	return nil
}

// mutateMemory is generateMemoryPatch.
func mutateMemory(vm *kubevirtv1.VirtualMachine, mem *resource.Quantity, in MutatorInput) error {
	d := &vm.Spec.Template.Spec.Domain
	request := *resource.NewQuantity(mem.Value()*100/in.Overcommit.Memory/mib*mib, mem.Format)
	hotplug := strings.ToLower(vm.Annotations[AnnotationCPUMemoryHotplug]) == "true" // virtualmachine.SupportCPUAndMemoryHotplug
	reserved := *resource.NewQuantity(memory100M, resource.BinarySI)
	useReserved := true
	if a := vm.Annotations[AnnotationReservedMemory]; a != "" {
		q, err := resource.ParseQuantity(a)
		if err != nil {
			return fmt.Errorf("annotation %v can't be converted to memory unit", a)
		}
		if q.Value() >= mem.Value() {
			return fmt.Errorf("reservedMemory can't be equal or greater than limits.memory  %v %v", q.Value(), mem.Value())
		}
		reserved = q
	} else if ratioSet(in.OverheadRatio) {
		useReserved = false
	}
	guest := mem.DeepCopy()
	if hotplug && d.Memory != nil && d.Memory.Guest != nil {
		guest = d.Memory.Guest.DeepCopy()
	}
	if useReserved {
		guest.Sub(reserved)
	}
	if guest.Value() < memory10M {
		return fmt.Errorf("guest memory is under the minimum requirement (10 Mi), original: %v, final: %v", mem.Value(), guest.Value())
	}
	switch {
	case dedicatedCPU(vm):
		request = mem.DeepCopy()
	case len(d.Devices.HostDevices) > 0 || len(d.Devices.GPUs) > 0: // hostDevicesPresent
		request = guest.DeepCopy()
	}
	d.Resources.Requests[corev1.ResourceMemory] = request
	switch {
	case d.Memory == nil:
		d.Memory = &kubevirtv1.Memory{Guest: &guest}
	case !hotplug:
		d.Memory.Guest = &guest
	}
	if !hotplug && !in.ARM {
		if d.CPU == nil {
			d.CPU = &kubevirtv1.CPU{}
		}
		d.CPU.MaxSockets = 1
	}
	return nil
}

// ratioSet is NewAdditionalGuestMemoryOverheadRatioConfig followed by
// !IsEmpty (pkg/settings/settings_helper.go): a value that parses within
// the setting's bounds [1.0, 10.0], and is not 0. A value that does not is
// an error there, and the mutator falls back to the reserved memory.
func ratioSet(value string) bool {
	r, err := strconv.ParseFloat(value, 64)
	return err == nil && r >= 1.0 && r <= 10.0
}

// dedicatedCPU is isDedicatedCPU.
func dedicatedCPU(vm *kubevirtv1.VirtualMachine) bool {
	c := vm.Spec.Template.Spec.Domain.CPU
	return c != nil && c.DedicatedCPUPlacement
}

// DefaultCPU is patchDefaultCPU: one core, socket and thread where the
// VM gives none, on every create and update.
func DefaultCPU(vm *kubevirtv1.VirtualMachine) {
	d := &vm.Spec.Template.Spec.Domain
	if d.CPU == nil {
		d.CPU = &kubevirtv1.CPU{}
	}
	for _, n := range []*uint32{&d.CPU.Cores, &d.CPU.Sockets, &d.CPU.Threads} {
		if *n == 0 {
			*n = 1
		}
	}
}

// ResourcesChanged is needUpdateResourceOvercommit with
// hostDevicesOvercommitNeeded: on an update the resource rule applies
// again when a CPU or memory limit is set anew or changed, the reserved
// memory annotation changed, dedicated CPU placement was switched, host
// devices or GPUs were added or removed, or with devices the guest memory
// is not the memory request.
func ResourcesChanged(old, vm *kubevirtv1.VirtualMachine) bool {
	o, n := &old.Spec.Template.Spec.Domain, &vm.Spec.Template.Spec.Domain
	if nc, oc := n.Resources.Limits.Cpu(), o.Resources.Limits.Cpu(); !nc.IsZero() && (oc.IsZero() || !nc.Equal(*oc)) {
		return true
	}
	if nm, om := n.Resources.Limits.Memory(), o.Resources.Limits.Memory(); !nm.IsZero() && (om.IsZero() || !nm.Equal(*om)) {
		return true
	}
	if vm.Annotations[AnnotationReservedMemory] != old.Annotations[AnnotationReservedMemory] || dedicatedCPU(old) != dedicatedCPU(vm) {
		return true
	}
	if len(n.Devices.HostDevices) != len(o.Devices.HostDevices) || len(n.Devices.GPUs) != len(o.Devices.GPUs) {
		return true
	}
	if (len(n.Devices.HostDevices) > 0 || len(n.Devices.GPUs) > 0) && n.Memory != nil && n.Memory.Guest != nil {
		return n.Memory.Guest.Value() != n.Resources.Requests.Memory().Value()
	}
	return false
}
