package driver

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
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// Remove deletes what this machine created and nothing else: its VM (only
// if it carries the machine's ID and, once recorded, the VM's UID), its
// volumes (found from the VM and by label, so a VM deleted by hand leaves no
// disk behind; hot-plug disks stay; every volume of the guest cluster when
// the VM is annotated harvesterhci.io/removeAllPersistentVolumeClaims=true)
// and its cloud-init Secret, and waits until they are gone. Another object
// of the machine's name is left alone with an error, and nothing is
// deleted. A machine already gone is success, on the right cluster only;
// no error says "not found" (see keepMachine). A server that cannot be
// reached ends the command at the first failed call.
func (d *Driver) Remove() error {
	return keepMachine(d.remove())
}

func (d *Driver) remove() error {
	ctx := context.Background()
	api, err := d.client()
	if err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	endFailFast := api.FailFast()
	vm, err := d.confirmByVM(ctx, api)
	if unreachable := endFailFast(); unreachable != nil {
		return fmt.Errorf("remove: %w", unreachable)
	}
	if err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	return d.removeMachineOf(ctx, api, vm)
}

// confirmByVM confirms the cluster by the VM of the recorded UID when it
// is there (a UID is never reused, on any cluster): one read that Remove
// needs anyway. Otherwise the session confirms the cluster as for every
// command.
// It returns that VM when it read it (nil otherwise).
func (d *Driver) confirmByVM(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachine, error) {
	if !d.clusterConfirmed && d.VMUID != "" {
		vm, err := api.GetVM(ctx, d.VMNamespace, d.MachineName)
		vm, err = harvesterapi.Absent(d.MachineName, vm, err)
		if err != nil && harvesterapi.IsTerminal(err) {
			return nil, err
		}
		if vm != nil && string(vm.UID) == d.VMUID {
			d.confirmed()
			return vm, nil
		}
	}
	_, err := d.session(ctx)
	return nil, err
}

// removal is what removeMachine found to delete.
type removal struct {
	vm *kubevirtv1.VirtualMachine
	// vmi is the machine's VM instance left running without its VM (see
	// orphanedVMI); only looked for when the VM is gone.
	vmi    *kubevirtv1.VirtualMachineInstance
	claims map[string]types.UID
	secret *corev1.Secret
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
// handled its annotation already.
func (r removal) withVM() bool {
	if r.vm == nil || r.vm.DeletionTimestamp != nil || !r.secretWithVM {
		return false
	}
	for c := range r.claims {
		if !r.labelled[c] {
			return false
		}
	}
	return true
}

func (d *Driver) removeMachine(parent context.Context, api *harvesterapi.API) error {
	return d.removeMachineOf(parent, api, nil)
}

// removeMachineOf removes the machine; vm, when not nil, is its VM as
// just read.
func (d *Driver) removeMachineOf(parent context.Context, api *harvesterapi.API, vm *kubevirtv1.VirtualMachine) error {
	ctx, cancel := context.WithTimeout(parent, d.waitTimeout())
	defer cancel()
	r, err := d.findRemoval(ctx, api, vm)
	if err != nil {
		return fmt.Errorf("remove machine %s: %w", d.MachineName, err)
	}
	defer r.listed.stream.Stop()
	if r.withVM() {
		return d.removeWithVM(ctx, api, r)
	}
	claims := slices.Sorted(maps.Keys(r.claims))
	var targets []harvesterapi.Target
	if r.vm != nil {
		if err := d.markClaimsForRemoval(ctx, api, r.vm.UID, claims); err != nil {
			return err
		}
		log.Infof("%s: deleting VM %s/%s (UID %s)", d.MachineName, d.VMNamespace, r.vm.Name, r.vm.UID)
		if err := api.DeleteVM(ctx, d.VMNamespace, r.vm.Name, r.vm.UID); err != nil {
			return err
		}
		targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindVM, Name: r.vm.Name, UID: r.vm.UID}, harvesterapi.Target{Kind: harvesterapi.KindVMI, Name: r.vm.Name})
		targets = append(targets, d.heldClaimTargets()...)
	}
	if r.vmi != nil {
		log.Infof("%s: deleting VM instance %s/%s (UID %s), left running without its VM", d.MachineName, d.VMNamespace, r.vmi.Name, r.vmi.UID)
		if err := api.DeleteVMI(ctx, d.VMNamespace, r.vmi.Name, r.vmi.UID, nil); err != nil {
			return err
		}
		targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindVMI, Name: r.vmi.Name, UID: r.vmi.UID})
	}
	var errs []error
	for _, c := range claims {
		log.Infof("%s: deleting volume %s/%s", d.MachineName, d.VMNamespace, c)
		errs = append(errs, api.DeletePVC(ctx, d.VMNamespace, c, r.claims[c]))
		targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindPVC, Name: c, UID: r.claims[c]})
	}
	if s := r.secret; s != nil {
		errs = append(errs, api.DeleteSecret(ctx, d.VMNamespace, s.Name, s.UID))
		targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindSecret, Name: s.Name, UID: s.UID})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := d.waitRemoved(ctx, api, targets...); err != nil {
		return err
	}
	log.Infof("%s: removed %s", d.MachineName, r.describe())
	return nil
}

// waitRemoved waits, with watches, until every target in the VM namespace
// is gone.
func (d *Driver) waitRemoved(ctx context.Context, api *harvesterapi.API, targets ...harvesterapi.Target) error {
	return api.WaitRemoved(ctx, d.VMNamespace, d.waitTimeout(), targets)
}

// heldClaimTargets is the machine's address claim, if it holds one: the
// garbage collector deletes it once the VM is gone, which frees the
// address for the next machine.
func (d *Driver) heldClaimTargets() []harvesterapi.Target {
	if d.HeldClaim == "" {
		return nil
	}
	return []harvesterapi.Target{{Kind: harvesterapi.KindClaim, Name: d.HeldClaim, UID: types.UID(d.HeldClaimUID)}}
}

func (r removal) describe() string {
	var parts []string
	if r.vm != nil {
		parts = append(parts, "VM "+r.vm.Name)
	}
	if r.vmi != nil {
		parts = append(parts, "VM instance "+r.vmi.Name)
	}
	if len(r.claims) > 0 {
		parts = append(parts, "volumes "+strings.Join(slices.Sorted(maps.Keys(r.claims)), ", "))
	}
	switch {
	case r.secret != nil:
		parts = append(parts, "Secret "+r.secret.Name)
	case r.secretWithVM:
		parts = append(parts, "Secret "+userDataSecretOf(r.vm))
	}
	if len(parts) == 0 {
		return "nothing: none of the machine's objects exist any more"
	}
	return strings.Join(parts, "; ")
}

// findRemoval finds the machine's objects and checks, before anything is
// deleted, that each one of the machine's names is the machine's own.
// vm, when not nil, is the VM as just read.
func (d *Driver) findRemoval(ctx context.Context, api *harvesterapi.API, vm *kubevirtv1.VirtualMachine) (removal, error) {
	var err error
	if vm != nil {
		vm, err = d.checkOwnVM(vm)
	} else {
		vm, err = d.ownVM(ctx, api)
	}
	if err != nil {
		return removal{}, err
	}
	r := removal{vm: vm}
	if vm == nil {
		if r.vmi, err = d.orphanedVMI(ctx, api); err != nil {
			return removal{}, err
		}
	}
	if r.claims, r.labelled, r.listed, err = d.claimsToRemove(ctx, api, vm); err != nil {
		return removal{}, err
	}
	secretName := UserDataSecretName(d.MachineName)
	if vm != nil {
		if s := userDataSecretOf(vm); s != "" {
			secretName = s
		}
		r.secretWithVM = d.VMUID != "" && string(vm.UID) == d.VMUID && secretName == UserDataSecretName(d.MachineName)
	}
	if !r.secretWithVM {
		if r.secret, err = d.ownSecret(ctx, api, secretName); err != nil {
			r.listed.stream.Stop()
			return removal{}, err
		}
	}
	return r, nil
}

// ownVM returns the machine's VM, nil when there is none, or an error
// wrapping ErrNotOwned when the VM of that name is not the machine's.
func (d *Driver) ownVM(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachine, error) {
	vm, err := api.GetVM(ctx, d.VMNamespace, d.MachineName)
	vm, err = harvesterapi.Absent(d.MachineName, vm, err)
	if err != nil || vm == nil {
		return nil, err
	}
	return d.checkOwnVM(vm)
}

// currentVM is the machine's VM as this process last saw it, when fresh
// (Create just made it and watched it), else as read now (see ownVM).
func (d *Driver) currentVM(ctx context.Context, api *harvesterapi.API) (*kubevirtv1.VirtualMachine, error) {
	if vm := api.Seen().FreshVM(d.VMNamespace, d.MachineName); vm != nil {
		return d.checkOwnVM(vm)
	}
	return d.ownVM(ctx, api)
}

func (d *Driver) checkOwnVM(vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	if err := d.checkOwned("VM", d.MachineName, vm); err != nil {
		return nil, err
	}
	return vm, nil
}

// ownSecret returns the Secret called name if it is the machine's, nil if
// there is none, or an error wrapping ErrNotOwned.
func (d *Driver) ownSecret(ctx context.Context, api *harvesterapi.API, name string) (*corev1.Secret, error) {
	s, err := api.GetSecret(ctx, d.VMNamespace, name)
	s, err = harvesterapi.Absent(name, s, err)
	if err != nil || s == nil {
		return nil, err
	}
	if err := d.checkOwned("Secret", d.MachineName, s); err != nil {
		return nil, err
	}
	return s, nil
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
func (d *Driver) ownedPVCs(ctx context.Context, api *harvesterapi.API) ([]corev1.PersistentVolumeClaim, pvcListing, error) {
	selector := d.ownerSelector(d.MachineName)
	stream, items, err := api.StreamPVCs(ctx, d.VMNamespace, selector)
	if err == nil {
		return items, pvcListing{stream: stream}, nil
	}
	if !errors.Is(err, kubeapi.ErrWatchEnded) || ctx.Err() != nil {
		return nil, pvcListing{}, err
	}
	list, err := api.ListPVCs(ctx, d.VMNamespace, selector)
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
func (d *Driver) claimsToRemove(ctx context.Context, api *harvesterapi.API, vm *kubevirtv1.VirtualMachine) (out map[string]types.UID, labelled map[string]bool, listed pvcListing, err error) {
	out, labelled = map[string]types.UID{}, map[string]bool{}
	owned, listed, err := d.ownedPVCs(ctx, api)
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
	more, err := d.vmClaimsToRemove(ctx, api, vm, out)
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
func (d *Driver) vmClaimsToRemove(ctx context.Context, api *harvesterapi.API, vm *kubevirtv1.VirtualMachine, found map[string]types.UID) (map[string]types.UID, error) {
	out := map[string]types.UID{}
	templated := templateClaimNames(vm)
	for _, name := range ClaimsToRemove(vm) {
		if _, ok := found[name]; ok {
			continue
		}
		p, err := api.GetPVC(ctx, d.VMNamespace, name)
		p, err = harvesterapi.Absent(name, p, err)
		if err != nil || p == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if ok, why := d.ownsLabels(d.MachineName, p.Labels); ok || (d.legacy() && templated[name]) {
			out[name] = p.UID
		} else {
			log.Infof("%s: keeping volume %s/%s that the VM uses: %s", d.MachineName, d.VMNamespace, name, why)
		}
	}
	if cluster := vm.Labels[harvester.LabelGuestCluster]; vm.Annotations[harvester.AnnotationRemoveAllPVCs] == "true" && cluster != "" {
		all, err := api.ListPVCs(ctx, d.VMNamespace, labels.SelectorFromSet(labels.Set{harvester.LabelGuestCluster: cluster}).String())
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
func (d *Driver) markClaimsForRemoval(ctx context.Context, api *harvesterapi.API, uid types.UID, claims []string) error {
	err := api.UpdateVM(ctx, d.VMNamespace, d.MachineName, "record the volumes to remove", func(vm *kubevirtv1.VirtualMachine) (bool, error) {
		if vm.UID != uid {
			return false, fmt.Errorf("VM %s was replaced (UID %s, expected %s) while it was being removed: %w", d.MachineName, vm.UID, uid, ErrNotOwned)
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
