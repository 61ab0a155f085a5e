package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	reviewv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// maxReview bounds a request body (a VM is far smaller).
const maxReview = 4 << 20

// mutator answers AdmissionReviews of kubevirt.io/v1 VirtualMachines.
type mutator struct {
	settings Settings
	log      *slog.Logger
}

// NewMutator is the VM mutator's HTTP handler.
func NewMutator(settings Settings, log *slog.Logger) http.Handler {
	return &mutator{settings: settings, log: log}
}

func (m *mutator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, func(_ context.Context, req *reviewv1.AdmissionRequest) *reviewv1.AdmissionResponse {
		return m.admit(req)
	})
}

// admit mutates a VM as Harvester's mutator does: the resource rule on
// create, and on update when Harvester's needUpdateResourceOvercommit
// would; the default CPU topology always.
func (m *mutator) admit(req *reviewv1.AdmissionRequest) *reviewv1.AdmissionResponse {
	var vm kubevirtv1.VirtualMachine
	if err := json.Unmarshal(req.Object.Raw, &vm); err != nil {
		return refuse(fmt.Sprintf("decode VirtualMachine: %v", err))
	}
	if vm.Spec.Template == nil {
		return &reviewv1.AdmissionResponse{Allowed: true}
	}
	mutateResources := req.Operation == reviewv1.Create
	if req.Operation == reviewv1.Update {
		if vm.DeletionTimestamp != nil {
			return &reviewv1.AdmissionResponse{Allowed: true}
		}
		var old kubevirtv1.VirtualMachine
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return refuse(fmt.Sprintf("decode VirtualMachine: %v", err))
		}
		mutateResources = hv.ResourcesChanged(&old, &vm)
	}
	mutated := vm.DeepCopy()
	if mutateResources {
		s, err := m.mutatorSettings(&vm)
		if err == nil {
			err = hv.MutateResources(mutated, s)
		}
		if err != nil {
			m.log.Info("webhook: VM refused", "namespace", req.Namespace, "name", req.Name, "operation", req.Operation, "err", err)
			return refuse(err.Error())
		}
	}
	hv.DefaultCPU(mutated)
	ops := resourcePatch(&vm, mutated)
	if len(ops) == 0 {
		return &reviewv1.AdmissionResponse{Allowed: true}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return refuse(fmt.Sprintf("encode patch: %v", err))
	}
	pt := reviewv1.PatchTypeJSONPatch
	return &reviewv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: patch}
}

// mutatorSettings reads the two settings as Harvester's mutator does: no
// overcommit-config (or an empty one) means no resource mutation.
func (m *mutator) mutatorSettings(vm *kubevirtv1.VirtualMachine) (hv.MutatorInput, error) {
	in := hv.MutatorInput{ARM: vm.Spec.Template.Spec.Architecture == "arm64"}
	value, ok, err := m.settings.Setting(hv.SettingOvercommit)
	if err != nil || !ok {
		return in, err
	}
	if in.Overcommit, err = hv.DecodeOvercommit(value); err != nil || in.Overcommit == nil {
		return in, err
	}
	in.OverheadRatio, _, err = m.settings.Setting(hv.SettingMemoryOverheadRatio)
	return in, err
}

// refuse is Harvester's refusal: its webhook answers an error as an
// internal error carrying the message.
func refuse(message string) *reviewv1.AdmissionResponse {
	return &reviewv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Message: message, Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError,
	}}
}
