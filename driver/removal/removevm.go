package removal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// removeWithVM removes a machine whose VM takes everything with it (see
// removal.withVM): it names the volumes in the VM's annotation
// harvesterhci.io/removedPersistentVolumeClaims (one patch, only when it
// differs), deletes the VM of the recorded UID (Harvester deletes the named
// volumes, KubeVirt the VM instance, keeping the VM until it is gone, and
// the garbage collector the Secret the VM owns once the VM is gone),
// deletes itself any of the machine's volumes the VM does not use, and
// waits with one watch until the Secret is gone (so the VM is), one until
// the volumes are, and until the VM instance is (one list when it already
// is gone, and a watch when not).
func removeWithVM(ctx context.Context, api *harvesterapi.API, m *machine.Machine, r Removal) error {
	ns, vm := m.Config.VMNamespace, r.VM
	claims := slices.Sorted(maps.Keys(r.Claims))
	rv := vm.ResourceVersion
	if want := strings.Join(claims, ","); vm.Annotations[harvester.AnnotationRemovedPVCs] != want {
		patched, err := api.PatchVMAnnotations(ctx, ns, vm.Name, vm.UID, map[string]string{harvester.AnnotationRemovedPVCs: want})
		switch {
		case apierrors.IsNotFound(err), err == nil && patched.DeletionTimestamp != nil:
			// Deleted meanwhile by someone else, maybe before Harvester
			// saw the annotation: find and delete what is left one by one.
			return RemoveMachineOf(ctx, api, m, nil)
		case err != nil:
			return fmt.Errorf("record the volumes to remove: %w", err)
		}
		rv = patched.ResourceVersion
	}
	log.Infof("%s: deleting VM %s/%s (UID %s) with its instance, cloud-init Secret and volumes", m.Name, ns, vm.Name, vm.UID)
	if err := api.DeleteVM(ctx, ns, vm.Name, vm.UID); err != nil {
		return err
	}
	used := map[string]bool{}
	for _, c := range ClaimsToRemove(vm) {
		used[c] = true
	}
	var errs []error
	for _, c := range claims {
		if !used[c] {
			log.Infof("%s: deleting volume %s/%s", m.Name, ns, c)
			errs = append(errs, api.DeletePVC(ctx, ns, c, r.Claims[c]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if m.SecretPending {
		// A create rolled back before it made the Secret: wait for the VM.
		if err := WaitRemoved(ctx, api, m, harvesterapi.Target{Kind: harvesterapi.KindVM, Name: vm.Name, UID: vm.UID}); err != nil {
			return err
		}
	} else if err := waitSecretGone(ctx, api, m, vm, rv); err != nil {
		return err
	}
	var err error
	if r.listed.stream != nil {
		err = r.listed.stream.WaitGone(ctx, claims)
	} else {
		err = kubeapi.WaitGoneFrom(ctx, api.PVCs(ns), m.Ownership.OwnerSelector(m.Name), r.listed.rv, claims)
	}
	if errors.Is(err, kubeapi.ErrWatchEnded) && ctx.Err() == nil {
		var targets []harvesterapi.Target
		for _, c := range claims {
			targets = append(targets, harvesterapi.Target{Kind: harvesterapi.KindPVC, Name: c, UID: r.Claims[c]})
		}
		err = WaitRemoved(ctx, api, m, targets...)
	}
	if err != nil {
		return goneError(ctx, api, m, harvesterapi.KindPVC+"s "+strings.Join(claims, ", "), err)
	}
	// KubeVirt releases the VM only once its instance is gone; a VM deleted
	// with its dependents orphaned (by someone else) does not wait: make
	// sure the instance is gone too (one read when it already is).
	if err := WaitRemoved(ctx, api, m, append([]harvesterapi.Target{{Kind: harvesterapi.KindVMI, Name: vm.Name}}, heldClaimTargets(m)...)...); err != nil {
		return err
	}
	log.Infof("%s: removed %s", m.Name, r.describe())
	return nil
}

// waitSecretGone waits, watching from resource version rv (the VM's, as
// read or patched before its deletion), until the cloud-init Secret the VM
// owns is gone: the garbage collector deletes it once the VM itself is
// gone, so this waits for both. A Secret this process saw gone already (a
// failed create's rollback deleted it in an earlier step) says nothing of
// the VM, and no watch from rv would see it go: then it waits for the VM.
func waitSecretGone(ctx context.Context, api *harvesterapi.API, m *machine.Machine, vm *kubevirtv1.VirtualMachine, rv string) error {
	ns, name := m.Config.VMNamespace, userDataSecretOf(vm)
	vmTarget := harvesterapi.Target{Kind: harvesterapi.KindVM, Name: vm.Name, UID: vm.UID}
	secretTarget := harvesterapi.Target{Kind: harvesterapi.KindSecret, Name: name}
	target := secretTarget
	if api.Seen().Gone(harvesterapi.KindSecret, ns, name) {
		target = vmTarget
	}
	err := api.WaitGoneAfter(ctx, ns, rv, target)
	if errors.Is(err, kubeapi.ErrWatchEnded) && ctx.Err() == nil {
		err = WaitRemoved(ctx, api, m, vmTarget, secretTarget)
	}
	if err != nil {
		return goneError(ctx, api, m, "VM "+vm.Name+" and Secret "+name, err)
	}
	return nil
}

// goneError explains a wait for deletion that did not end.
func goneError(ctx context.Context, api *harvesterapi.API, m *machine.Machine, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("timed out after %s waiting for %s in %s to be deleted", m.WaitTimeout(), what, m.Config.VMNamespace)
	}
	return api.Explain("watch "+what, err)
}
