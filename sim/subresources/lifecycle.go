package subresources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// lifecycleChange is what a start, stop or restart request does to a VM:
// a new run strategy (a spec patch) or state change requests for the VM
// controller (a status patch).
type lifecycleChange struct {
	RunStrategy *kubevirtv1.VirtualMachineRunStrategy
	Requests    []kubevirtv1.VirtualMachineStateChangeRequest
}

// vmState is what virt-api looks at to decide.
type vmState struct {
	Strategy kubevirtv1.VirtualMachineRunStrategy
	VMI      *kubevirtv1.VirtualMachineInstance // nil when there is none
}

func (v vmState) vmiFinal() bool {
	return v.VMI == nil || v.VMI.Status.Phase == kubevirtv1.Succeeded || v.VMI.Status.Phase == kubevirtv1.Failed
}

// planStart is virt-api's start: Halted becomes Always; Manual and
// RerunOnFailure ask the controller to start; Always refuses.
func planStart(v vmState) (lifecycleChange, error) {
	if !v.vmiFinal() && v.VMI.Status.Phase != kubevirtv1.Unknown && v.VMI.Status.Phase != kubevirtv1.VmPhaseUnset {
		return lifecycleChange{}, errors.New("VM is already running")
	}
	switch v.Strategy {
	case kubevirtv1.RunStrategyHalted:
		return lifecycleChange{RunStrategy: strategyPtr(kubevirtv1.RunStrategyAlways)}, nil
	case kubevirtv1.RunStrategyRerunOnFailure, kubevirtv1.RunStrategyManual:
		if v.Strategy == kubevirtv1.RunStrategyRerunOnFailure && v.VMI != nil && v.VMI.Status.Phase == kubevirtv1.Failed {
			return lifecycleChange{}, fmt.Errorf("%v does not support starting VM from failed state", v.Strategy)
		}
		if v.VMI != nil && v.vmiFinal() {
			uid := v.VMI.UID
			return lifecycleChange{Requests: []kubevirtv1.VirtualMachineStateChangeRequest{
				{Action: kubevirtv1.StopRequest, UID: &uid}, {Action: kubevirtv1.StartRequest}}}, nil
		}
		return lifecycleChange{Requests: []kubevirtv1.VirtualMachineStateChangeRequest{{Action: kubevirtv1.StartRequest}}}, nil
	}
	return lifecycleChange{}, fmt.Errorf("%v does not support manual start requests", v.Strategy)
}

// planStop is virt-api's stop (without a grace period): Always becomes
// Halted; Manual and RerunOnFailure ask the controller to stop the VMI.
func planStop(v vmState) (lifecycleChange, error) {
	switch v.Strategy {
	case kubevirtv1.RunStrategyAlways:
		return lifecycleChange{RunStrategy: strategyPtr(kubevirtv1.RunStrategyHalted)}, nil
	case kubevirtv1.RunStrategyHalted:
		if v.vmiFinal() {
			return lifecycleChange{}, errors.New(vmNotRunning)
		}
		return lifecycleChange{}, fmt.Errorf("%v only supports manual stop requests with a shorter graceperiod", v.Strategy)
	case kubevirtv1.RunStrategyRerunOnFailure, kubevirtv1.RunStrategyManual:
		if v.vmiFinal() {
			return lifecycleChange{}, errors.New(vmNotRunning)
		}
		uid := v.VMI.UID
		return lifecycleChange{Requests: []kubevirtv1.VirtualMachineStateChangeRequest{{Action: kubevirtv1.StopRequest, UID: &uid}}}, nil
	}
	return lifecycleChange{}, fmt.Errorf("%v does not support manual stop requests", v.Strategy)
}

// planRestart is virt-api's restart: stop this VMI (by UID), then start.
func planRestart(v vmState) (lifecycleChange, error) {
	if v.Strategy == kubevirtv1.RunStrategyHalted || v.Strategy == kubevirtv1.RunStrategyOnce {
		return lifecycleChange{}, fmt.Errorf("RunStategy %v does not support manual restart requests", v.Strategy) // sic, virt-api's spelling
	}
	if v.VMI == nil {
		return lifecycleChange{}, fmt.Errorf("VM is not running: %v", kubevirtv1.RunStrategyHalted)
	}
	uid := v.VMI.UID
	return lifecycleChange{Requests: []kubevirtv1.VirtualMachineStateChangeRequest{
		{Action: kubevirtv1.StopRequest, UID: &uid}, {Action: kubevirtv1.StartRequest}}}, nil
}

func strategyPtr(s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachineRunStrategy {
	return &s
}

// runStrategyPatch replaces spec.runStrategy (or the legacy spec.running),
// testing the old value.
func runStrategyPatch(vm *kubevirtv1.VirtualMachine, to kubevirtv1.VirtualMachineRunStrategy) ([]byte, error) {
	if vm.Spec.RunStrategy == nil && vm.Spec.Running == nil {
		return json.Marshal([]patchOp{{Op: "add", Path: "/spec/runStrategy", Value: to}})
	}
	if vm.Spec.RunStrategy != nil {
		return json.Marshal([]patchOp{{Op: "test", Path: "/spec/runStrategy", Value: vm.Spec.RunStrategy},
			{Op: "add", Path: "/spec/runStrategy", Value: to}})
	}
	return json.Marshal([]patchOp{{Op: "test", Path: "/spec/running", Value: vm.Spec.Running},
		{Op: "replace", Path: "/spec/running", Value: to == kubevirtv1.RunStrategyAlways}})
}

// stateChangePatch adds state change requests to the VM's status, as
// virt-api does: only when none are pending (a lone stop replaces them).
func stateChangePatch(hasStatus bool, current, changes []kubevirtv1.VirtualMachineStateChangeRequest) ([]byte, error) {
	switch {
	case !hasStatus:
		return json.Marshal([]patchOp{{Op: "add", Path: "/status", Value: kubevirtv1.VirtualMachineStatus{StateChangeRequests: changes}}})
	case len(current) == 0:
		return json.Marshal([]patchOp{{Op: "test", Path: "/status/stateChangeRequests", Value: nil},
			{Op: "add", Path: "/status/stateChangeRequests", Value: changes}})
	case len(changes) == 1 && changes[0].Action == kubevirtv1.StopRequest:
		return json.Marshal([]patchOp{{Op: "test", Path: "/status/stateChangeRequests", Value: current},
			{Op: "replace", Path: "/status/stateChangeRequests", Value: changes}})
	}
	return nil, errStateChangeUnderway
}

func (s *Server) start(ctx context.Context, w http.ResponseWriter, r *http.Request, req request) {
	var opts kubevirtv1.StartOptions
	s.lifecycle(ctx, w, r, req, &opts, planStart, func() []string { return opts.DryRun })
}

func (s *Server) stop(ctx context.Context, w http.ResponseWriter, r *http.Request, req request) {
	var opts kubevirtv1.StopOptions
	s.lifecycle(ctx, w, r, req, &opts, planStop, func() []string { return opts.DryRun })
}

func (s *Server) restart(ctx context.Context, w http.ResponseWriter, r *http.Request, req request) {
	var opts kubevirtv1.RestartOptions
	s.lifecycle(ctx, w, r, req, &opts, planRestart, func() []string { return opts.DryRun })
}

// lifecycle reads the optional body, the VM and its VMI, plans the change
// and patches the VM's spec or status.
func (s *Server) lifecycle(ctx context.Context, w http.ResponseWriter, r *http.Request, req request, opts any,
	plan func(vmState) (lifecycleChange, error), dryRun func() []string) {
	if r.ContentLength != 0 {
		if err := decodeBody(r.Body, opts); err != nil {
			writeStatus(w, err)
			return
		}
	}
	u, vm, err := s.getVM(ctx, req)
	if err != nil {
		writeStatus(w, err)
		return
	}
	strategy, err := vm.RunStrategy()
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	state := vmState{Strategy: strategy}
	if vmi, err := s.getVMI(ctx, req); err == nil {
		state.VMI = vmi
	} else if !apierrors.IsNotFound(err) {
		writeStatus(w, err)
		return
	}
	change, err := plan(state)
	if err != nil {
		writeStatus(w, apierrors.NewConflict(kubevirtv1.Resource("virtualmachine"), req.Name, err))
		return
	}
	var patch []byte
	var sub []string
	if change.RunStrategy != nil {
		patch, err = runStrategyPatch(vm, *change.RunStrategy)
	} else {
		_, hasStatus := u.Object["status"]
		patch, err = stateChangePatch(hasStatus, vm.Status.StateChangeRequests, change.Requests)
		sub = []string{"status"}
	}
	if err != nil {
		writeStatus(w, apierrors.NewConflict(kubevirtv1.Resource("virtualmachine"), req.Name, err))
		return
	}
	_, err = s.dyn.Resource(gvrVM).Namespace(req.Namespace).Patch(ctx, req.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{DryRun: dryRunAll(dryRun())}, sub...)
	if err := patchError("virtualmachine", req.Name, err); err != nil {
		writeStatus(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
