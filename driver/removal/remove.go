// Package removal deletes a machine: its VM, its volumes, its cloud-init
// Secret and its address claim, only what carries the machine's labels, and
// waits until they are gone.
package removal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// Removal is what Find found to delete.
type Removal struct {
	VM *kubevirtv1.VirtualMachine
	// vmi is the machine's VM instance left running without its VM (see
	// orphanedVMI); only looked for when the VM is gone.
	vmi    *kubevirtv1.VirtualMachineInstance
	Claims map[string]types.UID
	Secret *corev1.Secret
	// labelled are the claims found by the machine's label, as listed.
	labelled map[string]bool
	listed   pvcListing
	// secretWithVM: the cloud-init Secret is the one this machine created
	// and made the VM its owner (the VM has the recorded UID): the garbage
	// collector deletes it with the VM, so it is not read.
	secretWithVM bool
}

// withVM reports whether the VM's deletion takes everything else with it: the Secret (owned by the VM) and the volumes (Harvester
// deletes those the VM annotation names); the volumes carry the machine's
// label, so one watch sees them go.
//
// A VM someone else is already deleting does not: Harvester may have
// handled its annotation already. Nor does a VM without the finalizer of
// Harvester's VM controller (harvester.FinalizerVMCleanupPVCs): made
// while Harvester's controllers were down, it would go without its
// volumes.
func (r Removal) withVM() bool {
	if r.VM == nil || r.VM.DeletionTimestamp != nil || !r.secretWithVM {
		return false
	}
	if !harvesterDeletesVolumes(r.VM) {
		return false
	}
	for c := range r.Claims {
		if !r.labelled[c] {
			return false
		}
	}
	return true
}

// harvesterDeletesVolumes reports whether Harvester's VM controller will
// delete the volumes the VM's removal annotation names.
func harvesterDeletesVolumes(vm *kubevirtv1.VirtualMachine) bool {
	return slices.Contains(vm.Finalizers, harvester.FinalizerVMCleanupPVCs)
}

func RemoveMachine(parent context.Context, api *harvesterapi.API, m *machine.Machine) error {
	return RemoveMachineOf(parent, api, m, nil)
}

// RemoveMachineOf removes the machine; vm, when not nil, is its VM as
// just read. A removal that runs out of time because the machine's VM
// instance sits on a host that is down says so (see explainTimeout).
func RemoveMachineOf(parent context.Context, api *harvesterapi.API, m *machine.Machine, vm *kubevirtv1.VirtualMachine) error {
	ctx, cancel := context.WithTimeout(parent, m.WaitTimeout())
	defer cancel()
	err := removeMachineOf(ctx, api, m, vm)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
		return explainTimeout(parent, api, m, err)
	}
	return err
}

func removeMachineOf(ctx context.Context, api *harvesterapi.API, m *machine.Machine, vm *kubevirtv1.VirtualMachine) error {
	r, err := Find(ctx, api, m, vm)
	if err != nil {
		return fmt.Errorf("remove machine %s: %w", m.Name, err)
	}
	defer r.listed.stream.Stop()
	if r.withVM() {
		return removeWithVM(ctx, api, m, r)
	}
	claims := slices.Sorted(maps.Keys(r.Claims))
	var targets []harvesterapi.Target
	if r.VM != nil && !harvesterDeletesVolumes(r.VM) {
		log.Infof("%s: VM %s/%s lacks Harvester's finalizer %s (its controllers have not seen it yet): deleting its volumes one by one", m.Name, m.Config.VMNamespace, r.VM.Name, harvester.FinalizerVMCleanupPVCs)
	}
	if r.VM != nil {
		if err := markClaimsForRemoval(ctx, api, m, r.VM.UID, claims); err != nil {
			return err
		}
		log.Infof("%s: deleting VM %s/%s (UID %s)", m.Name, m.Config.VMNamespace, r.VM.Name, r.VM.UID)
		if err := api.DeleteVM(ctx, m.Config.VMNamespace, r.VM.Name, r.VM.UID); err != nil {
			return err
		}
		targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindVM, Name: r.VM.Name, UID: r.VM.UID}, harvesterapi.Target{Kind: harvesterapi.KindVMI, Name: r.VM.Name})
		targets = append(targets, heldClaimTargets(m)...)
		targets = append(targets, ownedSecretTargets(m, r)...)
	}
	if r.vmi != nil {
		log.Infof("%s: deleting VM instance %s/%s (UID %s), left running without its VM", m.Name, m.Config.VMNamespace, r.vmi.Name, r.vmi.UID)
		if err := api.DeleteVMI(ctx, m.Config.VMNamespace, r.vmi.Name, r.vmi.UID, nil); err != nil {
			return err
		}
		if err := releaseBackfillFinalizer(ctx, api, m, r.vmi); err != nil {
			return err
		}
		targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindVMI, Name: r.vmi.Name, UID: r.vmi.UID})
	}
	var errs []error
	for _, c := range claims {
		log.Infof("%s: deleting volume %s/%s", m.Name, m.Config.VMNamespace, c)
		errs = append(errs, api.DeletePVC(ctx, m.Config.VMNamespace, c, r.Claims[c]))
		targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindPVC, Name: c, UID: r.Claims[c]})
	}
	if s := r.Secret; s != nil {
		errs = append(errs, api.DeleteSecret(ctx, m.Config.VMNamespace, s.Name, s.UID))
		targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindSecret, Name: s.Name, UID: s.UID})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := WaitRemoved(ctx, api, m, targets...); err != nil {
		return err
	}
	log.Infof("%s: removed %s", m.Name, r.describe())
	return nil
}

// WaitRemoved waits, with watches, until every target in the VM namespace
// is gone.
func WaitRemoved(ctx context.Context, api *harvesterapi.API, m *machine.Machine, targets ...harvesterapi.Target) error {
	return api.WaitRemoved(ctx, m.Config.VMNamespace, m.WaitTimeout(), targets)
}

// ownedSecretTargets is the cloud-init Secret the VM owns, when Find did
// not read it (secretWithVM): the garbage collector deletes it once the VM
// is gone, and the removal is not done before it has.
func ownedSecretTargets(m *machine.Machine, r Removal) []harvesterapi.Target {
	if !r.secretWithVM || m.SecretPending {
		return nil
	}
	return []harvesterapi.Target{{Kind: harvesterapi.KindSecret, Name: vmspec.UserDataSecretName(m.Name)}}
}

// heldClaimTargets is the machine's address claim, if it holds one: the
// garbage collector deletes it once the VM is gone, which frees the
// address for the next machine.
func heldClaimTargets(m *machine.Machine) []harvesterapi.Target {
	if m.Held.HeldClaim == "" {
		return nil
	}
	return []harvesterapi.Target{{Kind: harvesterapi.KindClaim, Name: m.Held.HeldClaim, UID: types.UID(m.Held.HeldClaimUID)}}
}

func (r Removal) describe() string {
	var parts []string
	if r.VM != nil {
		parts = append(parts, "VM "+r.VM.Name)
	}
	if r.vmi != nil {
		parts = append(parts, "VM instance "+r.vmi.Name)
	}
	if len(r.Claims) > 0 {
		parts = append(parts, "volumes "+strings.Join(slices.Sorted(maps.Keys(r.Claims)), ", "))
	}
	switch {
	case r.Secret != nil:
		parts = append(parts, "Secret "+r.Secret.Name)
	case r.secretWithVM:
		parts = append(parts, "Secret "+userDataSecretOf(r.VM))
	}
	if len(parts) == 0 {
		return "nothing: none of the machine's objects exist any more"
	}
	return strings.Join(parts, "; ")
}

// Find finds the machine's objects and checks, before anything is
// deleted, that each one of the machine's names is the machine's own.
// vm, when not nil, is the VM as just read.
func Find(ctx context.Context, api *harvesterapi.API, m *machine.Machine, vm *kubevirtv1.VirtualMachine) (Removal, error) {
	var err error
	if vm != nil {
		vm, err = m.CheckOwnVM(vm)
	} else {
		vm, err = m.OwnVM(ctx, api)
	}
	if err != nil {
		return Removal{}, err
	}
	r := Removal{VM: vm}
	if vm == nil {
		if r.vmi, err = orphanedVMI(ctx, api, m); err != nil {
			return Removal{}, err
		}
	}
	if r.Claims, r.labelled, r.listed, err = claimsToRemove(ctx, api, m, vm); err != nil {
		return Removal{}, err
	}
	secretName := vmspec.UserDataSecretName(m.Name)
	if vm != nil {
		if s := userDataSecretOf(vm); s != "" {
			secretName = s
		}
		r.secretWithVM = m.Ownership.VMUID != "" && string(vm.UID) == m.Ownership.VMUID && secretName == vmspec.UserDataSecretName(m.Name)
	}
	if !r.secretWithVM {
		if r.Secret, err = m.OwnSecret(ctx, api, secretName); err != nil {
			r.listed.stream.Stop()
			return Removal{}, err
		}
	}
	return r, nil
}

// pvcListing is how the machine's volumes were listed: by a stream that
// goes on watching them (one request for the list and the wait), or by a
// list as of resource version rv (the wait watches from there).
type pvcListing struct {
	stream *kubeapi.Stream
	rv     string
}

// ownedPVCs lists the volumes carrying the machine's labels: streamed,
// or where the server does not stream, listed.
func ownedPVCs(ctx context.Context, api *harvesterapi.API, m *machine.Machine) ([]corev1.PersistentVolumeClaim, pvcListing, error) {
	selector := m.Ownership.OwnerSelector(m.Name)
	stream, items, err := api.StreamPVCs(ctx, m.Config.VMNamespace, selector)
	if err == nil {
		return items, pvcListing{stream: stream}, nil
	}
	if !errors.Is(err, kubeapi.ErrWatchEnded) || ctx.Err() != nil {
		return nil, pvcListing{}, err
	}
	list, err := api.ListPVCs(ctx, m.Config.VMNamespace, selector)
	if err != nil {
		return nil, pvcListing{}, err
	}
	return list.Items, pvcListing{rv: list.ResourceVersion}, nil
}

// claimsToRemove returns the PVCs to delete (name -> UID): the machine's
// own non-hot-plug volumes, found by label and from the VM; a volume the
// VM uses that the machine did not create is kept; with
// removeAllPersistentVolumeClaims every volume of the guest cluster.
// labelled are those found by label, as listed.
func claimsToRemove(ctx context.Context, api *harvesterapi.API, m *machine.Machine, vm *kubevirtv1.VirtualMachine) (out map[string]types.UID, labelled map[string]bool, listed pvcListing, err error) {
	out, labelled = map[string]types.UID{}, map[string]bool{}
	owned, listed, err := ownedPVCs(ctx, api, m)
	if err != nil {
		return nil, nil, listed, err
	}
	for _, p := range owned {
		if p.Labels[harvester.LabelHotplug] != "true" {
			out[p.Name], labelled[p.Name] = p.UID, true
		}
	}
	if vm == nil {
		return out, labelled, listed, nil
	}
	more, err := vmClaimsToRemove(ctx, api, m, vm, out)
	if err != nil {
		listed.stream.Stop()
		return nil, nil, pvcListing{}, err
	}
	for name, uid := range more {
		out[name] = uid
	}
	return out, labelled, listed, nil
}

// vmClaimsToRemove adds to the label-found claims those the VM uses that
// are the machine's, and with removeAllPersistentVolumeClaims every
// volume of the guest cluster.
func vmClaimsToRemove(ctx context.Context, api *harvesterapi.API, m *machine.Machine, vm *kubevirtv1.VirtualMachine, found map[string]types.UID) (map[string]types.UID, error) {
	out := map[string]types.UID{}
	templated := templateClaimNames(vm)
	for _, name := range ClaimsToRemove(vm) {
		if _, ok := found[name]; ok {
			continue
		}
		p, err := api.GetPVC(ctx, m.Config.VMNamespace, name)
		p, err = harvesterapi.Absent(name, p, err)
		if err != nil || p == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if ok, why := m.Ownership.OwnsLabels(m.Name, p.Labels); ok || (m.Ownership.Legacy() && templated[name]) {
			out[name] = p.UID
		} else {
			log.Infof("%s: keeping volume %s/%s that the VM uses: %s", m.Name, m.Config.VMNamespace, name, why)
		}
	}
	if cluster := vm.Labels[harvester.LabelGuestCluster]; vm.Annotations[harvester.AnnotationRemoveAllPVCs] == "true" && cluster != "" {
		all, err := api.ListPVCs(ctx, m.Config.VMNamespace, labels.SelectorFromSet(labels.Set{harvester.LabelGuestCluster: cluster}).String())
		if err != nil {
			return nil, err
		}
		for _, p := range all.Items {
			out[p.Name] = p.UID
		}
	}
	return out, nil
}

// ClaimsToRemove lists the PVCs of a VM's non-hotplug volumes: hot-plugged
// (CSI) volumes belong to the guest cluster and survive a node delete.
func ClaimsToRemove(vm *kubevirtv1.VirtualMachine) []string {
	if vm.Spec.Template == nil {
		return nil
	}
	var out []string
	hot := map[string]bool{}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		pvc := v.PersistentVolumeClaim
		switch {
		case pvc == nil || pvc.ClaimName == "":
		case pvc.Hotpluggable:
			hot[pvc.ClaimName] = true
		default:
			out = append(out, pvc.ClaimName)
		}
	}
	for name := range templateClaimNames(vm) {
		if !hot[name] && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// templateClaimNames are the PVCs of the VM's volumeClaimTemplates annotation.
func templateClaimNames(vm *kubevirtv1.VirtualMachine) map[string]bool {
	out := map[string]bool{}
	var claims []corev1.PersistentVolumeClaim
	if json.Unmarshal([]byte(vm.Annotations[harvester.AnnotationVolumeClaimTemplates]), &claims) == nil {
		for _, c := range claims {
			out[c.Name] = true
		}
	}
	return out
}

func userDataSecretOf(vm *kubevirtv1.VirtualMachine) string {
	if vm.Spec.Template == nil {
		return ""
	}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if nc := v.CloudInitNoCloud; nc != nil && nc.UserDataSecretRef != nil {
			return nc.UserDataSecretRef.Name
		}
	}
	return ""
}

// markClaimsForRemoval sets harvesterhci.io/removedPersistentVolumeClaims on
// the VM of that UID, retrying on conflicts.
func markClaimsForRemoval(ctx context.Context, api *harvesterapi.API, m *machine.Machine, uid types.UID, claims []string) error {
	err := api.UpdateVM(ctx, m.Config.VMNamespace, m.Name, "record the volumes to remove", func(vm *kubevirtv1.VirtualMachine) (bool, error) {
		if vm.UID != uid {
			return false, fmt.Errorf("VM %s was replaced (UID %s, expected %s) while it was being removed: %w", m.Name, vm.UID, uid, machine.ErrNotOwned)
		}
		if vm.Annotations == nil {
			vm.Annotations = map[string]string{}
		}
		vm.Annotations[harvester.AnnotationRemovedPVCs] = strings.Join(claims, ",")
		return true, nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
