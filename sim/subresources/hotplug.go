package subresources

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	k8sfield "k8s.io/apimachinery/pkg/util/validation/field"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

const (
	vmNotRunning  = "VM is not running"
	vmiNotRunning = "VMI is not running"
)

// normalizeAddVolume checks AddVolumeOptions as virt-api does and fills in
// what it fills in: the disk is named after the volume and the source is
// hotpluggable.
func normalizeAddVolume(o *kubevirtv1.AddVolumeOptions) error {
	switch {
	case o.Name == "":
		return apierrors.NewBadRequest("AddVolumeOptions requires name to be set")
	case o.Disk == nil:
		return apierrors.NewBadRequest("AddVolumeOptions requires disk to not be nil")
	case o.VolumeSource == nil:
		return apierrors.NewBadRequest("AddVolumeOptions requires VolumeSource to not be nil")
	}
	o.Disk.Name = o.Name
	switch {
	case o.VolumeSource.PersistentVolumeClaim != nil:
		o.VolumeSource.PersistentVolumeClaim.Hotpluggable = true
	case o.VolumeSource.DataVolume != nil:
		o.VolumeSource.DataVolume.Hotpluggable = true
	default:
		return apierrors.NewBadRequest("AddVolumeOptions requires one of PersistentVolumeClaim or DataVolume to be set")
	}
	return nil
}

// vmValidatorWebhook is KubeVirt's validating webhook of VMs.
const vmValidatorWebhook = "virtualmachine-validator.kubevirt.io"

// admitDiskNames refuses a volume request on a VM whose disks, once it is
// applied after the pending ones, include a name that is no DNS-1123 label,
// as KubeVirt's VM webhook (v1.7) refuses the patch virt-api makes for it
// (a disk's name becomes a container's name): virt-api passes that answer
// on unchanged, 422 Invalid.
func admitDiskNames(spec *kubevirtv1.VirtualMachineInstanceSpec, pending []kubevirtv1.VirtualMachineVolumeRequest, vr kubevirtv1.VirtualMachineVolumeRequest) error {
	next := spec.DeepCopy()
	for _, p := range pending {
		ApplyVolumeRequest(next, p)
	}
	ApplyVolumeRequest(next, vr)
	disks := k8sfield.NewPath("spec", "template", "spec", "domain", "devices", "disks")
	var (
		causes []metav1.StatusCause
		msgs   []string
	)
	for i, d := range next.Domain.Devices.Disks {
		for _, msg := range validation.IsDNS1123Label(d.Name) {
			causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: msg, Field: disks.Index(i).Child("name").String()})
			msgs = append(msgs, msg)
		}
	}
	if len(causes) == 0 {
		return nil
	}
	return webhookerrors.ToStatusErr(vmValidatorWebhook, &metav1.Status{Message: strings.Join(msgs, ", "), Reason: metav1.StatusReasonInvalid,
		Code: http.StatusUnprocessableEntity, Details: &metav1.StatusDetails{Causes: causes}})
}

// checkVolumeRequest refuses, with virt-api's messages, adding a volume
// whose name or claim is already used (in the spec or a pending request),
// and removing a volume that does not exist or was not hot-plugged.
func checkVolumeRequest(volumes []kubevirtv1.Volume, pending []kubevirtv1.VirtualMachineVolumeRequest, vr kubevirtv1.VirtualMachineVolumeRequest) error {
	if add := vr.AddVolumeOptions; add != nil {
		source := hotplugSourceName(add.VolumeSource)
		for _, v := range volumes {
			if v.Name == add.Name {
				return fmt.Errorf("Unable to add volume [%s] because volume with that name already exists", add.Name) //nolint:staticcheck // virt-api's message
			}
			if source != "" && volumeSourceName(v) == source {
				return fmt.Errorf("Unable to add volume source [%s] because it already exists", source) //nolint:staticcheck // virt-api's message
			}
		}
		for _, p := range pending {
			if p.AddVolumeOptions != nil && p.AddVolumeOptions.Name == add.Name {
				return fmt.Errorf("Unable to add volume [%s] because volume with that name already exists", add.Name) //nolint:staticcheck // virt-api's message
			}
		}
		return nil
	}
	name := vr.RemoveVolumeOptions.Name
	for _, v := range volumes {
		if v.Name != name && volumeSourceName(v) != name {
			continue
		}
		if !hotpluggable(v) {
			return fmt.Errorf("Unable to remove volume [%s] because it is not hotpluggable", v.Name) //nolint:staticcheck // virt-api's message
		}
		return nil
	}
	for _, p := range pending {
		if p.AddVolumeOptions != nil && p.AddVolumeOptions.Name == name {
			return nil
		}
	}
	return fmt.Errorf("Unable to remove volume [%s] because it does not exist", name) //nolint:staticcheck // virt-api's message
}

func hotplugSourceName(s *kubevirtv1.HotplugVolumeSource) string {
	switch {
	case s == nil:
		return ""
	case s.PersistentVolumeClaim != nil:
		return s.PersistentVolumeClaim.ClaimName
	case s.DataVolume != nil:
		return s.DataVolume.Name
	}
	return ""
}

func volumeSourceName(v kubevirtv1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.DataVolume != nil:
		return v.DataVolume.Name
	}
	return ""
}

func hotpluggable(v kubevirtv1.Volume) bool {
	return (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable) ||
		(v.DataVolume != nil && v.DataVolume.Hotpluggable)
}

// patchOp is one JSON patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// volumeRequestsPatch appends the request to the VM's status.volumeRequests,
// testing the current list first so a concurrent change fails the patch.
func volumeRequestsPatch(hasStatus bool, current []kubevirtv1.VirtualMachineVolumeRequest, vr kubevirtv1.VirtualMachineVolumeRequest) ([]byte, error) {
	var ops []patchOp
	switch {
	case !hasStatus:
		ops = []patchOp{{Op: "add", Path: "/status", Value: kubevirtv1.VirtualMachineStatus{VolumeRequests: []kubevirtv1.VirtualMachineVolumeRequest{vr}}}}
	case len(current) == 0:
		ops = []patchOp{{Op: "test", Path: "/status/volumeRequests", Value: nil},
			{Op: "add", Path: "/status/volumeRequests", Value: []kubevirtv1.VirtualMachineVolumeRequest{vr}}}
	default:
		ops = []patchOp{{Op: "test", Path: "/status/volumeRequests", Value: current},
			{Op: "add", Path: "/status/volumeRequests/-", Value: vr}}
	}
	return json.Marshal(ops)
}

// AnnEphemeralHotplug lists (comma-separated) the volumes hot-plugged into
// a VMI alone (virtualmachineinstances/addvolume), so the VM controller
// leaves them though the VM does not have them. The simulator's own
// bookkeeping.
const AnnEphemeralHotplug = "sim.harvesterhci.io/ephemeral-hotplug"

// vmiVolumesPatch applies the request to a VMI's spec, replacing its
// volumes and disks and recording ephemeral volumes in its annotations;
// the resourceVersion is tested first so a concurrent change fails it.
func vmiVolumesPatch(vmi *kubevirtv1.VirtualMachineInstance, vr kubevirtv1.VirtualMachineVolumeRequest) ([]byte, error) {
	next := vmi.Spec.DeepCopy()
	ApplyVolumeRequest(next, vr)
	ann := map[string]string{}
	for k, v := range vmi.Annotations {
		ann[k] = v
	}
	var names []string
	for _, n := range strings.Split(ann[AnnEphemeralHotplug], ",") {
		if n != "" && (vr.RemoveVolumeOptions == nil || n != vr.RemoveVolumeOptions.Name) {
			names = append(names, n)
		}
	}
	if vr.AddVolumeOptions != nil {
		names = append(names, vr.AddVolumeOptions.Name)
	}
	ann[AnnEphemeralHotplug] = strings.Join(names, ",")
	ops := []patchOp{
		{Op: "test", Path: "/metadata/resourceVersion", Value: vmi.ResourceVersion},
		{Op: "add", Path: "/metadata/annotations", Value: ann},
		{Op: "add", Path: "/spec/volumes", Value: orEmpty(next.Volumes)},
		{Op: "add", Path: "/spec/domain/devices/disks", Value: orEmpty(next.Domain.Devices.Disks)},
	}
	return json.Marshal(ops)
}

func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// ApplyVolumeRequest changes a VMI spec as virt-controller does for one
// volume request: add the volume and its disk, or remove both by name (or
// by claim name). The VM controller uses it for status.volumeRequests.
func ApplyVolumeRequest(spec *kubevirtv1.VirtualMachineInstanceSpec, vr kubevirtv1.VirtualMachineVolumeRequest) {
	if add := vr.AddVolumeOptions; add != nil {
		for _, v := range spec.Volumes {
			if v.Name == add.Name {
				return
			}
		}
		v := kubevirtv1.Volume{Name: add.Name}
		if src := add.VolumeSource; src != nil {
			if src.PersistentVolumeClaim != nil {
				v.PersistentVolumeClaim = src.PersistentVolumeClaim.DeepCopy()
			}
			if src.DataVolume != nil {
				v.DataVolume = src.DataVolume.DeepCopy()
			}
		}
		spec.Volumes = append(spec.Volumes, v)
		if add.Disk != nil {
			d := *add.Disk.DeepCopy()
			d.Name = add.Name
			spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, d)
		}
		return
	}
	if vr.RemoveVolumeOptions == nil {
		return
	}
	name := vr.RemoveVolumeOptions.Name
	var volumes []kubevirtv1.Volume
	removed := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Name == name || volumeSourceName(v) == name {
			removed[v.Name] = true
			continue
		}
		volumes = append(volumes, v)
	}
	spec.Volumes = volumes
	var disks []kubevirtv1.Disk
	for _, d := range spec.Domain.Devices.Disks {
		if !removed[d.Name] {
			disks = append(disks, d)
		}
	}
	spec.Domain.Devices.Disks = disks
}

func isTestFailure(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "testing value") || strings.Contains(err.Error(), "test operation"))
}

var errStateChangeUnderway = errors.New("unable to complete request: stop/start already underway")
