package driver

import (
	"errors"
	"fmt"
	"regexp"
)

// rancher-machine v0.15 reads an error of two driver calls by its text:
// `rm` takes any error of Remove whose lower-cased message contains "not
// found" as "the machine is already gone", deletes its record of the
// machine and reports success; `status` takes such an error of GetState as
// state NotFound (exit 4). So only GetState's machineGone may say it, and
// only once the machine is known to be gone on the machine's own cluster;
// every other error of those calls goes through keepMachine.

// goneVerdict is the phrase rancher-machine looks for (case-insensitive).
var goneVerdict = regexp.MustCompile(`(?i)not\s+found`)

// keptError is an error of Remove or GetState that must not read as "the
// machine is gone": its text has "not found" replaced by "missing"; Is
// and As see the error unchanged.
type keptError struct{ err error }

func (e *keptError) Error() string { return goneVerdict.ReplaceAllString(e.err.Error(), "missing") }

func (e *keptError) Unwrap() error { return e.err }

// keepMachine returns err (nil stays nil) so that rancher-machine cannot
// read it as "the machine is gone".
func keepMachine(err error) error {
	if err == nil {
		return nil
	}
	return &keptError{err: err}
}

// machineGone is GetState's error for a machine whose VM does not exist on
// the confirmed cluster: the one error that says "not found".
func (d *Driver) machineGone() error {
	return fmt.Errorf("VM %s/%s %w", d.VMNamespace, d.MachineName, errMachineGone)
}

// errMachineGone matches (errors.Is) machineGone's error.
var errMachineGone = errors.New("not found")
