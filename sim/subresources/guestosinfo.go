package subresources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// AnnotationGuestOS on a VirtualMachineImage is what qemu-guest-agent in a
// guest booted from it reports (a JSON VirtualMachineInstanceGuestAgentInfo:
// guestAgentVersion, os{name, id, prettyName, version, versionId,
// kernelRelease, kernelVersion, machine}, timezone). The simulator's own
// annotation: real images carry no such thing, their guests report it.
const AnnotationGuestOS = "sim.harvesterhci.io/guest-os"

// LabelOSType is Harvester's image label naming the operating system.
const LabelOSType = "harvesterhci.io/os-type"

// guestOSInfo is virt-api's guestosinfo: what the guest agent of a running
// VMI reports, here from the image behind its disks and its hostname.
func (s *Server) guestOSInfo(ctx context.Context, w http.ResponseWriter, _ *http.Request, req request) {
	vmi, err := s.getVMI(ctx, req)
	if err != nil {
		writeStatus(w, err)
		return
	}
	if vmi.Status.Phase != kubevirtv1.Running {
		writeStatus(w, apierrors.NewConflict(kubevirtv1.Resource("virtualmachineinstance"), req.Name, errors.New(vmiNotRunning)))
		return
	}
	if !agentConnected(vmi) {
		writeStatus(w, apierrors.NewConflict(kubevirtv1.Resource("virtualmachineinstance"), req.Name, errors.New("VMI does not have guest agent connected")))
		return
	}
	img, err := s.imageOf(ctx, vmi)
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	writeJSON(w, http.StatusOK, GuestAgentInfo(vmi, img))
}

func agentConnected(vmi *kubevirtv1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceAgentConnected && c.Status == "True" {
			return true
		}
	}
	return false
}

// imageOf finds the VirtualMachineImage behind the VMI's first disk that
// has one (annotation harvesterhci.io/imageId on its PVC), or nil.
func (s *Server) imageOf(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance) (*unstructured.Unstructured, error) {
	for _, v := range vmi.Spec.Volumes {
		claim := volumeSourceName(v)
		if claim == "" {
			continue
		}
		pvc, err := s.kube.CoreV1().PersistentVolumeClaims(vmi.Namespace).Get(ctx, claim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("guestosinfo: read pvc %s: %w", claim, err)
		}
		ns, name, err := hv.ParseRef(pvc.Annotations[hv.AnnotationImageID], vmi.Namespace)
		if err != nil {
			continue
		}
		img, err := s.dyn.Resource(gvrImage).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("guestosinfo: read image %s/%s: %w", ns, name, err)
		}
		return img, nil
	}
	return nil, nil
}

// GuestAgentInfo is the agent's report: the image's guest-os annotation
// (else only the OS type label as its id and name) and the guest's
// hostname (spec.hostname, else the VMI's name, as cloud-init sets it).
func GuestAgentInfo(vmi *kubevirtv1.VirtualMachineInstance, img *unstructured.Unstructured) kubevirtv1.VirtualMachineInstanceGuestAgentInfo {
	var info kubevirtv1.VirtualMachineInstanceGuestAgentInfo
	if img != nil {
		if err := json.Unmarshal([]byte(img.GetAnnotations()[AnnotationGuestOS]), &info); err != nil {
			info = kubevirtv1.VirtualMachineInstanceGuestAgentInfo{}
		}
		if info.OS.ID == "" {
			info.OS.ID = img.GetLabels()[LabelOSType]
		}
		if info.OS.Name == "" {
			info.OS.Name = info.OS.ID
		}
	}
	info.TypeMeta = metav1.TypeMeta{Kind: "VirtualMachineInstanceGuestAgentInfo", APIVersion: "subresources.kubevirt.io/v1"}
	info.Hostname = vmi.Spec.Hostname
	if info.Hostname == "" {
		info.Hostname = vmi.Name
	}
	return info
}
