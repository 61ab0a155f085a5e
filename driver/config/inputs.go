package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Inputs are the machine's structured flags as typed values: the JSON
// flags (--harvester-disk-info, --harvester-network-info,
// --harvester-vgpu-info, --harvester-vm-affinity), with the single-disk and
// single-network flags folded in when the JSON ones are not given, and the
// user data and cloud-config file, parsed. ParseInputs is the only place
// that parses them; everything else (validation, planning, pre-create
// checks, the cloud-init merge) reads these values.
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
	// UserData and CloudConfig are --harvester-user-data and the
	// --harvester-cloud-config file, parsed (empty when not given).
	UserData, CloudConfig cloudinit.Part
	// Cloudinit is UserData and CloudConfig merged with the driver's own
	// parts (UserDataDocument), when validation merged them (nil otherwise):
	// Create only puts the machine's SSH key and cloud-provider files in.
	Cloudinit *cloudinit.Document
	// Harvester is --harvester-kubeconfig-content as a client configuration
	// (ParseKubeconfig), when validation parsed it (nil otherwise).
	Harvester *rest.Config
	// Static is --harvester-static-address-range and its companions (nil
	// when no range is given).
	Static *StaticAddressing
	// Labels are --harvester-vm-labels (nil when not given).
	Labels map[string]string
}

// InputErrors are ParseInputs' problems, one per flag (nil: parsed).
type InputErrors struct {
	Disks, NICs, VGPUs, Affinity, UserData, CloudConfig, Static, Labels error
}

func (e InputErrors) join() error {
	return errors.Join(e.Disks, e.NICs, e.VGPUs, e.Affinity, e.UserData, e.CloudConfig, e.Static, e.Labels)
}

// ParseInputs parses the JSON flags of c. A flag that fails to parse is
// reported naming it, and its field in Inputs stays empty.
func ParseInputs(c Config) (Inputs, error) {
	in, errs := ParseInputsByFlag(c)
	return in, errs.join()
}

// ParseInputsByFlag is ParseInputs with its problems by flag.
func ParseInputsByFlag(c Config) (Inputs, InputErrors) {
	var (
		in   Inputs
		errs InputErrors
		err  error
	)

	in.Disks = []Disk{{ImageName: c.ImageName, Size: c.DiskSizeGiB, Bus: c.DiskBus, BootOrder: 1}}
	if c.DiskInfo != "" {
		var v DiskInfo
		in.Disks = nil
		if err := strictJSON(c.DiskInfo, &v); err != nil {
			errs.Disks = FlagError(FlagDiskInfo, err)
		} else {
			in.Disks = v.Disks
		}
	}
	in.NICs = []NetworkInterface{{NetworkName: c.NetworkName, Model: c.NetworkModel}}
	if c.NetworkInfo != "" {
		var v NetworkInfo
		in.NICs = nil
		if err := strictJSON(c.NetworkInfo, &v); err != nil {
			errs.NICs = FlagError(FlagNetworkInfo, err)
		} else {
			in.NICs = v.Interfaces
		}
	}
	if c.VGPUInfo != "" {
		var v VGPUInfo
		if err := strictJSON(c.VGPUInfo, &v); err != nil {
			errs.VGPUs = FlagError(FlagVGPUInfo, err)
		} else {
			in.VGPUs = v.VGPURequests
		}
	}
	if c.VMAffinity != "" {
		var v corev1.Affinity
		if err := strictJSON(c.VMAffinity, &v); err != nil {
			errs.Affinity = FlagError(FlagVMAffinity, err)
		} else if dropped := harvester.DroppedFieldTerms(&v); len(dropped) > 0 {
			errs.Affinity = FlagProblem(FlagVMAffinity, "required node selector terms %v have matchFields but no matchExpressions: "+
				"Harvester's VM webhook drops such a term and the VM could run on any host; "+
				"add a matchExpressions entry (e.g. kubernetes.io/hostname In [...])", dropped)
		} else {
			in.Affinity = &v
		}
	}
	if in.UserData, err = cloudinit.ParseUserData([]byte(c.UserData)); err != nil {
		errs.UserData = FlagProblem(FlagUserData, "%v (plain or base64 of #cloud-config YAML or a #! script)", err).Because(err)
	}
	if in.CloudConfig, err = cloudinit.ParseCloudConfig([]byte(c.CloudConfig)); err != nil {
		errs.CloudConfig = FlagProblem(FlagCloudConfig, "file %s: %v", c.CloudConfigPath, err).Because(err)
	}
	in.Static, errs.Static = ParseStatic(c)
	labels, labelErrs := ParseVMLabels(c.VMLabels)
	in.Labels, errs.Labels = labels, errors.Join(labelErrs...)
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
		r, err := ParseRef(d.ImageName, ns)
		if err != nil {
			errs = append(errs, fmt.Errorf("disk %d image: %w", i, err))
			continue
		}
		refs = append(refs, r)
	}
	return refs, errors.Join(errs...)
}

func strictJSON(s string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("invalid JSON: unexpected data after the JSON object (which ends at byte %d)", end)
	}
	return nil
}
