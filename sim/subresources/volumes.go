package subresources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// addVolume is virt-api's addvolume: on a VM the request goes into
// status.volumeRequests (the VM controller moves it into the spec and the
// running VMI); on a VMI the VMI's spec changes at once (ephemeral). A VMI
// owned by a VM is refused: Harvester 1.8 runs KubeVirt with the
// DeclarativeHotplugVolumes gate and without HotplugVolumes, which alone
// allows ephemeral hot-plug into such a VMI.
func (s *Server) addVolume(ctx context.Context, w http.ResponseWriter, r *http.Request, req request) {
	var opts kubevirtv1.AddVolumeOptions
	if err := decodeBody(r.Body, &opts); err != nil {
		writeStatus(w, err)
		return
	}
	if err := normalizeAddVolume(&opts); err != nil {
		writeStatus(w, err)
		return
	}
	s.volumeRequest(ctx, w, req, kubevirtv1.VirtualMachineVolumeRequest{AddVolumeOptions: &opts}, opts.DryRun)
}

// removeVolume is virt-api's removevolume.
func (s *Server) removeVolume(ctx context.Context, w http.ResponseWriter, r *http.Request, req request) {
	var opts kubevirtv1.RemoveVolumeOptions
	if err := decodeBody(r.Body, &opts); err != nil {
		writeStatus(w, err)
		return
	}
	if opts.Name == "" {
		writeStatus(w, apierrors.NewBadRequest("RemoveVolumeOptions requires name to be set"))
		return
	}
	s.volumeRequest(ctx, w, req, kubevirtv1.VirtualMachineVolumeRequest{RemoveVolumeOptions: &opts}, opts.DryRun)
}

func (s *Server) volumeRequest(ctx context.Context, w http.ResponseWriter, req request, vr kubevirtv1.VirtualMachineVolumeRequest, dryRun []string) {
	var err error
	if req.Resource == "virtualmachineinstances" {
		err = s.patchVMIVolumes(ctx, req, vr, dryRun)
	} else {
		err = s.patchVMVolumeRequests(ctx, req, vr, dryRun)
	}
	if err != nil {
		writeStatus(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) patchVMVolumeRequests(ctx context.Context, req request, vr kubevirtv1.VirtualMachineVolumeRequest, dryRun []string) error {
	u, vm, err := s.getVM(ctx, req)
	if err != nil {
		return err
	}
	var volumes []kubevirtv1.Volume
	if vm.Spec.Template != nil {
		volumes = vm.Spec.Template.Spec.Volumes
	}
	if err := checkVolumeRequest(volumes, vm.Status.VolumeRequests, vr); err != nil {
		return apierrors.NewConflict(kubevirtv1.Resource("virtualmachine"), req.Name, err)
	}
	spec := &kubevirtv1.VirtualMachineInstanceSpec{}
	if vm.Spec.Template != nil {
		spec = &vm.Spec.Template.Spec
	}
	if err := admitDiskNames(spec, vm.Status.VolumeRequests, vr); err != nil {
		return err
	}
	_, hasStatus := u.Object["status"]
	patch, err := volumeRequestsPatch(hasStatus, vm.Status.VolumeRequests, vr)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	_, err = s.dyn.Resource(gvrVM).Namespace(req.Namespace).Patch(ctx, req.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{DryRun: dryRunAll(dryRun)}, "status")
	return patchError("virtualmachine", req.Name, err)
}

func (s *Server) patchVMIVolumes(ctx context.Context, req request, vr kubevirtv1.VirtualMachineVolumeRequest, dryRun []string) error {
	vmi, err := s.getVMI(ctx, req)
	if err != nil {
		return err
	}
	if ownedByVM(vmi) {
		return apierrors.NewBadRequest(fmt.Sprintf("VMI %s/%s is owned by a VM", vmi.Namespace, vmi.Name))
	}
	if vmi.Status.Phase != kubevirtv1.Running {
		return apierrors.NewConflict(kubevirtv1.Resource("virtualmachineinstance"), req.Name, errors.New(vmiNotRunning))
	}
	if err := checkVolumeRequest(vmi.Spec.Volumes, nil, vr); err != nil {
		return apierrors.NewConflict(kubevirtv1.Resource("virtualmachineinstance"), req.Name, err)
	}
	patch, err := vmiVolumesPatch(vmi, vr)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	_, err = s.dyn.Resource(gvrVMI).Namespace(req.Namespace).Patch(ctx, req.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{DryRun: dryRunAll(dryRun)})
	return patchError("virtualmachineinstance", req.Name, err)
}

// ownedByVM tells whether a VirtualMachine controls the VMI, as virt-api
// checks it: the controller owner reference, kind and API version.
func ownedByVM(vmi *kubevirtv1.VirtualMachineInstance) bool {
	owner := metav1.GetControllerOf(vmi)
	return owner != nil && owner.Kind == "VirtualMachine" && owner.APIVersion == kubevirtv1.SchemeGroupVersion.String()
}

// patchError turns a failed patch into virt-api's answer: a failed JSON
// patch test (someone changed the object meanwhile) is a conflict.
func patchError(resource, name string, err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err):
		return err
	case apierrors.IsConflict(err) || isTestFailure(err):
		return apierrors.NewConflict(kubevirtv1.Resource(resource), name, err)
	}
	return apierrors.NewInternalError(fmt.Errorf("unable to patch %s: %w", resource, err))
}

func (s *Server) getVM(ctx context.Context, req request) (*unstructured.Unstructured, *kubevirtv1.VirtualMachine, error) {
	u, err := s.dyn.Resource(gvrVM).Namespace(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, apierrors.NewNotFound(kubevirtv1.Resource("virtualmachine"), req.Name)
	}
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	vm := &kubevirtv1.VirtualMachine{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, vm); err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("decode virtualmachine %s: %w", req.Name, err))
	}
	return u, vm, nil
}

func (s *Server) getVMI(ctx context.Context, req request) (*kubevirtv1.VirtualMachineInstance, error) {
	u, err := s.dyn.Resource(gvrVMI).Namespace(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(kubevirtv1.Resource("virtualmachineinstance"), req.Name)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, vmi); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decode virtualmachineinstance %s: %w", req.Name, err))
	}
	return vmi, nil
}

// decodeBody reads a JSON request body as virt-api does: an empty or
// undecodable body is a bad request.
func decodeBody(body io.Reader, into any) error {
	data, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil || len(data) == 0 {
		return apierrors.NewBadRequest("Request with no body, a new name is expected as the request body")
	}
	if err := json.Unmarshal(data, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("Can not unmarshal Request body to struct, error: %v", err))
	}
	return nil
}

func dryRunAll(dryRun []string) []string {
	if len(dryRun) > 0 && dryRun[0] == metav1.DryRunAll {
		return dryRun
	}
	return nil
}
