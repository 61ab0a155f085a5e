package driver

import (
	"context"
	"fmt"

	"github.com/harvester-kit/harvester-machine/driver/create"
)

// Create runs the create flow (create.Run) on the machine and stores what
// it learned: the VM's UID, the held address, the machine's address.
func (d *Driver) Create() error {
	ctx := context.Background()
	api, err := d.session(ctx)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	in, err := d.inputs()
	if err != nil {
		return err
	}
	m := d.newMachine()
	defer d.store(m)
	ip, err := create.Run(ctx, api, m, create.Request{Inputs: in, SSHUser: d.GetSSHUsername(), KeyPath: d.GetSSHKeyPath()})
	if err != nil {
		return err
	}
	d.IPAddress = ip
	return nil
}

// PreCreateCheck checks everything Create needs and reports every problem
// at once (create.Check); it records the cluster's identity in the
// machine's state. When Harvester cannot be reached at all, it stops at
// the first call with that one error.
func (d *Driver) PreCreateCheck() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	in, err := d.inputs()
	if err != nil {
		return joinProblems("pre-create check failed", []error{err})
	}
	m := d.newMachine()
	defer d.store(m)
	endFailFast := api.FailFast()
	checked := create.Check(context.Background(), api, m, in)
	d.cmd.confirmed = checked.ClusterConfirmed
	if err := endFailFast(); err != nil {
		return fmt.Errorf("pre-create check failed: %w", err)
	}
	return joinProblems("pre-create check failed", checked.Problems)
}
