// Command harvester-netns runs a command in the end-to-end harness's
// private network namespace (test/harness): `make demo` runs its script
// with it. Inside, HARVESTER_E2E_NETNS is "isolated IFACE" (IFACE: the
// guest network's interface for harvester-sim --guest-interface); where no
// namespace can be made the command runs anyway with
// HARVESTER_E2E_NETNS="unavailable: WHY", and must skip every step that
// would reach a guest.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/harvester-kit/harvester-machine/test/harness"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: harvester-netns COMMAND [ARG...]")
		os.Exit(2)
	}
	harness.Enter()
	path, err := exec.LookPath(os.Args[1])
	if err == nil {
		err = syscall.Exec(path, os.Args[1:], os.Environ())
	}
	fmt.Fprintf(os.Stderr, "harvester-netns: run %s: %v\n", os.Args[1], err)
	os.Exit(1)
}
