package driver

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Inputs are the machine's JSON flags (--harvester-disk-info,
// --harvester-network-info, --harvester-vgpu-info, --harvester-vm-affinity)
// as typed values, with the single-disk and single-network flags folded in
// when the JSON ones are not given. ParseInputs is the only place that
// parses them; everything else (validation, planning, pre-create checks)
// reads these values.
type Inputs struct {
	// Disks are the VM's disks: --harvester-disk-info's, or the one image
	// disk of --harvester-image-name, --harvester-disk-size and
	// --harvester-disk-bus.
	Disks []Disk
	// NICs are the VM's interfaces: --harvester-network-info's, or the one
	// of --harvester-network-name and --harvester-network-model.
	NICs []NetworkInterface
	// VGPUs are --harvester-vgpu-info's requests.
	VGPUs []VGPURequest
	// Affinity is --harvester-vm-affinity (nil when not given).
	Affinity *corev1.Affinity
}

// inputErrors are ParseInputs' problems, one per JSON flag (nil: parsed).
type inputErrors struct {
	disks, nics, vgpus, affinity error
}

func (e inputErrors) join() error { return errors.Join(e.disks, e.nics, e.vgpus, e.affinity) }

// ParseInputs parses the JSON flags of c. A flag that fails to parse is
// reported naming it, and its field in Inputs stays empty.
func ParseInputs(c Config) (Inputs, error) {
	in, errs := parseInputs(c)
	return in, errs.join()
}

func parseInputs(c Config) (Inputs, inputErrors) {
	var (
		in   Inputs
		errs inputErrors
	)

	in.Disks = []Disk{{ImageName: c.ImageName, Size: c.DiskSizeGiB, Bus: c.DiskBus, BootOrder: 1}}
	if c.DiskInfo != "" {
		var v DiskInfo
		in.Disks = nil
		if err := strictJSON(c.DiskInfo, &v); err != nil {
			errs.disks = flagError(FlagDiskInfo, err)
		} else {
			in.Disks = v.Disks
		}
	}
	in.NICs = []NetworkInterface{{NetworkName: c.NetworkName, Model: c.NetworkModel}}
	if c.NetworkInfo != "" {
		var v NetworkInfo
		in.NICs = nil
		if err := strictJSON(c.NetworkInfo, &v); err != nil {
			errs.nics = flagError(FlagNetworkInfo, err)
		} else {
			in.NICs = v.Interfaces
		}
	}
	if c.VGPUInfo != "" {
		var v VGPUInfo
		if err := strictJSON(c.VGPUInfo, &v); err != nil {
			errs.vgpus = flagError(FlagVGPUInfo, err)
		} else {
			in.VGPUs = v.VGPURequests
		}
	}
	if c.VMAffinity != "" {
		var v corev1.Affinity
		if err := strictJSON(c.VMAffinity, &v); err != nil {
			errs.affinity = flagError(FlagVMAffinity, err)
		} else {
			in.Affinity = &v
		}
	}
	return in, errs
}

// ImageRefs lists the images the machine's disks use (names without a
// namespace are in the VM namespace ns).
func (in Inputs) ImageRefs(ns string) ([]ObjectRef, error) {
	var (
		refs []ObjectRef
		errs []error
	)
	for i, d := range in.Disks {
		if d.ImageName == "" {
			continue
		}
		r, err := parseRef(d.ImageName, ns)
		if err != nil {
			errs = append(errs, fmt.Errorf("disk %d image: %w", i, err))
			continue
		}
		refs = append(refs, r)
	}
	return refs, errors.Join(errs...)
}

// inputs returns the machine's parsed JSON flags: those SetConfigFromFlags
// parsed, or, for a machine loaded from its stored config, parsed once on
// first use.
func (d *Driver) inputs() (Inputs, error) {
	if d.parsed == nil {
		in, err := ParseInputs(d.Config)
		if err != nil {
			return Inputs{}, err
		}
		d.parsed = &in
	}
	return *d.parsed, nil
}
