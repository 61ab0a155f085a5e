package create

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/removal"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
	"github.com/harvester-kit/harvester-machine/internal/version"
)

// errNameTaken: a create failed because an object of that name exists.
var errNameTaken = errors.New("the name is taken")

// flow is one create: the API, the machine it makes (its value records
// what the create learns) and the undo steps registered so far.
type flow struct {
	api  *harvesterapi.API
	m    *machine.Machine
	undo *rollback
}

// secretThenVM makes the cloud-init Secret, then the VM, then makes the
// VM the Secret's owner.
func (f flow) secretThenVM(ctx context.Context, b built) (made, error) {
	// A create whose answer was lost (a timeout while the API server was
	// frozen, a connection cut) may still have been applied: its undo is
	// registered unless the name was taken by another object.
	secret, err := f.secret(ctx, b.secret)
	if err != nil {
		return made{}, err
	}
	vm, err := f.vm(ctx, b)
	if err != nil {
		return made{}, err
	}
	ns := f.m.Config.VMNamespace
	err = f.api.SetSecretOwners(ctx, ns, secret.Name, secret.UID, []metav1.OwnerReference{machine.VMOwnerReference(vm)})
	if apierrors.IsNotFound(err) {
		return made{}, fmt.Errorf("VM %s/%s: %w", ns, vm.Name, f.m.SecretDeleted(secret.Name))
	}
	return made{secret: secret, vm: vm, runsFrom: vm.Generation}, err
}

// vm creates the VM, registers its removal as an undo step and records
// its UID in the machine.
func (f flow) vm(ctx context.Context, b built) (*kubevirtv1.VirtualMachine, error) {
	m, plan := f.m, b.plan
	log.Infof("%s: creating VM %s/%s (%d CPU, %d GiB, %d disk(s), %d NIC(s)) with %s", m.Name, m.Config.VMNamespace, b.vm.Name, plan.CPU, plan.MemoryGiB, len(plan.Disks), len(plan.NICs), version.String(config.BinaryName))
	created, err := f.api.CreateVM(ctx, b.vm)
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create VM: a VM named %s already exists in namespace %s (another machine's, or left from an earlier one); choose another machine name or remove it: %w", b.vm.Name, m.Config.VMNamespace, errNameTaken)
	}
	f.undo.add(func(c context.Context) error { return removal.RemoveMachine(c, f.api, m) })
	if err != nil {
		return nil, err
	}
	f.api.Seen().RememberVM(created)
	m.Ownership.VMUID = string(created.UID)
	return created, nil
}

// secret creates the cloud-init Secret and registers its removal as an
// undo step.
func (f flow) secret(ctx context.Context, secret *corev1.Secret) (*corev1.Secret, error) {
	ns := f.m.Config.VMNamespace
	log.Infof("%s: creating cloud-init Secret %s/%s", f.m.Name, ns, secret.Name)
	made, err := f.api.CreateSecret(ctx, secret)
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Secret: a cloud-init Secret named %s already exists in namespace %s (left from an earlier machine of this name, or another's); choose another machine name or remove it; nothing was created: %w", secret.Name, ns, errNameTaken)
	}
	f.undo.add(func(c context.Context) error { return f.removeOwnSecret(c, secret.Name) })
	return made, err
}

// removeOwnSecret deletes the cloud-init Secret if it is the machine's and
// waits until it is gone.
func (f flow) removeOwnSecret(ctx context.Context, name string) error {
	s, err := f.m.OwnSecret(ctx, f.api, name)
	if err != nil || s == nil {
		return err
	}
	if err := f.api.DeleteSecret(ctx, f.m.Config.VMNamespace, name, s.UID); err != nil {
		return err
	}
	return removal.WaitRemoved(ctx, f.api, f.m, harvesterapi.Target{Kind: harvesterapi.KindSecret, Name: name, UID: s.UID})
}
