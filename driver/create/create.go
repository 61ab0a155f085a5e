// Package create is the create flow of a machine: it checks once what the
// machine needs (check.go, at pre-create), builds the VM and its cloud-init
// Secret from what the check read (build.go, pure planning in vmspec),
// claims a static address (static.go), creates and waits, and undoes what
// it made when a step fails (undo.go). The driver's root adapts it to
// libmachine.
package create

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/staticaddr"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// Request is what a create needs besides the machine: its parsed flags,
// the SSH user and where the machine's private key is stored.
type Request struct {
	Inputs  config.Inputs
	SSHUser string
	KeyPath string
}

// made is what a create made: the cloud-init Secret, the VM, and the VM's
// generation in which the driver set it running.
type made struct {
	secret   *corev1.Secret
	vm       *kubevirtv1.VirtualMachine
	runsFrom int64
}

// Run creates the machine's cloud-init Secret and VM, both labelled with
// the machine's ID, makes the VM the Secret's owner (so the Secret goes
// with the VM), records the VM's UID in m and waits until the VM runs and
// has an address, which it returns; the wait ends at once when the VM is
// deleted, its Secret goes too early, or it is halted for good (Harvester
// halts a VM whose launcher pod a quota refused: machine.WaitRunning). If
// any step fails, what this create made is removed again; an object of
// the same name made by anyone else is never touched.
func Run(ctx context.Context, api *harvesterapi.API, m *machine.Machine, r Request) (addr string, err error) {
	if m.Ownership.MachineID == "" {
		return "", errors.New("create: the machine has no ID (its flags were never read); nothing was created")
	}
	var undo rollback
	defer func() { err = undo.run(ctx, m.Name, err) }()

	defer api.Seen().StopFollowing()
	b, err := build(ctx, api, m, r)
	if err != nil {
		return "", err
	}
	f := flow{api: api, m: m, undo: &undo}
	static := staticaddr.PlanOf(r.Inputs.Static, b.plan)
	var got made
	if static == nil {
		got, err = f.secretThenVM(ctx, b)
	} else {
		got, err = f.withStaticAddress(ctx, b, static)
	}
	if err != nil {
		return "", err
	}
	return f.waitAddress(ctx, b, r, got, static)
}

// waitAddress waits until the VM runs and reports its address (the held
// one on the static NIC, or one on the managed-DHCP NIC) and returns it.
func (f flow) waitAddress(ctx context.Context, b built, r Request, got made, static *staticaddr.Plan) (string, error) {
	m := f.m
	var goal machine.Goal = machine.RunningWithAddress
	what := "to run and report an address"
	managed := staticaddr.ManagedNIC(b.plan)
	switch {
	case static != nil:
		goal = staticaddr.ReportsOn(static.NICName(), static.Held)
		what = "to run and report " + static.Held.String() + " on " + static.NICName()
	case managed != nil:
		goal = staticaddr.RunningWithAddressOn(managed.Name)
	}
	// Without its cloud-init Secret the VM cannot start (KubeVirt mounts
	// the Secret into its launcher pod): the wait ends when it goes before
	// the pod runs.
	ctx, secretGuard, stopSecretWatch := m.WhileSecretNeeded(ctx, f.api, got.secret.Name, got.secret.UID, got.secret.ResourceVersion, machine.SecretWatchDelay)
	defer stopSecretWatch()
	ctx, inputsGuard, stopInputsGuard := whileInputsHold(ctx, f.api, func(c context.Context) error { return f.recheckInputs(c, b, r) })
	defer stopInputsGuard()
	vmi, err := m.WaitRunning(ctx, f.api, got.vm.ResourceVersion, got.runsFrom, what, inputsGuard(secretGuard(goal)))
	if err != nil {
		return "", err
	}
	ip, _ := machine.SelectAddress(vmi.Status.Interfaces)
	switch {
	case static != nil:
		ip = static.Held.String()
		staticaddr.CheckWithDHCP(ctx, f.api, m, static)
	case managed != nil:
		ip = staticaddr.HoldManaged(ctx, f.api, m, *managed, vmi)
	}
	log.Infof("%s: running, address %s", m.Name, ip)
	return ip, nil
}
