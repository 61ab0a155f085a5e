package capacity

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// vgpuHolders selects the VMIs that may hold vGPUs: the driver's machines
// with vGPUs (harvester.LabelVGPUs not "0") and every VMI the driver did
// not label (made by hand, by other tools, or by older driver versions).
// The driver's machines without vGPUs, however many, are not read.
var vgpuHolders = harvester.LabelVGPUs + " notin (0)"

// checkVGPUs reads the hosts and the VM instances that may hold vGPUs and
// checks that some host offers every vGPU profile the machine asks for.
func checkVGPUs(ctx context.Context, api *harvesterapi.API, m *machine.Machine, vgpus []config.VGPURequest) []error {
	nodes, err := api.ListNodes(ctx)
	if apierrors.IsForbidden(err) {
		log.Warnf("cannot list the hosts (forbidden); skipping the vGPU capacity check")
		return nil
	} else if err != nil {
		return []error{err}
	}
	vmis, err := api.ListVMIs(ctx, m.Config.VMNamespace, vgpuHolders)
	if err != nil {
		return []error{err}
	}
	if msg := vgpuShortfall(vgpus, nodes.Items, vmis); msg != "" {
		return []error{config.FlagProblem(config.FlagVGPUInfo, "%s", msg)}
	}
	return nil
}

// vgpuShortfall says why no host can take the machine's vGPUs ("" when
// one can). A VM's vGPUs are all on its one host, so one host must have
// room for every profile: its allocatable count of the profile (the
// device plugin's resource, the deviceName) less what VM instances
// placed on it already hold. Only the VM namespace's instances are seen
// (the driver's credential reads no other namespace); the scheduler
// remains the last word.
func vgpuShortfall(vgpus []config.VGPURequest, nodes []corev1.Node, vmis []kubevirtv1.VirtualMachineInstance) string {
	want := map[string]int64{}
	for _, g := range vgpus {
		want[g.DeviceName]++
	}
	held := map[string]map[string]int64{} // node -> profile -> count
	for _, vmi := range vmis {
		if vmi.Status.NodeName == "" || vmi.DeletionTimestamp != nil {
			continue
		}
		for _, g := range vmi.Spec.Domain.Devices.GPUs {
			if held[vmi.Status.NodeName] == nil {
				held[vmi.Status.NodeName] = map[string]int64{}
			}
			held[vmi.Status.NodeName][g.DeviceName]++
		}
	}
	profiles := make([]string, 0, len(want))
	for p := range want {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	var seen []string
	offered := map[string]bool{}
	for _, n := range nodes {
		fits := true
		var free []string
		for _, p := range profiles {
			alloc := n.Status.Allocatable[corev1.ResourceName(p)]
			f := alloc.Value() - held[n.Name][p]
			offered[p] = offered[p] || alloc.Value() > 0
			fits = fits && f >= want[p]
			free = append(free, fmt.Sprintf("%d of %d %s", max(f, 0), alloc.Value(), p))
		}
		if fits {
			return ""
		}
		seen = append(seen, n.Name+": "+strings.Join(free, ", "))
	}
	var missing []string
	for _, p := range profiles {
		if !offered[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("no host offers the vGPU profile %s (no node lists it as allocatable; enable the vGPU devices in Harvester, or give a profile a host has)",
			strings.Join(missing, ", "))
	}
	return fmt.Sprintf("no host has room for the machine's vGPUs (%s); free per host: %s",
		describeWant(want, profiles), strings.Join(seen, "; "))
}

func describeWant(want map[string]int64, profiles []string) string {
	parts := make([]string, len(profiles))
	for i, p := range profiles {
		parts[i] = fmt.Sprintf("%d %s", want[p], p)
	}
	return strings.Join(parts, ", ")
}
