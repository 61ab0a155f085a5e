package doctor

import (
	"fmt"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Check names of the VM checks.
const (
	CheckVMs        = "vms"
	CheckCreator    = "creator-label"
	CheckTopology   = "topology"
	CheckGuestAgent = "guest-agent"
)

// VMs: the cluster's VMs (by the driver's guest-cluster label) and their
// state.
func VMs(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckVMs, clusterstate.KindVM); bad {
		return row
	}
	vms := h.ClusterVMs()
	if len(vms) == 0 {
		return warn(CheckVMs, fmt.Sprintf("no VM in %q labelled %s", h.Namespace, h.ClusterSelector()),
			"check --cluster-name/--namespace; if the cluster was deleted, `harvester-bootstrap gc` lists what it left")
	}
	var states, bad, stopped []string
	for _, vm := range vms {
		st := string(vm.Status.PrintableStatus)
		if st == "" {
			st = "Unknown"
		}
		states = append(states, vm.Name+" "+st)
		switch vm.Status.PrintableStatus {
		case kubevirtv1.VirtualMachineStatusRunning:
		case kubevirtv1.VirtualMachineStatusStopped, kubevirtv1.VirtualMachineStatusStarting,
			kubevirtv1.VirtualMachineStatusProvisioning, kubevirtv1.VirtualMachineStatusStopping:
			stopped = append(stopped, vm.Name)
		default:
			bad = append(bad, vm.Name)
		}
	}
	seen := fmt.Sprintf("%d VMs: %s", len(vms), names(states))
	switch {
	case len(bad) > 0:
		return fail(CheckVMs, seen, "look at the events of "+names(bad)+" on Harvester (scheduling, volumes, image)")
	case len(stopped) > 0:
		return warn(CheckVMs, seen, names(stopped)+" not running yet or stopped: start them or wait")
	}
	return ok(CheckVMs, seen)
}

// CreatorLabel: without harvesterhci.io/creator on the VM and its template
// Harvester never copies the host topology and the cloud provider ignores
// the VMI.
func CreatorLabel(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckCreator, clusterstate.KindVM); bad {
		return row
	}
	want := harvester.LabelCreator + "=" + harvester.CreatorValue
	var missing []string
	vms := h.ClusterVMs()
	for _, vm := range vms {
		if vm.Labels[harvester.LabelCreator] != harvester.CreatorValue {
			missing = append(missing, vm.Name)
		}
		if t := vm.Spec.Template; t == nil || t.ObjectMeta.Labels[harvester.LabelCreator] != harvester.CreatorValue {
			missing = append(missing, vm.Name+" (template)")
		}
	}
	if len(vms) == 0 {
		return ok(CheckCreator, "no VM to check")
	}
	if len(missing) > 0 {
		return fail(CheckCreator, "missing "+want+" on "+names(missing),
			"add the label to the VM and spec.template.metadata.labels (VMs made by this project's driver carry it); restart the VM so its VMI gets it")
	}
	return ok(CheckCreator, fmt.Sprintf("%s on %d VMs and templates", want, len(vms)))
}

// clusterVMIs returns the VMIs of the cluster's VMs and the VMs without one.
func clusterVMIs(h *clusterstate.Harvester) ([]*kubevirtv1.VirtualMachineInstance, []string) {
	var vmis []*kubevirtv1.VirtualMachineInstance
	var none []string
	for _, vm := range h.ClusterVMs() {
		if vmi := h.VMI(vm.Name); vmi != nil {
			vmis = append(vmis, vmi)
		} else {
			none = append(none, vm.Name)
		}
	}
	return vmis, none
}

// vmiRow is the shared shape of the per-VMI checks: lack lists what each
// VMI is missing ("" when nothing).
func vmiRow(s *clusterstate.Snapshot, check, what, fix string, lack func(*kubevirtv1.VirtualMachineInstance) string) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, check, clusterstate.KindVMI); bad {
		return row
	}
	vmis, none := clusterVMIs(h)
	var missing []string
	for _, vmi := range vmis {
		if l := lack(vmi); l != "" {
			missing = append(missing, vmi.Name+" ("+l+")")
		}
	}
	switch {
	case len(missing) > 0:
		return fail(check, "missing on "+names(missing), fix)
	case len(vmis) == 0 && len(none) > 0:
		return warn(check, "no running VMI yet ("+names(none)+")", "start the VMs")
	case len(vmis) == 0:
		return warn(check, "no VMI of the cluster", "")
	}
	return ok(check, fmt.Sprintf("%s on %d VMIs", what, len(vmis)))
}

// Topology: Harvester's zone/region/hostname annotations on each VMI.
func Topology(s *clusterstate.Snapshot) Row {
	return vmiRow(s, CheckTopology, "zone, region and hostname annotations",
		"label the Harvester hosts with topology.kubernetes.io/zone and /region, and check the creator label (Harvester copies topology only for VMs with it)",
		func(vmi *kubevirtv1.VirtualMachineInstance) string {
			var lack []string
			for _, k := range []string{harvester.ZoneKey, harvester.RegionKey, harvester.HostnameKey} {
				if vmi.Annotations[k] == "" {
					lack = append(lack, k)
				}
			}
			return strings.Join(lack, ", ")
		})
}

// GuestAgent: on bridge networks only qemu-guest-agent reports the VM's
// address.
func GuestAgent(s *clusterstate.Snapshot) Row {
	return vmiRow(s, CheckGuestAgent, "guest-agent address",
		"install and enable qemu-guest-agent in the image or through cloud-init (the driver does unless --harvester-skip-qemu-guest-agent)",
		func(vmi *kubevirtv1.VirtualMachineInstance) string {
			for _, i := range vmi.Status.Interfaces {
				if i.IP != "" || len(i.IPs) > 0 {
					return ""
				}
			}
			return "no interface address"
		})
}
