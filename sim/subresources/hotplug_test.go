package subresources

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func pvcVolume(name, claim string, hot bool) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
		Hotpluggable: hot, PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

func addReq(name, claim string) kubevirtv1.VirtualMachineVolumeRequest {
	return kubevirtv1.VirtualMachineVolumeRequest{AddVolumeOptions: &kubevirtv1.AddVolumeOptions{Name: name, Disk: &kubevirtv1.Disk{},
		VolumeSource: &kubevirtv1.HotplugVolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}
}

func removeReq(name string) kubevirtv1.VirtualMachineVolumeRequest {
	return kubevirtv1.VirtualMachineVolumeRequest{RemoveVolumeOptions: &kubevirtv1.RemoveVolumeOptions{Name: name}}
}

func TestCheckVolumeRequest(t *testing.T) {
	vols := []kubevirtv1.Volume{pvcVolume("disk-0", "vm-disk-0", false), pvcVolume("hot", "pvc-hot", true)}
	cases := []struct {
		name    string
		pending []kubevirtv1.VirtualMachineVolumeRequest
		req     kubevirtv1.VirtualMachineVolumeRequest
		want    string
	}{
		{"new volume", nil, addReq("pvc-new", "pvc-new"), ""},
		{"name taken", nil, addReq("disk-0", "x"), "Unable to add volume [disk-0] because volume with that name already exists"},
		{"claim taken", nil, addReq("y", "pvc-hot"), "Unable to add volume source [pvc-hot] because it already exists"},
		{"name pending", []kubevirtv1.VirtualMachineVolumeRequest{addReq("p", "p")}, addReq("p", "q"), "because volume with that name already exists"},
		{"remove hot-plugged", nil, removeReq("hot"), ""},
		{"remove by claim", nil, removeReq("pvc-hot"), ""},
		{"remove pending", []kubevirtv1.VirtualMachineVolumeRequest{addReq("p", "p")}, removeReq("p"), ""},
		{"remove root", nil, removeReq("disk-0"), "Unable to remove volume [disk-0] because it is not hotpluggable"},
		{"remove missing", nil, removeReq("nope"), "Unable to remove volume [nope] because it does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkVolumeRequest(vols, tc.pending, tc.req)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestApplyVolumeRequest(t *testing.T) {
	spec := &kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{pvcVolume("disk-0", "c0", false)},
		Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{{Name: "disk-0"}}}}}
	r := addReq("pvc-a", "pvc-a")
	if err := normalizeAddVolume(r.AddVolumeOptions); err != nil {
		t.Fatal(err)
	}
	ApplyVolumeRequest(spec, r)
	ApplyVolumeRequest(spec, r) // twice: no duplicate
	if len(spec.Volumes) != 2 || len(spec.Domain.Devices.Disks) != 2 || !spec.Volumes[1].PersistentVolumeClaim.Hotpluggable || spec.Domain.Devices.Disks[1].Name != "pvc-a" {
		t.Fatalf("after add: %+v", spec)
	}
	ApplyVolumeRequest(spec, removeReq("pvc-a"))
	if len(spec.Volumes) != 1 || len(spec.Domain.Devices.Disks) != 1 || spec.Volumes[0].Name != "disk-0" {
		t.Fatalf("after remove: %+v", spec)
	}
}

func TestNormalizeAddVolume(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts kubevirtv1.AddVolumeOptions
		want string
	}{
		{"no name", kubevirtv1.AddVolumeOptions{}, "AddVolumeOptions requires name to be set"},
		{"no disk", kubevirtv1.AddVolumeOptions{Name: "a"}, "AddVolumeOptions requires disk to not be nil"},
		{"no source", kubevirtv1.AddVolumeOptions{Name: "a", Disk: &kubevirtv1.Disk{}}, "AddVolumeOptions requires VolumeSource to not be nil"},
		{"empty source", kubevirtv1.AddVolumeOptions{Name: "a", Disk: &kubevirtv1.Disk{}, VolumeSource: &kubevirtv1.HotplugVolumeSource{}}, "requires one of PersistentVolumeClaim or DataVolume"},
	} {
		if err := normalizeAddVolume(&tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLifecyclePlans(t *testing.T) {
	running := &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running}}
	running.UID = types.UID("u1")
	done := running.DeepCopy()
	done.Status.Phase = kubevirtv1.Succeeded
	describe := func(c lifecycleChange, err error) string {
		switch {
		case err != nil:
			return "error: " + err.Error()
		case c.RunStrategy != nil:
			return "runStrategy=" + string(*c.RunStrategy)
		}
		var parts []string
		for _, r := range c.Requests {
			parts = append(parts, string(r.Action))
		}
		return strings.Join(parts, ",")
	}
	for _, tc := range []struct {
		name string
		plan func(vmState) (lifecycleChange, error)
		st   vmState
		want string
	}{
		{"start halted", planStart, vmState{Strategy: kubevirtv1.RunStrategyHalted}, "runStrategy=Always"},
		{"start running", planStart, vmState{Strategy: kubevirtv1.RunStrategyRerunOnFailure, VMI: running}, "error: VM is already running"},
		{"start always", planStart, vmState{Strategy: kubevirtv1.RunStrategyAlways}, "error: Always does not support manual start requests"},
		{"start manual", planStart, vmState{Strategy: kubevirtv1.RunStrategyManual}, "Start"},
		{"start rerun after stop", planStart, vmState{Strategy: kubevirtv1.RunStrategyRerunOnFailure, VMI: done}, "Stop,Start"},
		{"stop always", planStop, vmState{Strategy: kubevirtv1.RunStrategyAlways, VMI: running}, "runStrategy=Halted"},
		{"stop rerun", planStop, vmState{Strategy: kubevirtv1.RunStrategyRerunOnFailure, VMI: running}, "Stop"},
		{"stop stopped", planStop, vmState{Strategy: kubevirtv1.RunStrategyRerunOnFailure, VMI: done}, "error: VM is not running"},
		{"stop halted", planStop, vmState{Strategy: kubevirtv1.RunStrategyHalted}, "error: VM is not running"},
		{"restart", planRestart, vmState{Strategy: kubevirtv1.RunStrategyRerunOnFailure, VMI: running}, "Stop,Start"},
		{"restart halted", planRestart, vmState{Strategy: kubevirtv1.RunStrategyHalted}, "error: RunStategy Halted does not support manual restart requests"},
		{"restart without vmi", planRestart, vmState{Strategy: kubevirtv1.RunStrategyAlways}, "error: VM is not running: Halted"},
	} {
		if got := describe(tc.plan(tc.st)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestAdmitDiskNames: a hot-plug volume whose name is no DNS-1123 label
// (`../x`) is refused as KubeVirt's VM webhook refuses virt-api's patch:
// 422 Invalid, the webhook named, the disk's field in the cause.
func TestAdmitDiskNames(t *testing.T) {
	spec := &kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{pvcVolume("disk-0", "c0", false)},
		Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{{Name: "disk-0"}}}}}
	if err := admitDiskNames(spec, nil, addReq("pvc-a", "pvc-a")); err != nil {
		t.Fatalf("a valid name was refused: %v", err)
	}
	for _, name := range []string{"../x", "Upper", "a_b", strings.Repeat("a", 64)} {
		err := admitDiskNames(spec, []kubevirtv1.VirtualMachineVolumeRequest{addReq("p", "p")}, addReq(name, "c-"+name))
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			t.Fatalf("%q: %v, want a status error", name, err)
		}
		s := status.Status()
		if s.Code != 422 || s.Reason != metav1.StatusReasonInvalid || !strings.HasPrefix(s.Message, `admission webhook "virtualmachine-validator.kubevirt.io" denied the request: `) {
			t.Errorf("%q: %d %s %q, want 422 Invalid from the VM webhook", name, s.Code, s.Reason, s.Message)
		}
		if s.Details == nil || len(s.Details.Causes) == 0 || s.Details.Causes[0].Field != "spec.template.spec.domain.devices.disks[2].name" {
			t.Errorf("%q: causes %+v, want the third disk's name", name, s.Details)
		}
	}
}
