package driver

import (
	"errors"
	"fmt"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/staticaddr"
)

// Validate checks a Config and returns every problem found, joined. Each
// message names the flag and says what would be valid. It does no I/O.
func Validate(c config.Config, machineName, sshUser string, sshPort int) error {
	_, err := validate(c, machineName, sshUser, sshPort)
	return err
}

// validate is Validate that also returns the parsed JSON flags, and the
// user data merged with the driver's parts when it is valid: the flags'
// checks (config.Validate), with staticaddr's check that the user's network
// data takes the static NIC.
func validate(c config.Config, machineName, sshUser string, sshPort int) (config.Inputs, error) {
	in, errs := config.Validate(c, machineName, sshUser, sshPort, staticaddr.CheckNetworkData)
	return in, errors.Join(errs...)
}

// joinProblems joins non-nil errors under a heading, or returns nil.
func joinProblems(heading string, problems []error) error {
	var errs []error
	for _, p := range problems {
		if p == nil {
			continue
		}
		if j, ok := p.(interface{ Unwrap() []error }); ok {
			errs = append(errs, j.Unwrap()...)
			continue
		}
		errs = append(errs, p)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s (%d problems):\n%w", heading, len(errs), errors.Join(errs...))
}
