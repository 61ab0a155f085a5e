package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/cloudcred"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/removal"
	"github.com/harvester-kit/harvester-machine/driver/staticaddr"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
	"github.com/harvester-kit/harvester-machine/internal/version"
)

// cleanupTimeout bounds the rollback of a failed create.
const cleanupTimeout = 5 * time.Minute

// errNameTaken: a create failed because an object of that name exists.
var errNameTaken = errors.New("the name is taken")

// Create creates the machine's cloud-init Secret and VM, both labelled with
// the machine's ID, makes the VM the Secret's owner (so the Secret goes
// with the VM), records the VM's UID and waits until the VM runs and has
// an address; the wait ends at once when the VM is deleted, its Secret goes
// too early, or it is halted for good (Harvester halts a VM whose launcher
// pod a quota refused: machine.WaitRunning). If any step fails, what this
// create made is removed again; an object of the same name made by anyone
// else is never touched.
func (d *Driver) Create() (err error) {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if d.MachineID == "" {
		return errors.New("create: the machine has no ID (its flags were never read); nothing was created")
	}
	var undo rollback
	defer func() { err = undo.run(d.MachineName, err) }()

	api.Seen().ForgetReads()
	plan, secret, vm, err := d.buildMachine(ctx, api)
	if err != nil {
		return err
	}
	in, err := d.inputs()
	if err != nil {
		return err
	}
	var goal machine.Goal = machine.RunningWithAddress
	static := staticaddr.PlanOf(in.Static, plan)
	managed := staticaddr.ManagedNIC(plan)
	var made *corev1.Secret
	if static == nil {
		made, err = d.createSecretThenVM(ctx, api, &undo, plan, secret, vm)
		if managed != nil {
			goal = staticaddr.RunningWithAddressOn(managed.Name)
		}
	} else {
		made, err = d.createWithStaticAddress(ctx, api, &undo, plan, secret, vm, static)
		goal = staticaddr.ReportsOn(static.NICName(), static.Held)
	}
	if err != nil {
		return err
	}
	// Without its cloud-init Secret the VM cannot start (KubeVirt mounts
	// the Secret into its launcher pod): the wait ends when it goes before
	// the pod runs.
	ctx, secretGuard, stopSecretWatch := d.machine().WhileSecretNeeded(ctx, api, made.Name, made.UID, made.ResourceVersion, machine.SecretWatchDelay)
	defer stopSecretWatch()
	goal = secretGuard(goal)
	what := "to run and report an address"
	if static != nil {
		what = "to run and report " + static.Held.String() + " on " + static.NICName()
	}
	vmi, err := d.machine().WaitRunning(ctx, api, d.createdRV, d.runsFrom, what, goal)
	if err != nil {
		return err
	}
	ip, _ := machine.SelectAddress(vmi.Status.Interfaces)
	switch {
	case static != nil:
		ip = static.Held.String()
		staticaddr.CheckWithDHCP(ctx, api, d.machine(), static)
	case managed != nil:
		ip = staticaddr.HoldManaged(ctx, api, d.machine(), managed.Name, managed.MAC, managed.DHCPPool, vmi)
	}
	d.IPAddress = ip
	log.Infof("%s: running, address %s", d.MachineName, ip)
	return nil
}

// createSecretThenVM makes the cloud-init Secret, then the VM, then makes
// the VM the Secret's owner, and returns the Secret as made.
func (d *Driver) createSecretThenVM(ctx context.Context, api *harvesterapi.API, undo *rollback, plan vmspec.VMPlan, secret *corev1.Secret, vm *kubevirtv1.VirtualMachine) (*corev1.Secret, error) {
	// A create whose answer was lost (a timeout while the API server was
	// frozen, a connection cut) may still have been applied: its undo is
	// registered unless the name was taken by another object.
	madeSecret, err := d.createSecret(ctx, api, secret)
	if !errors.Is(err, errNameTaken) {
		undo.add(func(c context.Context) error { return d.removeOwnSecret(c, api, secret.Name) })
	}
	if err != nil {
		return nil, err
	}
	created, err := d.createMachineVM(ctx, api, undo, plan, vm)
	if err != nil {
		return nil, err
	}
	err = api.SetSecretOwners(ctx, d.VMNamespace, secret.Name, madeSecret.UID, []metav1.OwnerReference{machine.VMOwnerReference(created)})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("VM %s/%s: %w", d.VMNamespace, created.Name, d.machine().SecretDeleted(secret.Name))
	}
	return madeSecret, err
}

// createWithStaticAddress makes a machine that holds a static address:
// before anything is created it checks that the range has a free address;
// it creates the VM halted, holds an address with a claim the VM owns,
// creates the cloud-init Secret (owned by the VM too) with the network
// data of that address, and only then starts the VM. It returns the Secret
// as made. A failure after the VM exists removes the VM, and garbage
// collection the rest.
func (d *Driver) createWithStaticAddress(ctx context.Context, api *harvesterapi.API, undo *rollback, plan vmspec.VMPlan, secret *corev1.Secret, vm *kubevirtv1.VirtualMachine, s *staticaddr.Plan) (*corev1.Secret, error) {
	free, err := staticaddr.FreeAddresses(ctx, api, d.machine(), s)
	if err != nil {
		return nil, err
	}
	halted := kubevirtv1.RunStrategyHalted
	vm.Spec.RunStrategy = &halted
	d.machine().SecretPending = true
	created, err := d.createMachineVM(ctx, api, undo, plan, vm)
	if err != nil {
		return nil, err
	}
	if err := staticaddr.ClaimAddress(ctx, api, d.machine(), s, free, created); err != nil {
		return nil, err
	}
	data, err := s.NetworkData(d.NetworkData)
	if err != nil {
		return nil, err
	}
	secret.Data["networkdata"] = data
	secret.OwnerReferences = []metav1.OwnerReference{machine.VMOwnerReference(created)}
	made, err := d.createSecret(ctx, api, secret)
	if !errors.Is(err, errNameTaken) {
		undo.add(func(c context.Context) error { return d.removeOwnSecret(c, api, secret.Name) })
	}
	if err != nil {
		return nil, err
	}
	d.machine().SecretPending = false
	started, err := api.StartVM(ctx, d.VMNamespace, created.Name, created.UID, plan.RunStrategy, s.Annotations())
	if err != nil {
		return nil, err
	}
	d.runsFrom = started.Generation
	return made, nil
}

// createMachineVM creates the VM, registers its removal as an undo step
// and records its UID.
func (d *Driver) createMachineVM(ctx context.Context, api *harvesterapi.API, undo *rollback, plan vmspec.VMPlan, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	log.Infof("%s: creating VM %s/%s (%d CPU, %d GiB, %d disk(s), %d NIC(s)) with %s", d.MachineName, d.VMNamespace, vm.Name, plan.CPU, plan.MemoryGiB, len(plan.Disks), len(plan.NICs), version.String(config.BinaryName))
	created, err := d.createVM(ctx, api, vm)
	if !errors.Is(err, errNameTaken) {
		undo.add(func(c context.Context) error { return removal.RemoveMachine(c, api, d.machine()) })
	}
	if err != nil {
		return nil, err
	}
	d.VMUID = string(created.UID)
	d.createdRV, d.runsFrom = created.ResourceVersion, created.Generation
	return created, nil
}

// rollback runs, newest first, the undo steps of a failed create.
type rollback []func(context.Context) error

func (r *rollback) add(f func(context.Context) error) { *r = append(*r, f) }

func (r rollback) run(machine string, err error) error {
	if err == nil || len(r) == 0 {
		return err
	}
	log.Warnf("%s: create failed, removing what it created", machine)
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var cerrs []error
	for i := len(r) - 1; i >= 0; i-- {
		if cerr := r[i](ctx); cerr != nil {
			cerrs = append(cerrs, cerr)
		}
	}
	if len(cerrs) > 0 {
		return fmt.Errorf("%w; cleanup after the failed create also failed: %w", err, errors.Join(cerrs...))
	}
	return err
}

// buildMachine resolves the images and builds the labelled Secret and VM.
func (d *Driver) buildMachine(ctx context.Context, api *harvesterapi.API) (vmspec.VMPlan, *corev1.Secret, *kubevirtv1.VirtualMachine, error) {
	in, err := d.inputs()
	if err != nil {
		return vmspec.VMPlan{}, nil, nil, err
	}
	refs, err := in.ImageRefs(d.VMNamespace)
	if err != nil {
		return vmspec.VMPlan{}, nil, nil, fmt.Errorf("plan VM: %w", err)
	}
	images := map[string]vmspec.ImageFacts{}
	for _, ref := range refs {
		img, err := api.GetImage(ctx, ref.Namespace, ref.Name)
		if err != nil {
			return vmspec.VMPlan{}, nil, nil, harvesterapi.NotFoundOr(err, fmt.Errorf("image %s does not exist; nothing was created", ref))
		}
		if ok, msg := harvesterapi.ConditionTrue(img.Status.Conditions, "Imported"); !ok {
			return vmspec.VMPlan{}, nil, nil, fmt.Errorf("image %s is not imported (condition Imported is not True%s); nothing was created", ref, harvesterapi.MessageSuffix(msg))
		}
		images[ref.String()] = vmspec.ImageFacts{StorageClassName: img.Status.StorageClassName, VirtualSizeBytes: img.Status.VirtualSize}
	}
	plan, err := vmspec.PlanFromConfig(d.Config, in, d.MachineName, images)
	if err != nil {
		return plan, nil, nil, fmt.Errorf("plan VM: %w", err)
	}
	plan = plan.OwnedBy(d.MachineID)
	// The networks may have gone since the pre-create check; KubeVirt would
	// only fail to start the VM.
	for i, nic := range plan.NICs {
		labels, err := api.GetNetwork(ctx, nic.Network.Namespace, nic.Network.Name)
		if err != nil {
			return plan, nil, nil, harvesterapi.NotFoundOr(err, fmt.Errorf("network %s does not exist; nothing was created", nic.Network))
		}
		if ns, name := dhcpapi.PoolOf(labels); name != "" {
			plan.NICs[i].DHCPPool = &config.ObjectRef{Namespace: ns, Name: name}
		}
	}
	keys, err := d.prepareSSHKeys(ctx, api, plan.KeyPair)
	if err != nil {
		return plan, nil, nil, err
	}
	files, err := cloudcred.Files(ctx, api, d.machine(), plan.NICs)
	if err != nil {
		return plan, nil, nil, err
	}
	userData, err := d.renderUserData(in, keys, files)
	if err != nil {
		return plan, nil, nil, fmt.Errorf("build cloud-init user data: %w", err)
	}
	if err := config.CheckSecretSize(len(userData), len(d.NetworkData), config.SecretParts(d.Config)); err != nil {
		return plan, nil, nil, err
	}
	vm, err := vmspec.BuildVM(plan)
	if err != nil {
		return plan, nil, nil, fmt.Errorf("build VM: %w", err)
	}
	return plan, vmspec.BuildUserDataSecret(plan, userData, []byte(d.NetworkData)), vm, nil
}

func (d *Driver) createSecret(ctx context.Context, api *harvesterapi.API, secret *corev1.Secret) (*corev1.Secret, error) {
	log.Infof("%s: creating cloud-init Secret %s/%s", d.MachineName, d.VMNamespace, secret.Name)
	made, err := api.CreateSecret(ctx, secret)
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Secret: a cloud-init Secret named %s already exists in namespace %s (left from an earlier machine of this name, or another's); choose another machine name or remove it; nothing was created: %w", secret.Name, d.VMNamespace, errNameTaken)
	}
	return made, err
}

func (d *Driver) createVM(ctx context.Context, api *harvesterapi.API, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	created, err := api.CreateVM(ctx, vm)
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create VM: a VM named %s already exists in namespace %s (another machine's, or left from an earlier one); choose another machine name or remove it: %w", vm.Name, d.VMNamespace, errNameTaken)
	}
	if err == nil {
		api.Seen().RememberVM(created)
	}
	return created, err
}

// removeOwnSecret deletes the cloud-init Secret if it is the machine's and
// waits until it is gone.
func (d *Driver) removeOwnSecret(ctx context.Context, api *harvesterapi.API, name string) error {
	s, err := d.machine().OwnSecret(ctx, api, name)
	if err != nil || s == nil {
		return err
	}
	if err := api.DeleteSecret(ctx, d.VMNamespace, name, s.UID); err != nil {
		return err
	}
	return removal.WaitRemoved(ctx, api, d.machine(), harvesterapi.Target{Kind: harvesterapi.KindSecret, Name: name, UID: s.UID})
}
