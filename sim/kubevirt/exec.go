package kubevirt

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/harvester-kit/harvester-machine/sim/podenv"
)

// ExecCommand is the hidden harvester-sim command the simulator starts a
// KubeVirt component with, in a mount namespace of its own (made at
// clone): it puts the component's ServiceAccount files where a Pod has
// them, then executes the component. virt-api and virt-controller take
// KubeVirt's install namespace only from that directory's namespace file
// (kubevirt.io/client-go/util.GetNamespace; without it, "kubevirt").
const ExecCommand = "kubevirt-exec"

// ExecArgs are ExecCommand and its arguments: SA-DIR -- ARGV...
func ExecArgs(saDir string, argv []string) []string {
	return append([]string{ExecCommand, saDir, "--"}, argv...)
}

// Exec is ExecCommand: args are what ExecArgs made, after the command.
// It returns only on failure.
func Exec(args []string) error {
	if len(args) < 3 || args[1] != "--" {
		return errors.New(ExecCommand + ": usage: SA-DIR -- ARGV")
	}
	saDir, argv := args[0], args[2:]
	if err := podenv.MakePrivate(); err != nil {
		return fmt.Errorf("%s: %w", ExecCommand, err)
	}
	if err := podenv.MountServiceAccount(saDir); err != nil {
		return fmt.Errorf("%s: %w", ExecCommand, err)
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	return fmt.Errorf("%s: execute %s: %w", ExecCommand, argv[0], err)
}
