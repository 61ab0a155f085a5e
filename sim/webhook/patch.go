package webhook

import (
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// op is one JSON Patch operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

const domainPath = "/spec/template/spec/domain"

// set replaces a member the VM has, adds one it has not.
func set(present bool, path string, value any) op {
	if present {
		return op{Op: "replace", Path: path, Value: value}
	}
	return op{Op: "add", Path: path, Value: value}
}

// resourcePatch is the JSON Patch from vm to mutated on the paths
// Harvester's mutator patches: the requests, the guest memory and the CPU
// (maxSockets and the default topology). Members vm lacks are added whole.
func resourcePatch(vm, mutated *kubevirtv1.VirtualMachine) []op {
	d, m := &vm.Spec.Template.Spec.Domain, &mutated.Spec.Template.Spec.Domain
	var ops []op
	switch {
	case len(d.Resources.Requests) == 0 && len(m.Resources.Requests) > 0:
		ops = append(ops, op{Op: "add", Path: domainPath + "/resources/requests", Value: m.Resources.Requests})
	default:
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			was, had := d.Resources.Requests[name]
			now, has := m.Resources.Requests[name]
			if has && (!had || was.Cmp(now) != 0) {
				ops = append(ops, set(had, domainPath+"/resources/requests/"+string(name), now))
			}
		}
	}
	switch {
	case d.Memory == nil && m.Memory != nil:
		ops = append(ops, op{Op: "add", Path: domainPath + "/memory", Value: m.Memory})
	case m.Memory != nil && m.Memory.Guest != nil && (d.Memory.Guest == nil || d.Memory.Guest.Cmp(*m.Memory.Guest) != 0):
		ops = append(ops, set(d.Memory.Guest != nil, domainPath+"/memory/guest", *m.Memory.Guest))
	}
	switch {
	case d.CPU == nil && m.CPU != nil:
		ops = append(ops, op{Op: "add", Path: domainPath + "/cpu", Value: m.CPU})
	case m.CPU != nil:
		for _, f := range []struct {
			name     string
			was, now uint32
		}{
			{"cores", d.CPU.Cores, m.CPU.Cores}, {"sockets", d.CPU.Sockets, m.CPU.Sockets},
			{"threads", d.CPU.Threads, m.CPU.Threads}, {"maxSockets", d.CPU.MaxSockets, m.CPU.MaxSockets},
		} {
			if f.was != f.now {
				ops = append(ops, set(f.was != 0, domainPath+"/cpu/"+f.name, f.now))
			}
		}
	}
	return ops
}
