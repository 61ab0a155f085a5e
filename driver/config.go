package driver

import (
	"github.com/rancher/machine/libmachine/drivers"
	"github.com/rancher/machine/libmachine/mcnflag"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/machine"
)

// SetConfigFromFlags reads and validates the flags; every problem is
// reported at once.
func (d *Driver) SetConfigFromFlags(opts drivers.DriverOptions) error {
	c, problems := config.Read(opts, d.BaseDriver)
	d.Config = c
	// On create the flags are the credential to use and to store.
	d.cmd = command{}
	if d.MachineID == "" {
		id, err := machine.NewMachineID()
		if err != nil {
			return err
		}
		d.MachineID = id
	}
	d.SetSwarmConfigFromFlags(opts)
	in, err := validate(c, d.MachineName, d.SSHUser, d.SSHPort)
	d.cmd.parsed = &in
	problems = append(problems, err)
	return joinProblems("invalid machine configuration", problems)
}

// inputs returns the machine's parsed JSON flags: those SetConfigFromFlags
// parsed, or, for a machine loaded from its stored config, parsed once on
// first use.
func (d *Driver) inputs() (config.Inputs, error) {
	if d.cmd.parsed == nil {
		in, err := config.ParseInputs(d.Config)
		if err != nil {
			return config.Inputs{}, err
		}
		d.cmd.parsed = &in
	}
	return *d.cmd.parsed, nil
}

// GetCreateFlags returns the flags of the driver, in their fixed order.
func (d *Driver) GetCreateFlags() []mcnflag.Flag {
	return config.CreateFlags()
}
